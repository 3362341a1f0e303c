//! The result record: a results file holds every run appended to it (failed runs too; one JSON
//! line per run, [`lines`]), each with its whole configuration, launch command, provenance,
//! model and workload identity, every raw sample, and the figures derived from them (`summary`,
//! computed by the same code that prints the sheet). `bench` writes records; `report` (and
//! everything that compares runs) only reads them, through [`io`].

pub mod ab;
pub mod arms;
pub mod baseline;
pub mod calibration;
pub mod cold;
pub mod diff;
pub(crate) mod inflight;
pub mod io;
pub mod kind;
pub(crate) mod lines;
pub mod load;
pub mod prefill;
pub mod prefix;
pub mod profile;
pub mod quiet;
pub mod scheduler;
pub mod session;
pub mod spec;
pub mod spec_cost;
pub mod steady;
pub(crate) mod stored;
pub mod summary;
pub(crate) mod verdict;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::run::RunConfig;
use crate::config::RuntimeInfo;
use crate::measure::pagecache::Residency;
use crate::measure::provenance::{Build, Machine};
use crate::workload::{Outcome, ToolCall, Workload};

/// Version of the file layout below. 2 added `summary`, `config.headroom` and the
/// `interrupted` state; 3 added every run's `kind` ([`kind::RunKind`]) and the record types of
/// their own (`scheduler`, `load.split`); 4 added the `prefill` and `spec-cost` kinds and the
/// per-request speculation counters; 5 the synthetic drafter's reference pass
/// (`drafter.reference_*`), prefill's `--cold-start` starts and the level's
/// `stall_ms_per_token` in place of `stall_share` (still read from older files, no longer
/// shown); 6 the append-friendly layout ([`lines`]: a header line, then a run per line) in
/// place of one JSON document, and `runtime.candle` (`--kernels candle`). Version 1 to 5 files
/// still load (a summary is derived on reading, a kind from the payload the run carries; the
/// new fields are absent, read as empty) and are rewritten in the new layout when a run is
/// next added to them.
pub(crate) const FORMAT: u32 = 6;

/// A results file: every run appended to it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultsFile {
    /// Layout version ([`FORMAT`]).
    pub tokfire_results: u32,
    pub runs: Vec<RunRecord>,
}

/// How a run ended (so far).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum RunStatus {
    /// Rounds are still being added (or the process died: the rounds present are complete).
    Running,
    Complete,
    Failed {
        error: String,
    },
    /// Stopped by SIGINT or SIGTERM; the rounds present are complete.
    Interrupted {
        signal: String,
    },
}

impl RunStatus {
    /// One word: `running`, `complete`, `failed` or `interrupted`.
    pub(crate) fn short(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Complete => "complete",
            Self::Failed { .. } => "failed",
            Self::Interrupted { .. } => "interrupted",
        }
    }

    /// `running`, `complete`, `failed: …`, `interrupted (SIGINT)`.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Running => "running (or killed before it could finish)".into(),
            Self::Complete => "complete".into(),
            Self::Failed { error } => format!("failed: {error}"),
            Self::Interrupted { signal } => format!("interrupted ({signal})"),
        }
    }
}

/// One run of any verb (its [`kind::RunKind`] says which, with that kind's own payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// Unique within the file: start time and process id.
    pub id: String,
    /// Start, UTC, RFC 3339.
    pub started_utc: String,
    pub status: RunStatus,
    /// The exact command line.
    pub command: Vec<String>,
    pub config: RunConfig,
    pub build: Build,
    pub machine: Machine,
    /// Kernel ISA and threads the engine used.
    pub runtime: RuntimeInfo,
    /// The engine budgets as applied (the KV budget resolved to tokens for this model).
    pub scheduler: scheduler::SchedulerRecord,
    pub model: ModelInfo,
    pub workload: Workload,
    pub load: LoadClock,
    /// Why energy is missing, when it is (`None` when a counter was read).
    pub energy_na: Option<String>,
    /// Which counter the energy figures come from (absent without one, and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_source: Option<String>,
    pub levels: Vec<LevelRecord>,
    /// The derived figures of the levels above, rewritten with them after every round (absent
    /// in version 1 files; readers derive it then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<summary::RunSummary>,
    /// Which verb's run this is, with what only that kind has (`kind` and `ab`, `cold` or
    /// `session` on file).
    #[serde(flatten)]
    pub kind: kind::RunKind,
    /// With `--spec` other than `none` (and without `--no-baseline`): the same levels run with
    /// `--spec none` on the same loaded model, rounds interleaved with this run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Box<RunRecord>>,
    /// The drafter's identity and extra memory (absent without speculation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafter: Option<spec::DrafterInfo>,
}

