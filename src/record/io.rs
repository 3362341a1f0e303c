//! Reading and writing results files. A run in progress is saved after every round in its own
//! file beside the record ([`inflight`], atomic: temp file, fsync, rename) and appended to the
//! record in one write when it ends ([`lines`]), both under an exclusive lock on `.NAME.lock`,
//! so processes writing one record keep each other's runs, a reader never sees a torn run, and
//! saving costs the bytes of the run, not of the record. The reader takes either layout (one
//! JSON document before schema 6), checks the schema version before the layout and says what
//! is wrong with a file that is not a record, is truncated, or comes from a newer tokfire. The
//! plain-text log beside the record (`NAME.txt`) gets one summary per finished run.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::kind::{KindTag, RunKind};
use super::{inflight, lines, summary, ResultsFile, RunRecord, RunStatus, FORMAT};

/// A results file that cannot be used, naming the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: no such results file; pass the .json a `run` or `sweep` wrote (default results/VERB-WORKLOAD.json)")]
    NotFound { path: PathBuf },
    #[error("cannot read {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot write {path}: {error}; pass a writable --out (or --out-dir)")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not a tokfire results file ({detail}); pass a .json written by `tokfire run` or `sweep`")]
    NotRecord { path: PathBuf, detail: String },
    #[error("{path} is truncated or damaged ({detail}); the file was cut short while being copied or edited")]
    Truncated { path: PathBuf, detail: String },
    #[error("{path} was written by a newer tokfire (schema {found}; this build reads up to {supported}); upgrade tokfire to read it")]
    Newer {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error("{path}: no run with id '{id}'; runs in the file: {known}")]
    UnknownRun {
        path: PathBuf,
        id: String,
        known: String,
    },
    #[error("{path}: the file holds no runs yet")]
    Empty { path: PathBuf },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |error| RecordError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |error| RecordError::Write {
        path: path.to_path_buf(),
        error,
    }
}

/// Loads a results file (any schema up to [`FORMAT`]) with the runs still in progress beside it
/// ([`inflight`]).
pub fn read(path: &Path) -> Result<ResultsFile, RecordError> {
    let mut file = parse_layout(path, &read_main(path)?)?;
    let running = inflight::read_all(&through_links(path))
        .map_err(|(path, detail)| RecordError::NotRecord { path, detail })?;
    for run in running {
        if !file.runs.iter().any(|r| r.id == run.id) {
            file.runs.push(run);
        }
    }
    finish(path, file)
}

