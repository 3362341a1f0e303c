//! The benchmark layer's error: any lower layer's error, the results file, or a failure saved
//! in the record.

use crate::error::{ConfigError, EngineError, ModelError};

/// Running a benchmark: any layer's error, or the results file.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Workload(Box<crate::workload::WorkloadError>),
    #[error(transparent)]
    Model(Box<ModelError>),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Record(#[from] crate::record::io::RecordError),
    #[error("--trace {path}: {source}")]
    Trace {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("interrupted by {signal}; {} kept in {out}, marked interrupted", rounds_kept(*.rounds))]
    Interrupted {
        signal: String,
        out: std::path::PathBuf,
        rounds: usize,
    },
    #[error("{source}\n(the run failed; the rounds it finished are kept in {out}, marked failed)")]
    Saved {
        out: std::path::PathBuf,
        source: Box<BenchError>,
    },
    /// `tokfire session` stopped by a signal between two steps (or in an idle gap).
    #[error("interrupted by {signal}; {} kept in {out}, marked interrupted", steps_kept(*.steps))]
    StepsInterrupted {
        signal: String,
        out: std::path::PathBuf,
        steps: usize,
    },
    /// `tokfire prefill` stopped by a signal between two samples.
    #[error("interrupted by {signal}; {} kept in {out}, marked interrupted", cells_kept(*.cells))]
    CellsInterrupted {
        signal: String,
        out: std::path::PathBuf,
        cells: usize,
    },
    /// `tokfire cold` stopped by a signal: the running child was killed and left out.
    #[error("interrupted by {signal}: the running child was killed and its start left out; {} kept in {out}, marked interrupted", starts_kept(*.starts))]
    StartsInterrupted {
        signal: String,
        out: std::path::PathBuf,
        starts: usize,
    },
}

impl From<crate::workload::WorkloadError> for BenchError {
    fn from(e: crate::workload::WorkloadError) -> Self {
        Self::Workload(Box::new(e))
    }
}

impl From<ModelError> for BenchError {
    fn from(e: ModelError) -> Self {
        Self::Model(Box::new(e))
    }
}

fn rounds_kept(n: usize) -> String {
    match n {
        0 => "no round had finished; the run is".into(),
        1 => "the 1 round it finished is".into(),
        n => format!("the {n} rounds it finished are"),
    }
}

fn cells_kept(n: usize) -> String {
    match n {
        0 => "no cell had finished; the run is".into(),
        1 => "the 1 cell it finished is".into(),
        n => format!("the {n} cells it finished are"),
    }
}

fn steps_kept(n: usize) -> String {
    match n {
        0 => "no step had finished; the session is".into(),
        1 => "the 1 step it finished is".into(),
        n => format!("the {n} steps it finished are"),
    }
}

fn starts_kept(n: usize) -> String {
    match n {
        0 => "no start had finished; the run is".into(),
        1 => "the 1 start it finished is".into(),
        n => format!("the {n} starts it finished are"),
    }
}
