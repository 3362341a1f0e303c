//! The record of a `tokfire spec-cost`: what verifying `k` drafted tokens costs a decode step
//! of `jobs` sequences on this machine, against the plain step (`k = 0`) at the same `jobs`.
//! Every measured step time is kept; the median, the cost ratio and the acceptance rate at
//! which speculation starts to pay are derived here (pure), not stored twice.

use serde::{Deserialize, Serialize};

use crate::measure::sentinel::RoundSentinel;
use crate::measure::stats;

/// Everything a spec-cost run keeps beside the run's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecCostRecord {
    /// Prompt tokens of every sequence, prefilled before the measured steps.
    pub context: usize,
    /// Decode steps measured per cell, after `warmup` unrecorded ones.
    pub steps: usize,
    pub warmup: usize,
    /// Seed of the prompts and of the drafted tokens.
    pub seed: u64,
    /// The grid as asked.
    pub jobs: Vec<usize>,
    pub ks: Vec<usize>,
    /// The cells as run, `jobs` outer, `k` inner.
    pub cells: Vec<VerifyCell>,
}

/// One (jobs, k) point and its step times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyCell {
    pub jobs: usize,
    /// Drafted tokens verified per sequence and step (0: plain decode).
    pub k: usize,
    /// Wall time of each measured decode step (drafting, the batched forward of
    /// `jobs × (k + 1)` tokens, sampling and acceptance), seconds.
    pub step_s: Vec<f64>,
    /// Drafted tokens proposed and accepted over the measured steps (the drafts are random
    /// vocabulary tokens, so almost none are accepted: the cost is measured, not the gain).
    pub proposed: usize,
    pub accepted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<RoundSentinel>,
}

impl VerifyCell {
    /// Median step time, seconds.
    pub fn median_s(&self) -> Option<f64> {
        stats::median(&self.step_s)
    }

    /// Fastest and slowest step, seconds.
    pub fn range_s(&self) -> Option<(f64, f64)> {
        Some((stats::min(&self.step_s)?, stats::max(&self.step_s)?))
    }
}

impl SpecCostRecord {
    /// The plain step (`k = 0`) at `jobs`, when it was measured.
    pub fn plain(&self, jobs: usize) -> Option<&VerifyCell> {
        self.cells.iter().find(|c| c.jobs == jobs && c.k == 0)
    }

    /// The verify step's cost in plain steps: median(k) ÷ median(k = 0) at the same jobs.
    pub fn cost_ratio(&self, cell: &VerifyCell) -> Option<f64> {
        let base = self.plain(cell.jobs)?.median_s()?;
        let t = cell.median_s()?;
        (base > 0.0).then(|| t / base)
    }
}

/// Tokens a verify step of `k` drafts yields per sequence when each drafted token is accepted
/// with probability `alpha`, independently, up to the first rejection (plus the target's own
/// token): `(1 − α^(k+1)) / (1 − α)`.
pub fn expected_tokens(alpha: f64, k: usize) -> f64 {
    if alpha >= 1.0 {
        return (k + 1) as f64;
    }
    (1.0 - alpha.powi(k as i32 + 1)) / (1.0 - alpha)
}

/// The per-token acceptance rate above which verifying `k` drafts at `ratio` plain steps per
/// step yields more tokens per second than plain decoding, for a drafter that costs nothing:
/// `None` when it never does (`ratio ≥ k + 1`), 0 when it always does (`ratio ≤ 1`).
pub fn break_even(ratio: f64, k: usize) -> Option<f64> {
    if k == 0 || !ratio.is_finite() || ratio >= (k + 1) as f64 {
        return None;
    }
    if ratio <= 1.0 {
        return Some(0.0);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        match expected_tokens(mid, k) >= ratio {
            true => hi = mid,
            false => lo = mid,
        }
    }
    Some(hi)
}

#[cfg(test)]
#[path = "spec_cost_tests.rs"]
mod tests;