impl RunRecord {
    /// The A/B arm's payload (none in other kinds).
    pub fn ab(&self) -> Option<&arms::AbArm> {
        match &self.kind {
            kind::RunKind::AbArm(a) => Some(a),
            _ => None,
        }
    }

    pub(crate) fn ab_mut(&mut self) -> Option<&mut arms::AbArm> {
        match &mut self.kind {
            kind::RunKind::AbArm(a) => Some(a),
            _ => None,
        }
    }

    /// The cold starts (none in other kinds).
    pub fn cold(&self) -> Option<&cold::ColdRecord> {
        match &self.kind {
            kind::RunKind::Cold(c) => Some(c),
            _ => None,
        }
    }

    pub(crate) fn cold_mut(&mut self) -> Option<&mut cold::ColdRecord> {
        match &mut self.kind {
            kind::RunKind::Cold(c) => Some(c),
            _ => None,
        }
    }

    /// The session's steps (none in other kinds).
    pub fn prefill(&self) -> Option<&prefill::PrefillRecord> {
        match &self.kind {
            kind::RunKind::Prefill(p) => Some(p),
            _ => None,
        }
    }

    pub(crate) fn prefill_mut(&mut self) -> Option<&mut prefill::PrefillRecord> {
        match &mut self.kind {
            kind::RunKind::Prefill(p) => Some(p),
            _ => None,
        }
    }

    pub fn spec_cost(&self) -> Option<&spec_cost::SpecCostRecord> {
        match &self.kind {
            kind::RunKind::SpecCost(c) => Some(c),
            _ => None,
        }
    }

    pub(crate) fn spec_cost_mut(&mut self) -> Option<&mut spec_cost::SpecCostRecord> {
        match &mut self.kind {
            kind::RunKind::SpecCost(c) => Some(c),
            _ => None,
        }
    }

    pub fn session(&self) -> Option<&session::SessionRecord> {
        match &self.kind {
            kind::RunKind::Session(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn session_mut(&mut self) -> Option<&mut session::SessionRecord> {
        match &mut self.kind {
            kind::RunKind::Session(s) => Some(s),
            _ => None,
        }
    }

    /// The stored summary, or one derived now for a record that has none; a stored summary
    /// from before a figure was summarised gets that figure from the raw samples here, so every
    /// presenter reads one summary.
    pub(crate) fn summary(&self) -> summary::RunSummary {
        let mut s = self
            .summary
            .clone()
            .unwrap_or_else(|| summary::summarize_run(self));
        if s.disk_read_bytes.is_none() {
            s.disk_read_bytes = summary::disk_read(self);
        }
        s
    }
}

/// Which model, exactly (empty in a run that failed before the model loaded).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Resolved file or directory.
    pub path: PathBuf,
    /// sha256 of the weight file (GGUF) or of `model.safetensors` files concatenated in name order.
    pub sha256: String,
    /// Bytes of the weight files.
    pub file_bytes: u64,
    pub arch: String,
    pub parameters: u64,
    /// KV-cache bytes one token costs across all layers.
    pub kv_bytes_per_token: u64,
}

/// The load clock: open + read + build weights and tokenizer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadClock {
    /// Wall time, seconds.
    pub seconds: f64,
    /// Page-cache state of the weight files just before loading (none where unreadable).
    pub page_cache: Option<Residency>,
    /// Bytes read from storage during the load (none where unreadable).
    pub disk_read_bytes: Option<u64>,
    /// Header, tokenizer, weights and first touch, bytes mapped vs copied (GGUF only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<load::LoadSplitRecord>,
}

/// Whether a byte count is 0 (an optional record field left out).
pub(crate) fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// One concurrency level: its warm-up and measured rounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LevelRecord {
    pub jobs: usize,
    /// Peak resident memory over the level (VmHWM after a reset at its start), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Largest KV-cache bytes held at once in the level.
    pub peak_kv_bytes: u64,
    /// Largest recurrent-state bytes held at once in the level (hybrid models; absent when 0).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub peak_state_bytes: u64,
    /// Warm-up rounds first (flagged), then measured rounds.
    pub rounds: Vec<RoundRecord>,
}

