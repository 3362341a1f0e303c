//! The record of a `tokfire session`: the script as parsed, the time scale, and one entry per
//! step (a repeated request gives one entry per repetition) with what the person waited for,
//! on one timeline; the totals are derived here (pure), not stored twice.

use serde::{Deserialize, Serialize};

use super::load::LoadSplitRecord as LoadSplit;
use crate::measure::pagecache::Residency;
use crate::record::cold::MAX_COLD_RESIDENT;
use crate::workload::session::Session;

/// Everything a session run keeps beside the run's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The script as parsed (its steps and their lines).
    pub session: Session,
    /// Idle gaps were slept for `seconds × time_scale` (1 = real time).
    pub time_scale: f64,
    /// The steps as run, in order.
    pub steps: Vec<StepRecord>,
}

/// What kind of step an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKindTag {
    Load,
    Request,
    Idle,
}

/// One step (or one repetition of a request step) as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Index of the step in the script, 0-based.
    pub step: usize,
    /// Line of the step in the script.
    pub line: usize,
    /// Repetition of a request step, 0-based (0 for other steps).
    #[serde(default)]
    pub repeat: usize,
    pub kind: StepKindTag,
    /// For people: `load MODEL (q)`, `chat`, `raw`, `task code/x`, `idle`.
    pub label: String,
    /// Start of the step on the session timeline, seconds after the session started.
    pub at_s: f64,
    /// Load steps: page-cache residency of the model's files just before the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residency: Option<Residency>,
    /// Load steps: whether the load hit a cold page cache (residency below the cold limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<bool>,
    /// Load steps with `evict = true` whose eviction did not take: why, with the fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_failed: Option<String>,
    /// Load steps: the load clock (open → weights and tokenizer built), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_s: Option<f64>,
    /// Load steps: where the load time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<LoadSplit>,
    /// Load steps: the first forward (one token) after the load, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// Requests: enter → first output token (render, tokenize, prefill), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_s: Option<f64>,
    /// Requests: enter → last output token, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_s: Option<f64>,
    #[serde(default)]
    pub prompt_tokens: usize,
    #[serde(default)]
    pub output_tokens: usize,
    /// `chat` requests: the earlier turns of the conversation its prompt carried (none for raw
    /// and task requests, and in records written before sessions kept the conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_turns: Option<usize>,
    /// Requests with `--prefix-cache on`: prompt tokens copied from the prefix cache instead of
    /// prefilled (none without a prefix cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_tokens: Option<usize>,
    /// Idle steps: the gap in the script, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_script_s: Option<f64>,
    /// Idle steps: the time actually slept (the script's gap × the time scale), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_s: Option<f64>,
    /// What else the machine did during the step (loads and requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<crate::measure::sentinel::RoundSentinel>,
    /// Requests: the generated text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

impl StepRecord {
    /// An entry with only its place filled in.
    pub(crate) fn new(
        step: usize,
        line: usize,
        kind: StepKindTag,
        label: String,
        at_s: f64,
    ) -> Self {
        Self {
            step,
            line,
            repeat: 0,
            kind,
            label,
            at_s,
            residency: None,
            cold: None,
            eviction_failed: None,
            load_s: None,
            split: None,
            warmup_s: None,
            ttft_s: None,
            completion_s: None,
            prompt_tokens: 0,
            output_tokens: 0,
            earlier_turns: None,
            reused_tokens: None,
            idle_script_s: None,
            idle_s: None,
            sentinel: None,
            output: String::new(),
        }
    }

    /// What the person waited for in this step before anything useful appeared: load +
    /// warm-up, or the time to the first token, seconds.
    pub fn wait_s(&self) -> f64 {
        self.load_s.unwrap_or(0.0) + self.warmup_s.unwrap_or(0.0) + self.ttft_s.unwrap_or(0.0)
    }

    /// Time the answer was being written (first → last token), seconds.
    pub fn generating_s(&self) -> f64 {
        match (self.ttft_s, self.completion_s) {
            (Some(t), Some(c)) => (c - t).max(0.0),
            _ => 0.0,
        }
    }
}

/// Whether a load with this residency before it counts as cold.
pub(crate) fn is_cold(r: Option<Residency>) -> Option<bool> {
    r.map(|r| r.fraction() <= MAX_COLD_RESIDENT)
}

/// The session's totals, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SessionTotals {
    /// Loads + warm-ups + times to first token.
    pub waiting_s: f64,
    /// Loads and warm-ups alone.
    pub loading_s: f64,
    /// The requests' times to first token alone (the model already loaded and warm).
    pub ttft_s: f64,
    /// First → last token, over requests.
    pub generating_s: f64,
    /// Slept in idle steps.
    pub idle_s: f64,
    /// The idle steps' gaps as scripted (before the time scale).
    pub idle_script_s: f64,
    /// Session start → end of the last step.
    pub wall_s: f64,
    pub requests: usize,
    pub loads: usize,
    pub cold_loads: usize,
}

/// Sums the steps of `r`.
pub fn totals(r: &SessionRecord) -> SessionTotals {
    let mut t = SessionTotals::default();
    for s in &r.steps {
        t.waiting_s += s.wait_s();
        t.loading_s += s.load_s.unwrap_or(0.0) + s.warmup_s.unwrap_or(0.0);
        t.ttft_s += s.ttft_s.unwrap_or(0.0);
        t.generating_s += s.generating_s();
        t.idle_s += s.idle_s.unwrap_or(0.0);
        t.idle_script_s += s.idle_script_s.unwrap_or(0.0);
        let end = s.at_s + s.wait_s() + s.generating_s() + s.idle_s.unwrap_or(0.0);
        t.wall_s = t.wall_s.max(end);
        match s.kind {
            StepKindTag::Request => t.requests += 1,
            StepKindTag::Load => {
                t.loads += 1;
                t.cold_loads += usize::from(s.cold == Some(true));
            }
            StepKindTag::Idle => {}
        }
    }
    t
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
