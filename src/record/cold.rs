//! The record of a `tokfire cold` run: every start (cold and warm, interleaved; failed starts
//! too) with its page-cache state, the child's clocks on one time line from the moment the
//! parent started it, and its disk reads; and the pure summary (median and slowest per clock,
//! cold and warm apart) that the report prints.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::measure::pagecache::Residency;
use crate::measure::stats;

/// A cold start whose files stayed more resident than this after eviction is not called cold.
pub const MAX_COLD_RESIDENT: f64 = crate::measure::pagecache::COLD_MAX;

/// What a `cold` run was asked to do (beside the run's [`crate::config::run::RunConfig`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColdSettings {
    /// Cold starts asked for (the same number of warm starts is interleaved).
    pub repeat: usize,
    /// A child still running after this many seconds is killed: a failed start.
    pub timeout_s: f64,
    /// Whether the whole page cache was also dropped (`/proc/sys/vm/drop_caches`) before each
    /// cold start.
    pub drop_caches: bool,
    /// The workload task each start runs.
    pub task: String,
    /// Output limit of each start, tokens.
    pub max_tokens: usize,
    /// The model's weight files, evicted before each cold start.
    pub files: Vec<PathBuf>,
    /// Whether the starts ran on a private copy of the model (`--private-copy`), made beside
    /// the results file and removed afterwards; `files` are then the copy's.
    #[serde(default)]
    pub private_copy: bool,
}

/// Cold (files evicted first) or warm (files read into the page cache first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartKind {
    Cold,
    Warm,
}

/// How a start is counted in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    Cold,
    Warm,
    /// Asked to be cold, but the eviction did not take (residency stayed above
    /// [`MAX_COLD_RESIDENT`] or could not be read): in neither group.
    NotCold,
    /// The child crashed, hung or was killed: in neither group, listed as failed.
    Failed,
}

/// What was done to the page cache before a cold start and what it changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Eviction {
    /// `posix_fadvise(DONTNEED)`, plus `drop_caches` when asked.
    pub method: String,
    /// Residency of the model files before eviction (none where unreadable).
    pub before: Option<Residency>,
    /// Residency right after eviction, just before the child started.
    pub after: Option<Residency>,
    /// The eviction error, when it failed.
    pub error: Option<String>,
    /// Why the pages stayed, with the fix, when the eviction did not take (who maps the file,
    /// tmpfs, a refused open); absent in records written before it was diagnosed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl Eviction {
    /// True when the files are at most [`MAX_COLD_RESIDENT`] resident afterwards.
    pub fn took(&self) -> bool {
        self.error.is_none()
            && self
                .after
                .is_some_and(|r| r.fraction() <= MAX_COLD_RESIDENT)
    }
}

/// What the child prints on stdout (one JSON object): its phases as `CLOCK_MONOTONIC`
/// nanoseconds, and its own counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    /// `main` entered (after exec, dynamic loading and runtime start).
    pub main_ns: u64,
    /// Model, tokenizer and chat template loaded.
    pub loaded_ns: u64,
    /// The first forward (one token, like llama.cpp's warm-up run) done.
    pub warm_ns: u64,
    /// The first output token sampled.
    pub first_token_ns: u64,
    /// The last output token sampled.
    pub last_token_ns: u64,
    /// `read_bytes` of `/proc/self/io` at the end: bytes the child read from storage.
    pub read_bytes: Option<u64>,
    /// Peak resident memory (`VmHWM`), bytes.
    pub peak_rss_bytes: Option<u64>,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    /// The generated text.
    pub output: String,
    /// Where the load time went (GGUF only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_split: Option<super::load::LoadSplitRecord>,
}

/// A start's clocks, seconds after the parent started the child (the moment a person hits
/// enter).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StartClocks {
    /// Exec, dynamic loading, runtime start: `main` entered.
    pub main_s: f64,
    /// Model loaded.
    pub loaded_s: f64,
    /// First forward done (warm-up).
    pub warm_s: f64,
    /// First output token.
    pub first_token_s: f64,
    /// Last output token.
    pub last_token_s: f64,
}