/// The text of the results file itself.
fn read_main(path: &Path) -> Result<String, RecordError> {
    match crate::files::read_text(path, crate::files::MAX_RECORD_BYTES) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(RecordError::NotFound {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Parses the text of a results file read from `path` (either layout).
pub(crate) fn parse(path: &Path, text: &str) -> Result<ResultsFile, RecordError> {
    finish(path, parse_layout(path, text)?)
}

/// The runs of `text`: the lines layout ([`lines`]) when its first line is that layout's
/// header, else one JSON document (every file before schema 6).
fn parse_layout(path: &Path, text: &str) -> Result<ResultsFile, RecordError> {
    let not = |detail: String| RecordError::NotRecord {
        path: path.to_path_buf(),
        detail,
    };
    if text.trim().is_empty() {
        return Err(not("the file is empty".into()));
    }
    let (first, body) = text.split_once('\n').unwrap_or((text, ""));
    if let Some(h) = lines::header(first) {
        let version = newer(path, h.tokfire_results)?;
        let parsed = lines::parse(body, 2).map_err(|e| not(format!("schema {version}: {e}")))?;
        if let Some(n) = parsed.torn_tail {
            eprintln!(
                "note: {}: its last line ({n} bytes) was cut short while being written (the \
                 process appending a run was killed); that line is skipped",
                path.display()
            );
        }
        return Ok(ResultsFile {
            tokfire_results: version,
            runs: parsed.runs,
        });
    }
    // The version first, skipping the rest, then the runs straight into their types: no tree
    // of the whole file in between (a 500 MB record would need 4 GB).
    if !text.trim_start().starts_with('{') {
        return Err(not("not a JSON object".into()));
    }
    #[derive(serde::Deserialize)]
    struct Version {
        tokfire_results: Option<serde_json::Value>,
    }
    let head: Version = serde_json::from_str(text).map_err(|e| match e.classify() {
        serde_json::error::Category::Eof => RecordError::Truncated {
            path: path.to_path_buf(),
            detail: e.to_string(),
        },
        serde_json::error::Category::Data => not("not an object with a schema version".into()),
        _ => not(format!("not JSON: {e}")),
    })?;
    let version = head
        .tokfire_results
        .as_ref()
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| not("no \"tokfire_results\" schema version".into()))?;
    newer(path, version)?;
    serde_json::from_str(text).map_err(|e| not(format!("schema {version}: {e}")))
}

/// `version` as this build's, or the error for a file from a newer tokfire.
fn newer(path: &Path, version: u64) -> Result<u32, RecordError> {
    match u32::try_from(version) {
        Ok(v) if v <= FORMAT => Ok(v),
        _ => Err(RecordError::Newer {
            path: path.to_path_buf(),
            found: version,
            supported: FORMAT,
        }),
    }
}

/// The checks every read file passes, and each nested baseline marked as one.
fn finish(path: &Path, mut file: ResultsFile) -> Result<ResultsFile, RecordError> {
    let not = |detail: String| RecordError::NotRecord {
        path: path.to_path_buf(),
        detail,
    };
    check_stored(&file).map_err(not)?;
    for run in &mut file.runs {
        // A nested baseline is one by its place (records before schema 3 did not say so).
        if let Some(b) = run.baseline.as_mut() {
            match b.kind.tag() {
                KindTag::Run | KindTag::Baseline => b.kind = RunKind::Baseline,
                other => {
                    return Err(not(format!(
                        "run {}: its baseline is of kind \"{}\"; a baseline is a run of the \
                         same levels with --spec none",
                        run.id,
                        other.as_str()
                    )))
                }
            }
        }
    }
    Ok(file)
}

/// The stored values a presenter trusts, checked: unique run ids, the workload's targets (a
/// negative target would make every level "comfortable"), the raw samples' counts and times
/// ([`super::stored`]), the headroom.
fn check_stored(file: &ResultsFile) -> Result<(), String> {
    let mut ids = std::collections::HashSet::new();
    for run in &file.runs {
        if !ids.insert(run.id.as_str()) {
            return Err(format!(
                "run id {} appears twice; the record was edited or damaged",
                run.id
            ));
        }
        let name = format!("run {}", run.id);
        crate::workload::load::check_criteria(&run.workload.criteria, &name)
            .map_err(|e| e.to_string())?;
        super::stored::check(run)?;
        super::stored::check_magnitudes(run)?;
        if !(0.0..1.0).contains(&run.config.headroom) {
            return Err(format!(
                "run {}: headroom {} is not a fraction below 1; the record was edited or damaged",
                run.id, run.config.headroom
            ));
        }
    }
    Ok(())
}

/// Picks runs of a file: by id, the last one, or all.
pub(crate) fn select<'a>(
    path: &Path,
    file: &'a ResultsFile,
    id: Option<&str>,
    all: bool,
) -> Result<Vec<&'a RunRecord>, RecordError> {
    if file.runs.is_empty() {
        return Err(RecordError::Empty {
            path: path.to_path_buf(),
        });
    }
    match (id, all) {
        (_, true) => Ok(file.runs.iter().collect()),
        (Some(id), false) => file
            .runs
            .iter()
            .find(|r| r.id == id)
            .map(|r| vec![r])
            .ok_or_else(|| RecordError::UnknownRun {
                path: path.to_path_buf(),
                id: id.to_string(),
                known: file
                    .runs
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        (None, false) => Ok(file.runs.last().into_iter().collect()),
    }
}

/// Writes `bytes` to `path` atomically: a temp file beside it, flushed and synced, then
/// renamed; on any failure (a full disk) the temp file is removed.
pub(super) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = parent(path);
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", file_name(path), std::process::id()));
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// The file `path` names after following symbolic links (a dangling link names its target), so
/// a record kept through a link is rewritten where it lives and the link stays a link.
fn through_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    // A bound on hops, as the kernel's (40), so a loop of links ends.
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(target) => p = parent(&p).join(target),
            Err(_) => return p,
        }
    }
    p
}

