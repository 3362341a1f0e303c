//! Text layout for every screen: the one aligned-table writer (the sheet, cold starts, session
//! steps), split into stacked blocks when its columns would pass the width, and the line wrapper
//! that keeps every other line inside it with a hanging indent. Width is [`WIDTH`] columns.

/// The widest line any text output has.
pub(crate) const WIDTH: usize = 100;

/// How a table's columns sit: the first `keys` name the row and are repeated at the start of
/// every block; the first `left` are left-aligned, the rest right-aligned (numbers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub keys: usize,
    pub left: usize,
}

/// Columns two spaces apart, aligned as `shape` says; when the whole row would be wider than
/// `width`, the columns after the keys are packed in order into as few blocks as fit, each block
/// starting with the keys, one blank line between blocks.
pub(crate) fn table<H: AsRef<str>>(
    headers: &[H],
    rows: &[Vec<String>],
    shape: Shape,
    width: usize,
) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.as_ref().chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let keys = shape.keys.min(headers.len());
    let align = |i: usize, c: String| match i < shape.left {
        true => format!("{c:<w$}", w = widths[i]),
        false => format!("{c:>w$}", w = widths[i]),
    };
    let key_width: usize = widths[..keys].iter().map(|w| w + 2).sum();
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut used = key_width;
    for (i, w) in widths.iter().enumerate().skip(keys) {
        let w = w + 2;
        match blocks.last_mut() {
            Some(b) if used + w <= width + 2 => b.push(i),
            _ => {
                blocks.push(vec![i]);
                used = key_width;
            }
        }
        used += w;
    }
    if blocks.is_empty() {
        blocks.push(Vec::new());
    }
    let line = |cells: &dyn Fn(usize) -> String, cols: &[usize]| {
        let parts: Vec<String> = (0..keys)
            .chain(cols.iter().copied())
            .map(|i| align(i, cells(i)))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = String::new();
    for (n, cols) in blocks.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out += &line(&|i| headers[i].as_ref().to_string(), cols);
        for r in rows {
            out += &line(&|i| r.get(i).cloned().unwrap_or_default(), cols);
        }
    }
    out
}

/// A Markdown table: one header row, one row per entry; `|` in a cell is escaped and a line
/// break becomes a space.
pub(crate) fn markdown<H: AsRef<str>>(headers: &[H], rows: &[Vec<String>]) -> String {
    let cell = |c: &str| c.replace('|', "\\|").replace('\n', " ");
    let head: Vec<String> = headers.iter().map(|h| cell(h.as_ref())).collect();
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// Every line of `text` wider than `width` broken at spaces (after a `; ` when one is near the
/// end), continuation lines indented to the line's hanging indent: where its text starts after
/// a label (`timing:    first request …` continues under `first`).
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        wrap_line(line, width, &mut out);
    }
    out
}

fn wrap_line(line: &str, width: usize, out: &mut String) {
    if line.chars().count() <= width {
        out.push_str(line);
        return;
    }
    let indent = hanging_indent(line).min(width / 2);
    let mut rest: Vec<char> = line.chars().collect();
    let mut first = true;
    loop {
        let room = if first { width } else { width - indent };
        if rest.len() <= room {
            out.extend(rest.iter());
            return;
        }
        let Some(cut) = break_at(&rest, room) else {
            out.extend(rest.iter());
            return;
        };
        out.extend(rest[..cut].iter());
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
        out.push_str(&" ".repeat(indent));
        let skip = rest[cut..].iter().take_while(|c| **c == ' ').count();
        rest.drain(..cut + skip);
        first = false;
    }
}

/// Units a number keeps on its line (`1.2 %` is never split into `1.2` and `%`).
const UNITS: [&str; 9] = ["%", "s", "ms", "B", "kB", "MB", "GB", "tok/s", "x"];

/// Whether the space at `i` sits between a number and its unit.
fn glued(line: &[char], i: usize) -> bool {
    if i == 0 || !line[i - 1].is_ascii_digit() {
        return false;
    }
    let word: String = line[i + 1..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ';' | ')' | ']'))
        .collect();
    UNITS.contains(&word.as_str())
}

/// `text` with every space between a number and its unit made non-breaking (for HTML cells,
/// which the browser wraps).
pub(crate) fn glue_units(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    (0..chars.len())
        .map(|i| match chars[i] == ' ' && glued(&chars, i) {
            true => '\u{a0}',
            false => chars[i],
        })
        .collect()
}

/// Where to cut `line` so the part before fits `room`: after the last `; ` in the second half of
/// the room, else at the last space that does not part a number from its unit (never inside the
/// leading indent).
fn break_at(line: &[char], room: usize) -> Option<usize> {
    let lead = line.iter().take_while(|c| **c == ' ').count();
    let window = &line[..=room.min(line.len() - 1)];
    let semicolon = (room / 2..window.len().saturating_sub(1))
        .rev()
        .find(|&i| window[i] == ';' && window[i + 1] == ' ');
    if let Some(i) = semicolon {
        return Some(i + 2);
    }
    (lead + 1..window.len())
        .rev()
        .find(|&i| window[i] == ' ' && !glued(line, i))
        .filter(|&i| line[lead..i].iter().any(|c| *c != ' '))
}

/// The column the line's text starts at after its label: after a `label: ` within 16 columns of
/// the leading spaces (and the spaces after it), else after the first run of two or more spaces,
/// else the leading spaces plus 4.
fn hanging_indent(line: &str) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    let spaces_from = |i: usize| i + chars[i..].iter().take_while(|c| **c == ' ').count();
    let label = (lead..chars.len().saturating_sub(1).min(lead + 16))
        .find(|&i| chars[i] == ':' && chars[i + 1] == ' ');
    if let Some(i) = label {
        return spaces_from(i + 1);
    }
    (lead..chars.len().saturating_sub(1))
        .find(|&i| chars[i] == ' ' && chars[i + 1] == ' ')
        .map_or(lead + 4, spaces_from)
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
