//! The batching policy a run uses (`--schedule`): how each engine step shares its token budget
//! between running decodes and prefill work. Recorded with every run; `ab` can vary it.

use serde::{Deserialize, Serialize};

/// How the scheduler fills a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// Running sequences in admission order (decode tokens and prefill chunks up to
    /// `--prefill-chunk` each), then first-in first-out admission into what is left.
    #[default]
    Fifo,
    /// Stall-free batching: every running decode is planned first, and prefill work (chunks and
    /// admissions together) fills at most one `--prefill-chunk` of each step, so no running
    /// decode waits longer than one chunk's step.
    DecodeFirst,
    /// Admit and prefill as fast as possible: while prefill work remains a step carries only
    /// prefill; decodes run in the steps with none.
    PrefillFirst,
}

impl Schedule {
    /// The name `--schedule` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fifo => "fifo",
            Self::DecodeFirst => "decode-first",
            Self::PrefillFirst => "prefill-first",
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