pub(super) fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or("results".into(), |n| n.to_string_lossy().to_string())
}

/// An exclusive lock on `.NAME.lock` beside `path`, held until dropped.
fn lock(path: &Path) -> Result<File, RecordError> {
    let dir = parent(path);
    std::fs::create_dir_all(&dir).map_err(write_err(path))?;
    let lock_path = dir.join(format!(".{}.lock", file_name(path)));
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(write_err(&lock_path))?;
    f.lock().map_err(write_err(&lock_path))?;
    Ok(f)
}

/// Makes `path` a file of this build's layout: created with its header when absent, left alone
/// when it is one, and an older file (one JSON document, or an older schema) rewritten once in
/// this layout with every run it holds.
fn prepare(path: &Path) -> Result<(), RecordError> {
    let head = match crate::files::read_head(path, 4096) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return replace(path, lines::header_line().as_bytes()).map_err(write_err(path))
        }
        other => other.map_err(io_err(path))?,
    };
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let header = std::str::from_utf8(first).ok().and_then(lines::header);
    if let Some(h) = header {
        if newer(path, h.tokfire_results)? == FORMAT {
            return Ok(());
        }
    }
    let mut file = parse(path, &read_main(path)?)?;
    file.tokfire_results = FORMAT;
    replace(path, &lines::render(&file)).map_err(write_err(path))
}

/// Keeps a run in its results file: while it runs, in its own file beside the record
/// ([`inflight`]), replaced after every round; when it ends, appended to the record
/// ([`lines`]). Each save derives the run's summary anew.
pub(crate) struct RecordWriter {
    path: PathBuf,
}

impl RecordWriter {
    /// Checks now that `path` is a results file (or absent) and its directory writable, so a bad
    /// `--out` fails before any work; an older file is rewritten in this build's layout.
    pub(crate) fn open(path: &Path) -> Result<Self, RecordError> {
        let path = through_links(path);
        let _lock = lock(&path)?;
        prepare(&path)?;
        Ok(Self { path })
    }

    /// A writer for `path` that checks nothing (for the text log of a run already recorded).
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            path: through_links(path),
        }
    }

    /// Saves `run` (its summary recomputed from its samples). When the save fails (a full disk)
    /// the copy saved last is marked failed with the reason, and the error returned.
    pub(crate) fn save(&self, run: &RunRecord) -> Result<(), RecordError> {
        let mut run = run.clone();
        run.summary = Some(summary::summarize_run(&run));
        let _lock = lock(&self.path)?;
        let saved = if run.status == RunStatus::Running {
            inflight::write(&self.path, &run)
        } else {
            match lines::append(&self.path, &lines::run_line(&run)) {
                Ok(()) => {
                    inflight::remove(&self.path, &run.id);
                    Ok(())
                }
                // Kept whole beside the record, where readers find it; still an error.
                Err(e) if inflight::write(&self.path, &run).is_ok() => {
                    return Err(write_err(&self.path)(e))
                }
                Err(e) => Err(e),
            }
        };
        saved.map_err(|e| {
            let reason = format!(
                "cannot write {}: {e}; the rounds saved before are kept",
                self.path.display()
            );
            let _ = inflight::mark_failed(&self.path, &run.id, &reason);
            write_err(&self.path)(e)
        })
    }

    /// Appends `text` to the plain-text log beside the record (`NAME.txt`).
    pub(crate) fn append_log(&self, text: &str) -> Result<PathBuf, RecordError> {
        let log = self.path.with_extension("txt");
        let _lock = lock(&self.path)?;
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(write_err(&log))?;
        f.write_all(text.as_bytes()).map_err(write_err(&log))?;
        Ok(log)
    }
}

#[cfg(test)]
#[path = "io_tests.rs"]
mod tests;
