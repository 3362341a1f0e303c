//! The append-friendly layout of a results file (schema 6 on): a header line
//! `{"tokfire_results":6,"layout":"lines"}` and then one finished run per line, compact JSON
//! (JSON Lines; `jq -s` reads it whole). A run is appended once, when it ends, in one write
//! under the record's lock, so adding a run costs the bytes of that run whatever the file
//! holds; a later line with the same run id replaces the earlier one where it stood. A last line
//! without its newline is a write cut short (a process killed while appending): readers skip it
//! and say so, and the next writer cuts it off before appending.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{ResultsFile, RunRecord, FORMAT};

/// The `layout` value of the header line.
pub(super) const LAYOUT: &str = "lines";

/// The first line of a file in this layout.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Header {
    pub tokfire_results: u64,
    pub layout: String,
}

/// The header line (with its newline) of a file this build writes.
pub(super) fn header_line() -> String {
    let h = Header {
        tokfire_results: u64::from(FORMAT),
        layout: LAYOUT.into(),
    };
    format!(
        "{}\n",
        serde_json::to_string(&h).expect("a header serializes")
    )
}

/// The header, when `first_line` is one (an older file's first line is not).
pub(super) fn header(first_line: &str) -> Option<Header> {
    serde_json::from_str::<Header>(first_line.trim())
        .ok()
        .filter(|h| h.layout == LAYOUT)
}

/// A run as one line (with its newline).
pub(super) fn run_line(run: &RunRecord) -> Vec<u8> {
    let mut line = serde_json::to_vec(run).expect("records serialize; this is a bug");
    line.push(b'\n');
    line
}

/// The whole file in this layout: the header, then each run on its line.
pub(super) fn render(file: &ResultsFile) -> Vec<u8> {
    let mut out = header_line().into_bytes();
    for run in &file.runs {
        out.extend(run_line(run));
    }
    out
}

/// What reading the lines after the header found.
pub(super) struct Parsed {
    pub runs: Vec<RunRecord>,
    /// Bytes of a last line cut short, skipped.
    pub torn_tail: Option<usize>,
}

/// The runs of `body` (the text after the header line; `first_line_no` is the header's line
/// number plus one), later lines replacing earlier ones of the same id in place. A line that is
/// not a run is an error naming its number; a last line without its newline that does not
/// parse is reported as cut short instead.
pub(super) fn parse(body: &str, first_line_no: usize) -> Result<Parsed, String> {
    let mut runs: Vec<RunRecord> = Vec::new();
    let mut torn_tail = None;
    let mut at = 0;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        at += line.len();
        let complete = line.ends_with('\n');
        if line.trim().is_empty() {
            continue;
        }
        let run: RunRecord = match serde_json::from_str(line) {
            Ok(run) => run,
            Err(_) if !complete && at == body.len() => {
                torn_tail = Some(line.len());
                continue;
            }
            Err(e) => return Err(format!("line {}: {e}", first_line_no + i)),
        };
        match runs.iter_mut().find(|r| r.id == run.id) {
            Some(slot) => *slot = run,
            None => runs.push(run),
        }
    }
    Ok(Parsed { runs, torn_tail })
}

/// Appends `line` to the file at `path`, after cutting off a last line a
/// killed writer left without its newline; the caller holds the record's lock. On failure (a
/// full disk) the file is cut back to what it held, so no partial line stays.
pub(super) fn append(path: &Path, line: &[u8]) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let len = clean_end(&mut f)?;
    let written = f
        .seek(SeekFrom::Start(len))
        .and_then(|_| match len {
            // Nothing left of the file (it was emptied meanwhile): the header first.
            0 => f.write_all(header_line().as_bytes()),
            _ => Ok(()),
        })
        .and_then(|()| f.write_all(line))
        .and_then(|()| f.sync_data());
    if let Err(e) = written {
        let _ = f.set_len(len);
        return Err(e);
    }
    Ok(())
}

/// The length of `f` once a last line without its newline is cut off.
fn clean_end(f: &mut File) -> std::io::Result<u64> {
    let len = f.metadata()?.len();
    let mut end = len;
    let mut buf = [0u8; 4096];
    while end > 0 {
        let from = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(chunk)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(len);
        }
        if let Some(nl) = chunk.iter().rposition(|&b| b == b'\n') {
            end = from + nl as u64 + 1;
            break;
        }
        end = from;
    }
    if end < len {
        f.set_len(end)?;
    }
    Ok(end)
}

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;