/// One round: every job ran the whole workload once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RoundRecord {
    /// 0-based, counting warm-up rounds.
    pub index: usize,
    /// Warm-up rounds are kept apart from statistics.
    pub warmup: bool,
    /// From the first submission to the last finish, seconds.
    pub wall_s: f64,
    /// Sum of batched forward passes, seconds.
    pub forward_s: f64,
    /// Bytes read from storage during the round.
    pub disk_read_bytes: Option<u64>,
    /// Energy of the device the model runs on during the round (the CPU package by RAPL, a
    /// GPU's board by NVML), joules (none without a counter).
    pub energy_j: Option<f64>,
    /// Most device (GPU) memory this process held during the round, from the driver (NVML,
    /// polled every 10 ms), bytes (absent on the CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_device_bytes: Option<u64>,
    pub tasks: Vec<TaskSample>,
    /// Every engine step, in order.
    pub steps: Vec<StepSample>,
    /// Speculation counters (all zero without speculation; absent in older records).
    #[serde(default)]
    pub spec: spec::SpecSample,
    /// The scheduler's side of every step, aligned with `steps` (absent in older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<profile::PlanRow>,
    /// What else the machine did during the round, from the OS's own counters (absent in
    /// records written before every round carried it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<crate::measure::sentinel::RoundSentinel>,
    /// What `--quiet-wait` waited before the round (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_wait: Option<crate::measure::sentinel::QuietWait>,
}

/// One engine step as the scheduler planned it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepSample {
    /// Start, seconds after the round's start.
    pub at_s: f64,
    /// Sequences in the step.
    pub seqs: usize,
    pub prefill_tokens: usize,
    pub decode_tokens: usize,
    /// Forward pass, seconds.
    pub forward_s: f64,
    /// Step start to end (forward, sampling, bookkeeping), seconds.
    pub step_s: f64,
}

/// One task as one job ran it (all turns, for tool agents).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSample {
    /// Job index, 0-based.
    pub job: usize,
    pub task: String,
    /// Generations it took (1 unless a tool agent looped).
    pub turns: usize,
    /// Submission of its first request, seconds after the round's start.
    pub start_s: f64,
    /// Submitted → admitted by the scheduler (first turn), seconds.
    pub queue_wait_s: f64,
    /// Time to first token: submission → first output token, seconds.
    pub ttft_s: Option<f64>,
    /// Submission → last token of the last turn, seconds.
    pub completion_s: f64,
    /// Prompt tokens over all turns.
    pub prompt_tokens: usize,
    /// Prompt tokens copied from the prefix cache instead of prefilled, over all turns.
    #[serde(default)]
    pub reused_tokens: usize,
    /// The first turn's prompt tokens copied from the prefix cache (0: a cold prompt, whose
    /// TTFT paid the whole prefill).
    #[serde(default)]
    pub first_turn_reused: usize,
    /// Output tokens over all turns.
    pub output_tokens: usize,
    /// First turn's prompt tokens computed (less those copied from the prefix cache) ÷ (first
    /// token − admission), tokens/s.
    pub prompt_tok_s: Option<f64>,
    /// Time per output token: (completion − TTFT) ÷ (output tokens − 1), seconds.
    pub tpot_s: Option<f64>,
    /// Gaps between consecutive output tokens within a turn, milliseconds.
    pub gaps_ms: Vec<f64>,
    /// Whether the last turn hit the token limit.
    pub hit_limit: bool,
    pub outcome: Outcome,
    pub tool_calls: Vec<ToolCall>,
    /// The final output text.
    pub output: String,
}
