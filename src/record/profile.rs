//! The scheduler's profile: the per-step timeline rows a round stores (what the planner decided
//! and what deciding cost), the decode stalls derived from steps that carried prefill work, and
//! the per-level figures both sum up to (planner clock, queue depth, KV and budget use,
//! preemptions, stalls, the worst inter-token gap). Pure: records in, figures out.
//!
//! A stall is the delay a step that carried prompt tokens added to a running sequence's next
//! token: for a sequence the step decoded, the step time beyond the median decode-only step with
//! the same number of decodes (the nearest count measured when that one was not); for a ready
//! sequence the step gave no token, the whole step. Sarathi-Serve (OSDI '24) bounds the first
//! kind with a per-step token budget; `--schedule decode-first` does that here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::scheduler::SchedulerRecord;
use super::{RoundRecord, StepSample};
use crate::measure::stats::{max, median, weighted_median};

/// One engine step as the scheduler saw it; stored as an array of 11 integers in field order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "[u64; 11]", from = "[u64; 11]")]
pub struct PlanRow {
    /// Planner time (`schedule()` alone), ns.
    pub plan_ns: u64,
    /// Sequences running once the step's admissions are made.
    pub running: u64,
    /// Requests waiting after the step's admissions.
    pub waiting: u64,
    /// Requests admitted for the step.
    pub admitted: u64,
    /// Sequences preempted before the step.
    pub preempted: u64,
    /// Sequences that finished in the step.
    pub finished: u64,
    /// Prompt tokens fed, tokens.
    pub prefill_tokens: u64,
    /// Decode tokens fed, tokens.
    pub decode_tokens: u64,
    /// Draft tokens verified beside them, tokens.
    pub draft_tokens: u64,
    /// Ready decodes the step gave no token.
    pub skipped_decodes: u64,
    /// KV tokens held during the forward, tokens.
    pub kv_tokens: u64,
}

impl From<PlanRow> for [u64; 11] {
    fn from(r: PlanRow) -> Self {
        [
            r.plan_ns,
            r.running,
            r.waiting,
            r.admitted,
            r.preempted,
            r.finished,
            r.prefill_tokens,
            r.decode_tokens,
            r.draft_tokens,
            r.skipped_decodes,
            r.kv_tokens,
        ]
    }
}

impl From<[u64; 11]> for PlanRow {
    fn from(a: [u64; 11]) -> Self {
        let [plan_ns, running, waiting, admitted, preempted, finished, prefill_tokens, decode_tokens, draft_tokens, skipped_decodes, kv_tokens] =
            a;
        Self {
            plan_ns,
            running,
            waiting,
            admitted,
            preempted,
            finished,
            prefill_tokens,
            decode_tokens,
            draft_tokens,
            skipped_decodes,
            kv_tokens,
        }
    }
}

impl PlanRow {
    /// Every token the step's forward took: fed plus drafts.
    pub fn tokens(&self) -> u64 {
        self.prefill_tokens + self.decode_tokens + self.draft_tokens
    }
}

/// Median decode-only step time by decodes per step, seconds.
#[derive(Debug, Default)]
pub(crate) struct DecodeBaseline(BTreeMap<usize, f64>);

impl DecodeBaseline {
    /// From every step without prompt tokens.
    pub(crate) fn of<'a>(steps: impl Iterator<Item = &'a StepSample>) -> Self {
        let mut by: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for s in steps.filter(|s| s.prefill_tokens == 0 && s.decode_tokens > 0) {
            by.entry(s.decode_tokens).or_default().push(s.step_s);
        }
        Self(
            by.into_iter()
                .filter_map(|(n, v)| median(&v).map(|m| (n, m)))
                .collect(),
        )
    }

    /// The baseline of `decodes` per step, or of the nearest count measured.
    fn at(&self, decodes: usize) -> Option<f64> {
        let above = self.0.range(decodes..).next();
        let below = self.0.range(..decodes).next_back();
        match (below, above) {
            (Some(b), Some(a)) if decodes - b.0 < a.0 - decodes => Some(*b.1),
            (_, Some(a)) => Some(*a.1),
            (Some(b), None) => Some(*b.1),
            (None, None) => None,
        }
    }
}

/// The stalls of one round: (seconds, how many sequences the step delayed by that much), one
/// entry per kind of delay a step caused. Counted, not repeated, so that a record's counts
/// (hostile input) never size an allocation. `timeline` is aligned with `steps` (rounds
/// recorded before it existed have none: skipped decodes count as 0).
pub(crate) fn stalls(
    steps: &[StepSample],
    timeline: &[PlanRow],
    base: &DecodeBaseline,
) -> Vec<(f64, u64)> {
    let mut out = Vec::new();
    for (i, s) in steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.prefill_tokens > 0)
    {
        if let Some(b) = base.at(s.decode_tokens).filter(|_| s.decode_tokens > 0) {
            let extra = s.step_s - b;
            if extra > 0.0 {
                out.push((extra, s.decode_tokens as u64));
            }
        }
        let skipped = timeline.get(i).map_or(0, |r| r.skipped_decodes);
        if skipped > 0 {
            out.push((s.step_s, skipped));
        }
    }
    out
}

