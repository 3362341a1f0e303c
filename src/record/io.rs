//! Reading and writing results files. A writer rewrites the whole file atomically (temp file,
//! fsync, rename) under an exclusive lock on a sidecar `.NAME.lock` file, rereading it first, so
//! two processes appending to one file keep each other's runs and a reader never sees a torn
//! file. The reader checks the schema version before the layout and says what is wrong with a
//! file that is not a record, is truncated, or comes from a newer tokfire. The plain-text log
//! beside the record (`NAME.txt`) gets one summary per finished run.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::kind::{KindTag, RunKind};
use super::{summary, ResultsFile, RunRecord, FORMAT};

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

/// Loads a results file (any schema up to [`FORMAT`]).
pub(crate) fn read(path: &Path) -> Result<ResultsFile, RecordError> {
    let text = match crate::files::read_text(path, crate::files::MAX_RECORD_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RecordError::NotFound {
                path: path.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err(path)(e)),
    };
    parse(path, &text)
}

/// Parses the text of a results file read from `path`.
pub(crate) fn parse(path: &Path, text: &str) -> Result<ResultsFile, RecordError> {
    let not = |detail: String| RecordError::NotRecord {
        path: path.to_path_buf(),
        detail,
    };
    if text.trim().is_empty() {
        return Err(not("the file is empty".into()));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            RecordError::Truncated {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }
        } else {
            not(format!("not JSON: {e}"))
        }
    })?;
    let version = value
        .get("tokfire_results")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| not("no \"tokfire_results\" schema version".into()))?;
    if version > u64::from(FORMAT) {
        return Err(RecordError::Newer {
            path: path.to_path_buf(),
            found: version,
            supported: FORMAT,
        });
    }
    let mut file: ResultsFile =
        serde_json::from_value(value).map_err(|e| not(format!("schema {version}: {e}")))?;
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

/// Writes `file` to `path` atomically: a temp file beside it, flushed and synced, then renamed.
fn write_atomic(path: &Path, file: &ResultsFile) -> Result<(), RecordError> {
    let dir = parent(path);
    std::fs::create_dir_all(&dir).map_err(write_err(path))?;
    let tmp = dir.join(format!(".{}.{}.tmp", file_name(path), std::process::id()));
    let json = serde_json::to_vec_pretty(file).expect("records serialize; this is a bug");
    let written = File::create(&tmp).and_then(|mut f| {
        f.write_all(&json)?;
        f.sync_all()
    });
    if let Err(e) = written {
        // A full disk leaves no partial temp file behind.
        let _ = std::fs::remove_file(&tmp);
        return Err(write_err(path)(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_err(path)(e)
    })
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

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn file_name(path: &Path) -> String {
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

/// Reads `path` for rewriting: a missing file is an empty one.
fn read_or_empty(path: &Path) -> Result<ResultsFile, RecordError> {
    match read(path) {
        Err(RecordError::NotFound { .. }) => Ok(ResultsFile {
            tokfire_results: FORMAT,
            runs: Vec::new(),
        }),
        other => other,
    }
}

/// Keeps a run in its results file: the file's other runs are kept, this run's entry (by id)
/// is replaced or appended with its summary derived anew, and the whole file is rewritten.
pub(crate) struct RecordWriter {
    path: PathBuf,
}

impl RecordWriter {
    /// Checks now that `path` is a results file (or absent) and its directory writable, so a bad
    /// `--out` fails before any work.
    pub(crate) fn open(path: &Path) -> Result<Self, RecordError> {
        let path = &through_links(path);
        let _lock = lock(path)?;
        let existing = read_or_empty(path)?;
        write_atomic(path, &existing)?;
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    /// A writer for `path` that checks nothing (for the text log of a run already recorded).
    pub(crate) fn at(path: &Path) -> Self {
        Self {
            path: through_links(path),
        }
    }

    /// Saves `run` (its summary recomputed from its samples); rereads the file under the lock so
    /// runs appended meanwhile by other processes are kept.
    pub(crate) fn save(&self, run: &RunRecord) -> Result<(), RecordError> {
        let mut run = run.clone();
        run.summary = Some(summary::summarize_run(&run));
        let _lock = lock(&self.path)?;
        let mut file = read_or_empty(&self.path)?;
        file.tokfire_results = FORMAT;
        match file.runs.iter_mut().find(|r| r.id == run.id) {
            Some(slot) => *slot = run,
            None => file.runs.push(run),
        }
        write_atomic(&self.path, &file)
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
