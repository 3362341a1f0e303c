//! Errors of the workload layer: finding, parsing, validating and version-checking a workload
//! file. Each message names the file (and the key where there is one) and says what to do.

use std::path::PathBuf;

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Neither a builtin name nor an existing file.
    #[error("unknown workload '{name}': not a builtin name nor an existing .toml file; builtins: {known}")]
    Unknown { name: String, known: String },
    /// The file could not be read.
    /// The OS error is part of the message, not a separate source, so it is said once.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The file is not valid TOML or does not fit the schema; the message carries line and key.
    #[error("{source_name}: {message}")]
    Parse {
        source_name: String,
        message: String,
    },
    /// The file parsed but a value is out of range or inconsistent.
    #[error("{source_name}: {key}: {reason}")]
    Invalid {
        source_name: String,
        key: String,
        reason: String,
    },
    /// The content changed while the name and version stayed the same.
    #[error("{0}")]
    HashMismatch(Box<LockMismatch>),
    /// The lock file itself is malformed.
    #[error(
        "{source_name}: line {line}: {reason}; each line is `NAME VERSION SHA256` (or a # comment)"
    )]
    Lock {
        source_name: String,
        line: usize,
        reason: String,
    },
}

/// A workload whose name and version are locked with another content hash.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: workload '{name}' version {version} is recorded in workloads.lock with hash {locked}, but its content now hashes to {actual}: a task or criterion changed without a version bump, so results would no longer be comparable; bump `version` in the file and add this line to workloads/workloads.lock (keep the old lines):\n{name} {next_version} {next_hash}")]
pub struct LockMismatch {
    /// The file (or `builtin:NAME`).
    pub source_name: String,
    /// The workload's name.
    pub name: String,
    /// The version in the file (already in the lock).
    pub version: u32,
    /// `version + 1`, the version to bump to.
    pub next_version: u32,
    /// The hash in the lock.
    pub locked: String,
    /// The hash of the content as it is now.
    pub actual: String,
    /// The hash the content will have once the version is bumped.
    pub next_hash: String,
}

impl WorkloadError {
    /// Shorthand for an [`WorkloadError::Invalid`] at `key`.
    pub(crate) fn invalid(
        source_name: &str,
        key: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            source_name: source_name.to_string(),
            key: key.into(),
            reason: reason.into(),
        }
    }
}
