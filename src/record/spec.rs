//! Speculative decoding's samples (per round, counted from the engine's events) and figures (per
//! level): what the drafter proposed, what the target accepted, by draft position, and the
//! drafter's clock apart from the target's verify forwards.

use serde::{Deserialize, Serialize};

/// One round's speculation counters (all zero without speculation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecSample {
    /// Sequences verified (one per drafted sequence per step).
    pub verifies: u64,
    /// Draft tokens proposed.
    pub proposed: u64,
    /// Draft tokens accepted.
    pub accepted: u64,
    /// Proposed tokens by draft position (index 0 = position 1).
    pub proposed_at: Vec<u64>,
    /// Accepted tokens by draft position (a position is accepted only after all before it).
    pub accepted_at: Vec<u64>,
    /// The drafter's own time, seconds.
    pub draft_s: f64,
    /// Forward time of the steps that verified a draft (they also carry other sequences' work),
    /// seconds.
    pub verify_forward_s: f64,
    /// Steps that verified at least one draft.
    pub verify_steps: u64,
    /// Each request that drafted, in id order: its own counters (absent in older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_request: Vec<RequestSpec>,
    /// Verifies by draft tokens accepted: index n counts the verifies that kept n drafted
    /// tokens (absent in older records).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_hist: Vec<u64>,
}

/// One request's speculation counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestSpec {
    pub verifies: u64,
    pub proposed: u64,
    pub accepted: u64,
}

impl SpecSample {
    /// Adds another round's counters.
    pub fn add(&mut self, o: &SpecSample) {
        self.verifies += o.verifies;
        self.proposed += o.proposed;
        self.accepted += o.accepted;
        add_at(&mut self.proposed_at, &o.proposed_at);
        add_at(&mut self.accepted_at, &o.accepted_at);
        self.draft_s += o.draft_s;
        self.verify_forward_s += o.verify_forward_s;
        self.verify_steps += o.verify_steps;
        // Every round's requests are requests of their own.
        self.per_request.extend_from_slice(&o.per_request);
        add_at(&mut self.accepted_hist, &o.accepted_hist);
    }
}

fn add_at(to: &mut Vec<u64>, from: &[u64]) {
    if to.len() < from.len() {
        to.resize(from.len(), 0);
    }
    for (a, b) in to.iter_mut().zip(from) {
        *a += b;
    }
}

/// The drafter's extra memory and identity (a run with `--spec` other than `none`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DrafterInfo {
    /// The exact `--spec` value.
    pub spec: String,
    /// The draft model of `--spec draft:MODEL` (none for drafters without a model of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<super::ModelInfo>,
    /// `--draft-dtype` of a draft model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<crate::config::WeightDType>,
    /// Draft model load, wall clock, seconds (0 without a draft model).
    #[serde(default)]
    pub load_s: f64,
    /// Extra weight bytes the drafter holds: the draft model's file size (`--draft-dtype q`) or
    /// parameters × element size (dense); for `--spec mtp` the same of the nextn block it runs
    /// (loaded with the target); 0 for prompt lookup and layer-skip (the target's own weights).
    #[serde(default)]
    pub weight_bytes: u64,
    /// Largest KV-cache bytes the drafter held at once over every round, bytes.
    #[serde(default)]
    pub peak_kv_bytes: u64,
    /// `--spec synthetic:`: the untimed reference pass (one `--spec none` round at 1 job) that
    /// gave the drafter the greedy output, wall clock seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_s: Option<f64>,
    /// `--spec synthetic:`: requests the reference pass generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_requests: Option<usize>,
}

