//! A run still going lives beside its record in `.NAME.ID.running` (that one run, pretty JSON),
//! replaced atomically after every round, so saving a round costs the bytes of its run, not of
//! the whole record. When the run ends it is appended to the record ([`super::lines`]) and this
//! file removed. Readers of the record add these runs after the record's own (a run in the
//! record wins over a leftover file of the same id: a writer killed between appending and
//! removing), so a run in progress, or one whose process was killed, shows as `running` with the
//! rounds it finished.
//!
//! When even a round's save fails (a full disk, a file size limit), [`mark_failed`] rewrites the
//! last saved copy in place, compact and so shorter than the pretty copy it replaces: the run
//! then says `failed` and why, with every round saved before, using no new disk blocks.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{RunRecord, RunStatus};

const SUFFIX: &str = ".running";

fn prefix(record: &Path) -> String {
    format!(".{}.", super::io::file_name(record))
}

/// `.NAME.ID.running` beside `record` (the id's characters other than letters, digits, `-`
/// and `_` written as `_`).
pub(super) fn path(record: &Path, id: &str) -> PathBuf {
    let id: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    super::io::parent(record).join(format!("{}{id}{SUFFIX}", prefix(record)))
}

/// Saves `run` in its file beside `record`, atomically.
pub(super) fn write(record: &Path, run: &RunRecord) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(run).expect("records serialize; this is a bug");
    super::io::replace(&path(record, &run.id), &json)
}

/// Removes the file of run `id` (absent is fine).
pub(super) fn remove(record: &Path, id: &str) {
    let _ = std::fs::remove_file(path(record, id));
}

/// The runs in progress beside `record`, in the order of their files' names (a run id starts
/// with its start time).
pub(super) fn read_all(record: &Path) -> Result<Vec<RunRecord>, (PathBuf, String)> {
    let dir = super::io::parent(record);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let prefix = prefix(record);
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(&prefix) && n.ends_with(SUFFIX) && n.len() > prefix.len())
        .map(|n| dir.join(n))
        .collect();
    paths.sort();
    let mut runs = Vec::with_capacity(paths.len());
    for p in paths {
        let text = match crate::files::read_text(&p, crate::files::MAX_RECORD_BYTES) {
            Ok(t) => t,
            // Ended and removed between listing and reading: it is in the record now.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err((p, e.to_string())),
        };
        match serde_json::from_str::<RunRecord>(&text) {
            Ok(run) => runs.push(run),
            Err(e) => return Err((p, format!("not a run in progress: {e}"))),
        }
    }
    Ok(runs)
}

/// Marks the last saved copy of run `id` failed with `reason`, rewriting its file in place (no
/// new blocks needed, so this works on a full disk). False when there is no copy or the failed
/// one would not be shorter.
pub(super) fn mark_failed(record: &Path, id: &str, reason: &str) -> std::io::Result<bool> {
    let p = path(record, id);
    let mut f = match OpenOptions::new().read(true).write(true).open(&p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    (&mut f)
        .take(crate::files::MAX_RECORD_BYTES)
        .read_to_string(&mut text)?;
    let Ok(mut run) = serde_json::from_str::<RunRecord>(&text) else {
        return Ok(false);
    };
    run.status = RunStatus::Failed {
        error: reason.to_string(),
    };
    let json = serde_json::to_vec(&run).expect("records serialize; this is a bug");
    if json.len() > text.len() {
        return Ok(false);
    }
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&json)?;
    f.set_len(json.len() as u64)?;
    f.sync_data()?;
    Ok(true)
}

#[cfg(test)]
#[path = "inflight_tests.rs"]
mod tests;
