//! Unit tests of `crate::report::layout`.

use super::*;

fn cells(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[test]
fn a_table_that_fits_is_one_block_aligned_as_shaped() {
    let t = table(
        &["name", "n"],
        &cells(&[&["a", "10"], &["bb", "2"]]),
        Shape { keys: 1, left: 1 },
        100,
    );
    assert_eq!(t, "name   n\na     10\nbb     2\n");
}

#[test]
fn a_wide_table_splits_into_blocks_that_repeat_the_keys() {
    let headers: Vec<String> = (0..12).map(|i| format!("column {i:02}")).collect();
    let row: Vec<String> = (0..12).map(|i| format!("{}", i * 1000)).collect();
    let t = table(&headers, &[row], Shape { keys: 1, left: 0 }, 60);
    assert!(t.lines().all(|l| l.chars().count() <= 60), "{t}");
    let blocks: Vec<&str> = t.split("\n\n").collect();
    assert!(blocks.len() >= 2, "{t}");
    for b in &blocks {
        assert!(
            b.starts_with("column 00"),
            "every block starts with the key: {b}"
        );
    }
    for h in &headers[1..] {
        assert_eq!(t.matches(h.as_str()).count(), 1, "{h} once: {t}");
    }
}

#[test]
fn long_lines_wrap_under_their_label_and_short_ones_stay() {
    let long = format!("timing:    {}", "word; ".repeat(30));
    let w = wrap(&format!("short\n{long}"), 50);
    let lines: Vec<&str> = w.lines().collect();
    assert_eq!(lines[0], "short");
    assert!(lines.iter().all(|l| l.chars().count() <= 50), "{w}");
    assert!(
        lines[2..].iter().all(|l| l.starts_with("           word")),
        "{w}"
    );
    assert_eq!(
        w.split_whitespace().count(),
        1 + 1 + 30,
        "no word lost: {w}"
    );
}

#[test]
fn a_word_longer_than_the_width_is_left_whole() {
    let w = wrap(&"x".repeat(120), 100);
    assert_eq!(w, "x".repeat(120));
}

#[test]
fn a_number_keeps_its_unit_on_its_line() {
    // Without the rule the cut falls between "1.2" and "%" (the last space that fits).
    let line = format!("verdict: {} spread A 1.2 %, B 2.6 %", "w".repeat(30));
    let w = wrap(&line, 52);
    assert!(w.lines().all(|l| !l.trim_start().starts_with('%')), "{w}");
    assert!(w.contains("1.2 %"), "{w}");
    assert!(w.lines().all(|l| l.chars().count() <= 52), "{w}");
}

#[test]
fn units_are_glued_to_their_numbers_for_html_cells() {
    assert_eq!(
        glue_units("0.154 s, 98.4 MB, 3 jobs, 12 %"),
        "0.154\u{a0}s, 98.4\u{a0}MB, 3 jobs, 12\u{a0}%"
    );
}