/// The scheduler's figures of one level (all none or zero for records without a timeline).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileFigures {
    /// Planner time per step, median, µs.
    pub plan_us_median: Option<f64>,
    /// Planner time per step, slowest, µs.
    pub plan_us_max: Option<f64>,
    /// Planner time ÷ wall time over measured rounds.
    pub plan_fraction: Option<f64>,
    /// Requests waiting per step, mean.
    pub queue_mean: Option<f64>,
    /// Requests waiting per step, most.
    pub queue_max: Option<f64>,
    /// Most KV tokens held in a step ÷ the KV budget.
    pub kv_peak_fraction: Option<f64>,
    /// Tokens per step ÷ `--max-batch-tokens`, mean over steps.
    pub budget_fill: Option<f64>,
    /// Sequences preempted (recompute), over measured rounds.
    pub preemptions: u64,
    /// Decode stalls counted (sequence × step), over measured rounds.
    pub stalls: u64,
    /// Median stall, ms.
    pub stall_ms_median: Option<f64>,
    /// Worst stall, ms.
    pub stall_ms_worst: Option<f64>,
    /// Stall time ÷ decode time (the sum of every inter-token gap), as older records stored
    /// it; no longer derived or written: faster decoding raised it, so a better configuration
    /// read worse.
    #[serde(default, skip_serializing)]
    pub stall_share: Option<f64>,
    /// Stall time per decoded token (every token after an answer's first), ms: what prompt
    /// work cost each token of the answers; less waiting reads lower.
    #[serde(default)]
    pub stall_ms_per_token: Option<f64>,
    /// Longest gap between two tokens of one answer over measured rounds, ms.
    pub worst_gap_ms: Option<f64>,
}

/// The figures of a level's measured `rounds` under the budgets of `cfg`.
pub(crate) fn figures(rounds: &[&RoundRecord], cfg: &SchedulerRecord) -> ProfileFigures {
    let rows: Vec<&PlanRow> = rounds.iter().flat_map(|r| &r.timeline).collect();
    let plan_us: Vec<f64> = rows.iter().map(|r| r.plan_ns as f64 / 1e3).collect();
    let waiting: Vec<f64> = rows.iter().map(|r| r.waiting as f64).collect();
    let wall: f64 = rounds.iter().map(|r| r.wall_s).sum();
    let ratio = |n: f64, d: usize| (d > 0 && !rows.is_empty()).then(|| n / d as f64);
    let base = DecodeBaseline::of(rounds.iter().flat_map(|r| &r.steps));
    let stall_ms: Vec<(f64, u64)> = rounds
        .iter()
        .flat_map(|r| stalls(&r.steps, &r.timeline, &base))
        .map(|(s, n)| (s * 1e3, n))
        .collect();
    let stall_count = stall_ms.iter().fold(0u64, |a, s| a.saturating_add(s.1));
    // A fold from +0.0: an empty sum is -0.0 in Rust, which would print as "-0.00".
    let stall_total_ms = stall_ms.iter().fold(0.0, |a, s| a + s.0 * s.1 as f64);
    let gaps_ms: Vec<f64> = rounds
        .iter()
        .flat_map(|r| r.tasks.iter().flat_map(|t| t.gaps_ms.iter().copied()))
        .collect();
    ProfileFigures {
        plan_us_median: median(&plan_us),
        plan_us_max: max(&plan_us),
        plan_fraction: (wall > 0.0 && !rows.is_empty())
            .then(|| plan_us.iter().sum::<f64>() / 1e6 / wall),
        queue_mean: (!rows.is_empty()).then(|| waiting.iter().sum::<f64>() / rows.len() as f64),
        queue_max: max(&waiting),
        kv_peak_fraction: ratio(
            rows.iter().map(|r| r.kv_tokens).max().unwrap_or(0) as f64,
            cfg.kv_budget_tokens,
        ),
        budget_fill: ratio(
            rows.iter().map(|r| r.tokens() as f64).sum::<f64>() / rows.len().max(1) as f64,
            cfg.max_batch_tokens,
        ),
        preemptions: rows.iter().map(|r| r.preempted).sum(),
        stalls: stall_count,
        stall_ms_median: weighted_median(&stall_ms),
        stall_ms_worst: max(&stall_ms.iter().map(|s| s.0).collect::<Vec<_>>()),
        // No longer derived (see the field); older records keep what they stored.
        stall_share: None,
        stall_ms_per_token: (!gaps_ms.is_empty() && !rows.is_empty())
            .then(|| stall_total_ms / gaps_ms.len() as f64),
        worst_gap_ms: max(&gaps_ms),
    }
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