/// One start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRecord {
    /// 0-based, in the order run (cold, warm, cold, …).
    pub index: usize,
    pub kind: StartKind,
    pub counted: Counted,
    /// Residency of the model files when the child was started.
    pub residency: Option<Residency>,
    /// Cold starts: the eviction and its effect.
    pub eviction: Option<Eviction>,
    /// Why the start failed (crash, signal, timeout, unreadable report).
    pub failure: Option<String>,
    /// The clocks (none for a failed start).
    pub clocks: Option<StartClocks>,
    /// Start → the child's exit (or kill), seconds.
    pub exit_s: f64,
    /// Bytes the child read from storage (none where unreadable or failed).
    pub read_bytes: Option<u64>,
    /// The child's peak resident memory, bytes.
    pub peak_rss_bytes: Option<u64>,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub output: String,
    /// The end of the child's stderr, for failed starts.
    pub stderr_tail: String,
    /// Where the child's load time went (GGUF only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_split: Option<super::load::LoadSplitRecord>,
    /// What else the machine did from spawn to exit (the child's own CPU counted as ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<crate::measure::sentinel::RoundSentinel>,
}

/// The cold-start part of a run record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColdRecord {
    pub settings: ColdSettings,
    pub starts: Vec<StartRecord>,
}

/// One clock's statistics in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockStats {
    /// `main`, `loaded`, `warm-up done`, `first token`, `last token`, `exit`.
    pub clock: &'static str,
    pub median_s: Option<f64>,
    pub slowest_s: Option<f64>,
}

/// Cold or warm starts, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub counted: Counted,
    /// Starts in the group.
    pub starts: usize,
    pub clocks: Vec<ClockStats>,
    /// Median bytes read from storage per start.
    pub read_bytes_median: Option<f64>,
    /// Median residency of the model files when the child started, fraction.
    pub resident_median: Option<f64>,
}

/// The figures `cold` prints, derived from the raw starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColdSummary {
    pub cold: GroupSummary,
    pub warm: GroupSummary,
    /// Cold starts whose eviction did not take.
    pub not_cold: usize,
    /// Failed starts (crashed, hung, killed).
    pub failed: usize,
    /// Whether every successful start gave the same output.
    pub outputs_identical: bool,
}

type Pick = fn(&StartClocks, f64) -> f64;

/// The clocks in time order, with how to read each from a start.
const CLOCKS: [(&str, Pick); 6] = [
    ("main", |c, _| c.main_s),
    ("loaded", |c, _| c.loaded_s),
    ("warm-up done", |c, _| c.warm_s),
    ("first token", |c, _| c.first_token_s),
    ("last token", |c, _| c.last_token_s),
    ("exit", |_, exit| exit),
];

fn group(starts: &[StartRecord], counted: Counted) -> GroupSummary {
    let members: Vec<&StartRecord> = starts.iter().filter(|s| s.counted == counted).collect();
    let clocks = CLOCKS
        .iter()
        .map(|(name, pick)| {
            let v: Vec<f64> = members
                .iter()
                .filter_map(|s| s.clocks.as_ref().map(|c| pick(c, s.exit_s)))
                .collect();
            ClockStats {
                clock: name,
                median_s: stats::median(&v),
                slowest_s: stats::max(&v),
            }
        })
        .collect();
    let reads: Vec<f64> = members
        .iter()
        .filter_map(|s| s.read_bytes.map(|b| b as f64))
        .collect();
    let resident: Vec<f64> = members
        .iter()
        .filter_map(|s| s.residency.map(|r| r.fraction()))
        .collect();
    GroupSummary {
        counted,
        starts: members.len(),
        clocks,
        read_bytes_median: stats::median(&reads),
        resident_median: stats::median(&resident),
    }
}

/// Median and slowest of every clock, cold and warm apart; failed and not-cold starts counted.
pub fn summarize(rec: &ColdRecord) -> ColdSummary {
    let ok: Vec<&str> = rec
        .starts
        .iter()
        .filter(|s| s.clocks.is_some())
        .map(|s| s.output.as_str())
        .collect();
    let count = |c| rec.starts.iter().filter(|s| s.counted == c).count();
    ColdSummary {
        cold: group(&rec.starts, Counted::Cold),
        warm: group(&rec.starts, Counted::Warm),
        not_cold: count(Counted::NotCold),
        failed: count(Counted::Failed),
        outputs_identical: ok.len() >= 2 && ok.windows(2).all(|w| w[0] == w[1]),
    }
}

/// How a start of `kind` counts, from its eviction and whether it failed.
pub fn counted(kind: StartKind, eviction: Option<&Eviction>, failed: bool) -> Counted {
    match (failed, kind) {
        (true, _) => Counted::Failed,
        (false, StartKind::Warm) => Counted::Warm,
        (false, StartKind::Cold) if eviction.is_some_and(Eviction::took) => Counted::Cold,
        (false, StartKind::Cold) => Counted::NotCold,
    }
}

#[cfg(test)]
#[path = "cold_tests.rs"]
mod tests;
