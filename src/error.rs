//! Error types, one per layer: configuration (flags, manifest, device), model loading, engine.
//! Each message names the file or flag at fault and says what to do about it.

use std::path::PathBuf;

/// A bad flag, an unknown model name, a device this build cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown model '{name}': not a manifest name, an existing .gguf file, a model directory or hf:REPO[:FILE]; known names: {known}")]
    UnknownModel { name: String, known: String },
    #[error("--device {spec}: {reason}")]
    Device { spec: String, reason: String },
    #[error("--device {device}: this build has no {device} support; rebuild with `cargo build --release --features {feature}`")]
    FeatureMissing { device: String, feature: String },
    #[error("{flag} {value}: {reason}")]
    Flag {
        flag: String,
        value: String,
        reason: String,
    },
    #[error("the embedded model manifest is invalid: {0}; this is a bug")]
    Manifest(String),
    #[error("verdict not comfortable at the highest level run (--exit-code): {line}")]
    NotComfortable { line: String },
    #[error("A/B verdict {decision}, not keep (--exit-code): {reason}")]
    NotKept { decision: String, reason: String },
}

impl ConfigError {
    /// `flag value: reason`, e.g. `--threads 0: must be at least 1`.
    pub(crate) fn flag(flag: &str, value: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Flag {
            flag: flag.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
}

/// Loading a model: finding, fetching, parsing and building weights and tokenizer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The OS error is part of the message, not a separate source, so it is said once.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not a GGUF file (magic bytes {magic:?}); pass a .gguf file, a model directory with config.json, or a manifest name")]
    NotGguf { path: PathBuf, magic: String },
    #[error("{path}: the GGUF file is damaged or truncated ({detail}); fetch it again")]
    BadGguf { path: PathBuf, detail: String },
    #[error("{path}: {kind}, not a regular file; pass a .gguf file, a model directory or a manifest name")]
    NotRegularFile { path: PathBuf, kind: String },
    #[error("{path}: {problems}; the file is damaged or truncated, or not a model this engine runs: fetch it again, or see every problem with `tokfire inspect {path}`")]
    Rejected { path: PathBuf, problems: Problems },
    #[error("{path}: architecture '{arch}' is not supported; supported: {supported}")]
    UnsupportedArch {
        path: PathBuf,
        arch: String,
        supported: String,
    },
    #[error("{path}: no tokenizer in this model ({detail}); use a GGUF with tokenizer.ggml.* metadata or a directory with tokenizer.json")]
    NoTokenizer { path: PathBuf, detail: String },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
    #[error("fetching '{name}' failed: {detail}")]
    Fetch { name: String, detail: String },
    #[error("{what}: {error}")]
    Candle {
        what: String,
        error: candle_core::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// `e` without the backtraces candle wrapped it in (logged at debug level, for `TOKFIRE_LOG=debug`).
pub(crate) fn without_backtrace(e: candle_core::Error, what: &str) -> candle_core::Error {
    match e {
        candle_core::Error::WithBacktrace { inner, backtrace } => {
            tracing::debug!("{what}: candle error captured at:\n{backtrace}");
            without_backtrace(*inner, what)
        }
        candle_core::Error::Context { inner, context } => candle_core::Error::Context {
            inner: Box::new(without_backtrace(*inner, what)),
            context,
        },
        candle_core::Error::WithPath { inner, path } => candle_core::Error::WithPath {
            inner: Box::new(without_backtrace(*inner, what)),
            path,
        },
        e => e,
    }
}

/// Running the model: forward passes, caches, sampling.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("tensor operation failed: {0}")]
    Candle(#[from] candle_core::Error),
    /// What was asked cannot run as asked (an empty prompt, budgets too small for a request, a
    /// sequence past the model's positions, a drafter this model cannot use, a chat template
    /// that fails on the messages): the message names the flag or input to change.
    #[error("{0}")]
    Refused(String),
    /// An invariant of the engine broke: a bug in tokfire, never the user's input.
    #[error("{0}; this is a bug in tokfire")]
    Bug(String),
    /// A stop was requested (SIGINT or SIGTERM) between two engine steps.
    #[error("interrupted")]
    Interrupted,
}

impl ModelError {
    /// Wraps a candle error with what was being done.
    /// The backtrace candle captures when `RUST_BACKTRACE` is set is left out of the message
    /// and logged at debug level instead.
    pub fn candle(what: impl Into<String>) -> impl FnOnce(candle_core::Error) -> Self {
        let what = what.into();
        move |source| Self::Candle {
            error: without_backtrace(source, &what),
            what,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |error| Self::Io { path, error }
    }
}

/// Most problems one error message lists.
const LISTED: usize = 3;

/// One thing wrong with a model file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The metadata key or tensor concerned, e.g. `tensor blk.0.attn_q.weight`.
    pub subject: String,
    /// The value found in the file.
    pub found: String,
    /// What it should be.
    pub expected: String,
}

impl Problem {
    pub(crate) fn new(
        subject: impl Into<String>,
        found: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Self {
            subject: subject.into(),
            found: found.to_string(),
            expected: expected.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: found {}, expected {}",
            self.subject, self.found, self.expected
        )
    }
}

/// The problems of one file; shown as the first few and a count of the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl std::fmt::Display for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.len();
        write!(f, "{}: ", crate::fmt::plural(n, "problem"))?;
        for (i, p) in self.0.iter().take(LISTED).enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            write!(f, "{p}")?;
        }
        if n > LISTED {
            write!(f, "; and {} more", n - LISTED)?;
        }
        Ok(())
    }
}
