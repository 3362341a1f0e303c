//! Speculation against its baseline: a run with `--spec` other than `none` carries a second,
//! ordinary run of the same levels with `--spec none` on the same loaded model, its rounds
//! interleaved with the speculative run's (base, spec, base, spec …). This module turns the pair
//! into per-level figures: speedups on the decode clock, TTFT and completion, and whether every
//! task's output text was identical. It reuses the A/B arms' per-round figures and per-task
//! output comparison ([`super::arms`]) on one level at a time. Pure.

use serde::{Deserialize, Serialize};

use super::arms::{round_figures, task_changes};
use super::RunRecord;
use crate::measure::stats::{mad, max, median, min};

/// One level, speculation against the baseline (both over their measured rounds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VsBaseline {
    /// Decode tok/s (1 / median TPOT of a round) with speculation ÷ without: medians over
    /// rounds; above 1 is faster.
    #[serde(default)]
    pub spec_decode_speedup: Option<f64>,
    /// Smallest and largest per-round ratio of decode tok/s, round i of one arm against round i
    /// of the other (the spread over rounds).
    #[serde(default)]
    pub spec_decode_speedup_min: Option<f64>,
    #[serde(default)]
    pub spec_decode_speedup_max: Option<f64>,
    /// Baseline median TTFT ÷ speculative median TTFT; above 1 is faster.
    #[serde(default)]
    pub spec_ttft_speedup: Option<f64>,
    /// Baseline median completion ÷ speculative median completion; above 1 is faster.
    #[serde(default)]
    pub spec_completion_speedup: Option<f64>,
    /// `yes` when every task's output text was identical in both arms, `no` when one differed,
    /// empty without a baseline round.
    #[serde(default)]
    pub spec_outputs_identical: String,
    /// Tasks whose output text differed between the arms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_differing_tasks: Vec<String>,
    /// Measured baseline rounds compared.
    #[serde(default)]
    pub spec_baseline_rounds: usize,
    /// Median absolute deviation of the per-round ratios of decode tok/s from their median
    /// (a ratio, like the speedup; 0 when every pair agrees).
    #[serde(default)]
    pub spec_decode_speedup_mad: Option<f64>,
    /// Round pairs (round i with speculation, round i without) that both had a decode clock:
    /// the sample count of the per-round ratios behind the min, max and MAD.
    #[serde(default)]
    pub spec_decode_speedup_pairs: usize,
}

/// `run` restricted to its level `i` (no A/B arm, no baseline).
fn one_level(run: &RunRecord, i: usize) -> RunRecord {
    RunRecord {
        id: run.id.clone(),
        started_utc: run.started_utc.clone(),
        status: run.status.clone(),
        command: Vec::new(),
        config: run.config.clone(),
        build: run.build.clone(),
        machine: run.machine.clone(),
        runtime: run.runtime.clone(),
        scheduler: run.scheduler,
        model: run.model.clone(),
        workload: run.workload.clone(),
        load: run.load.clone(),
        energy_na: None,
        energy_source: None,
        levels: run.levels.get(i).cloned().into_iter().collect(),
        summary: None,
        kind: super::kind::RunKind::Run,
        baseline: None,
        drafter: None,
    }
}

/// Per level of `spec`, the comparison with the same level of `base` (levels `base` has not
/// reached yet compare as empty).
pub fn compare(base: &RunRecord, spec: &RunRecord) -> Vec<VsBaseline> {
    (0..spec.levels.len())
        .map(|i| level(&one_level(base, i), &one_level(spec, i)))
        .collect()
}

fn level(base: &RunRecord, spec: &RunRecord) -> VsBaseline {
    let (fb, fs) = (round_figures(base), round_figures(spec));
    if fb.is_empty() || fs.is_empty() {
        return VsBaseline::default();
    }
    let col = |f: &[super::ab::RoundFigures], g: fn(&super::ab::RoundFigures) -> Option<f64>| {
        f.iter().filter_map(g).collect::<Vec<f64>>()
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let (db, ds) = (col(&fb, |f| f.decode_tok_s), col(&fs, |f| f.decode_tok_s));
    let pairs: Vec<f64> = fb
        .iter()
        .zip(&fs)
        .filter_map(|(b, s)| ratio(s.decode_tok_s, b.decode_tok_s))
        .collect();
    let changes = task_changes(base, spec);
    VsBaseline {
        spec_decode_speedup: ratio(median(&ds), median(&db)),
        spec_decode_speedup_min: min(&pairs),
        spec_decode_speedup_max: max(&pairs),
        spec_ttft_speedup: ratio(
            median(&col(&fb, |f| f.ttft_s)),
            median(&col(&fs, |f| f.ttft_s)),
        ),
        spec_completion_speedup: ratio(
            median(&col(&fb, |f| f.completion_s)),
            median(&col(&fs, |f| f.completion_s)),
        ),
        spec_outputs_identical: if changes.iter().all(|c| c.same_output) {
            "yes".into()
        } else {
            "no".into()
        },
        spec_differing_tasks: changes
            .into_iter()
            .filter(|c| !c.same_output)
            .map(|c| c.task)
            .collect(),
        spec_baseline_rounds: fb.len(),
        spec_decode_speedup_mad: mad(&pairs),
        spec_decode_speedup_pairs: pairs.len(),
    }
}