/// A level's speculation figures, over its measured rounds (none without speculation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecFigures {
    /// Draft tokens proposed.
    #[serde(default)]
    pub spec_proposed: u64,
    /// Draft tokens accepted.
    #[serde(default)]
    pub spec_accepted: u64,
    /// Accepted ÷ proposed.
    #[serde(default)]
    pub spec_acceptance: Option<f64>,
    /// Mean tokens a verified sequence gained per verify: 1 + accepted ÷ verifies.
    #[serde(default)]
    pub spec_accepted_len: Option<f64>,
    /// Per request (each request's accepted ÷ proposed, so long answers do not weigh more):
    /// the median and the lowest over the requests that drafted.
    #[serde(default)]
    pub spec_acceptance_request_median: Option<f64>,
    #[serde(default)]
    pub spec_acceptance_request_lowest: Option<f64>,
    /// Per request: 1 + accepted ÷ verifies of each request, median.
    #[serde(default)]
    pub spec_accepted_len_request_median: Option<f64>,
    /// Verifies by draft tokens kept (index n: n accepted), over the level's rounds.
    #[serde(default)]
    pub spec_accepted_hist: Vec<u64>,
    /// Acceptance by draft position 1..k: accepted ÷ proposed at that position.
    #[serde(default)]
    pub spec_acceptance_by_position: Vec<f64>,
    /// Drafter time per output token, milliseconds.
    #[serde(default)]
    pub spec_draft_ms_per_token: Option<f64>,
    /// Forward time of verify steps per output token, milliseconds.
    #[serde(default)]
    pub spec_verify_ms_per_token: Option<f64>,
    /// Against the interleaved `--spec none` baseline (empty without one).
    #[serde(default, flatten)]
    pub baseline: super::baseline::VsBaseline,
}

impl SpecFigures {
    /// The figures of `s` for `tokens` output tokens.
    pub fn of(s: &SpecSample, tokens: usize) -> Self {
        let ratio = |a: f64, b: u64| (b > 0).then(|| a / b as f64);
        let per_token =
            |secs: f64| (tokens > 0 && s.verifies > 0).then(|| secs * 1e3 / tokens as f64);
        Self {
            spec_proposed: s.proposed,
            spec_accepted: s.accepted,
            spec_acceptance: ratio(s.accepted as f64, s.proposed),
            spec_accepted_len: ratio(s.accepted as f64, s.verifies).map(|r| 1.0 + r),
            spec_acceptance_request_median: crate::measure::stats::median(&per_request(s, |r| {
                ratio(r.accepted as f64, r.proposed)
            })),
            spec_acceptance_request_lowest: crate::measure::stats::min(&per_request(s, |r| {
                ratio(r.accepted as f64, r.proposed)
            })),
            spec_accepted_len_request_median: crate::measure::stats::median(&per_request(s, |r| {
                ratio(r.accepted as f64, r.verifies).map(|x| 1.0 + x)
            })),
            spec_accepted_hist: s.accepted_hist.clone(),
            spec_acceptance_by_position: s
                .proposed_at
                .iter()
                .zip(&s.accepted_at)
                .map(|(&p, &a)| if p > 0 { a as f64 / p as f64 } else { 0.0 })
                .collect(),
            spec_draft_ms_per_token: per_token(s.draft_s),
            spec_verify_ms_per_token: per_token(s.verify_forward_s),
            baseline: Default::default(),
        }
    }
}

/// A figure of every request that has one.
fn per_request(s: &SpecSample, f: impl Fn(&RequestSpec) -> Option<f64>) -> Vec<f64> {
    s.per_request.iter().filter_map(f).collect()
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;

/// The collapse guard's rule: acceptance below this share of what the same drafter reached on
/// its reference …
pub const COLLAPSE_SHARE: f64 = 0.8;
/// … and at least this much lower (absolute), so that a drafter at 4 % against 5 % is noise.
pub const COLLAPSE_POINTS: f64 = 0.05;
/// The rule in words, for the screens.
pub const COLLAPSE_RULE: &str = "collapsed: below 4/5 of it and at least 5 points lower";

/// Whether token-weighted acceptance `got` collapsed against `reached`, the same drafter's on
/// its reference (the run's fewest-jobs level, or the older run of a comparison).
pub fn collapsed(got: Option<f64>, reached: Option<f64>) -> bool {
    match (got, reached) {
        (Some(g), Some(r)) => g < COLLAPSE_SHARE * r && r - g >= COLLAPSE_POINTS,
        _ => false,
    }
}
