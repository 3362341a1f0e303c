//! A/B runs in the record: each arm is an ordinary run (so `report` reads it) carrying an
//! [`AbArm`] that names the pair, the variable and its value, and per round what the verdict
//! needs beyond the samples (peak memory, the noise sentinel's flag). Turns two runs into the
//! verdict's input ([`super::ab`]). Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ab::{self, Metric, RoundFigures, TaskChange, Verdict};
use super::summary::summarize;
use super::{LevelRecord, RunRecord};
use crate::measure::sentinel::RoundSentinel;
use crate::workload::Outcome;

/// What makes a run one arm of an A/B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbArm {
    /// `A` or `B`.
    pub arm: String,
    /// Shared by both arms of one `ab`.
    pub pair: String,
    /// The varied key (`threads`, `prefill-chunk`, …) or `aa` for the noise check.
    pub vary: String,
    /// This arm's value of it.
    pub value: String,
    /// The metric expected to move.
    pub expect: Metric,
    /// Smallest relative change worth keeping.
    pub min_effect: f64,
    /// Why the variable may change outputs (none: it must not).
    pub drift_allowed: Option<String>,
    /// Per measured round, in the order of `levels[0].rounds` without warm-ups.
    pub rounds: Vec<ArmRound>,
    /// The verdict, stored on arm B once both arms ran.
    pub verdict: Option<Verdict>,
}

/// Per measured round of an arm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArmRound {
    /// Peak resident memory during the round (VmHWM after a reset), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// What else the machine did meanwhile (none where unreadable).
    pub sentinel: Option<RoundSentinel>,
    /// A fresh load of the arm's model just before the round, seconds (`--expect load` only:
    /// the page cache is warm, so this is the warm load clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_s: Option<f64>,
}

/// The verdict's figures of every measured round of the run's first level.
pub fn round_figures(run: &RunRecord) -> Vec<RoundFigures> {
    run.levels
        .first()
        .map_or_else(Vec::new, |l| level_figures(run, l))
}

/// The verdict's figures of every measured round of the run's level at `jobs` (none when the
/// run has no such level).
pub fn round_figures_at(run: &RunRecord, jobs: usize) -> Vec<RoundFigures> {
    run.levels
        .iter()
        .find(|l| l.jobs == jobs)
        .map_or_else(Vec::new, |l| level_figures(run, l))
}

fn level_figures(run: &RunRecord, level: &LevelRecord) -> Vec<RoundFigures> {
    // An A/B arm's per-round extras belong to its first (only) level.
    let first = run.levels.first().is_some_and(|f| std::ptr::eq(f, level));
    let extra = match (run.ab(), first) {
        (Some(a), true) => a.rounds.as_slice(),
        _ => &[],
    };
    level
        .rounds
        .iter()
        .filter(|r| !r.warmup)
        .enumerate()
        .map(|(i, r)| {
            let one = LevelRecord {
                jobs: level.jobs,
                peak_rss_bytes: None,
                peak_kv_bytes: 0,
                peak_state_bytes: 0,
                rounds: vec![r.clone()],
            };
            let s = summarize(&one);
            let x = extra.get(i);
            RoundFigures {
                decode_tok_s: s.tpot_median_s.filter(|t| *t > 0.0).map(|t| 1.0 / t),
                prefill_tok_s: s.prompt_tok_s,
                ttft_s: s.ttft_median_s,
                completion_s: s.completion_median_s,
                load_s: x.and_then(|x| x.load_s),
                peak_rss_bytes: x.and_then(|x| x.peak_rss_bytes).or(level.peak_rss_bytes),
                aggregate_tok_s: s.aggregate_tok_s,
                disturbed: x
                    .and_then(|x| x.sentinel.as_ref())
                    .or(r.sentinel.as_ref())
                    .is_some_and(|s| s.disturbed),
            }
        })
        .collect()
}

fn label(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail { .. } => "fail",
        Outcome::Abstain { .. } => "abstain",
    }
}

/// Per task: its measured outputs and the most frequent outcome.
fn by_task(run: &RunRecord) -> BTreeMap<String, (Vec<String>, String)> {
    let mut outs: BTreeMap<String, (Vec<String>, BTreeMap<&'static str, usize>)> = BTreeMap::new();
    for l in &run.levels {
        for t in l.rounds.iter().filter(|r| !r.warmup).flat_map(|r| &r.tasks) {
            let e = outs.entry(t.task.clone()).or_default();
            e.0.push(t.output.clone());
            *e.1.entry(label(&t.outcome)).or_insert(0) += 1;
        }
    }
    outs.into_iter()
        .map(|(k, (mut o, counts))| {
            o.sort();
            o.dedup();
            let top = counts
                .iter()
                .max_by_key(|(_, n)| **n)
                .map_or("", |(l, _)| *l);
            (k, (o, top.to_string()))
        })
        .collect()
}

/// Per task of either run: output identical (the same set of texts) and outcome in each.
pub fn task_changes(a: &RunRecord, b: &RunRecord) -> Vec<TaskChange> {
    let (ta, tb) = (by_task(a), by_task(b));
    let none = (Vec::new(), "absent".to_string());
    let mut keys: Vec<&String> = ta.keys().chain(tb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (oa, ca) = ta.get(k).unwrap_or(&none);
            let (ob, cb) = tb.get(k).unwrap_or(&none);
            TaskChange {
                task: k.clone(),
                same_output: oa == ob,
                outcome_a: ca.clone(),
                outcome_b: cb.clone(),
            }
        })
        .collect()
}

/// Passed ÷ attempted over the measured rounds of every level.
pub fn pass_rate(run: &RunRecord) -> Option<f64> {
    let s = run.summary();
    let (p, n) = s
        .levels
        .iter()
        .fold((0, 0), |(p, n), l| (p + l.passed, n + l.attempted));
    (n > 0).then(|| p as f64 / n as f64)
}

/// What the verdict is judged on besides the two runs.
#[derive(Debug, Clone)]
pub struct Judging {
    pub expect: Metric,
    pub min_effect: f64,
    pub drift_allowed: Option<String>,
    pub seed: u64,
    /// Looks planned and this look, 1-based (1 and 1: a fixed number of rounds).
    pub looks: usize,
    pub look: usize,
}

/// The A/B verdict of run `b` against run `a` (their first levels).
pub fn verdict(a: &RunRecord, b: &RunRecord, j: &Judging) -> Verdict {
    judge(a, b, j, round_figures(a), round_figures(b))
}

/// The verdict of run `b` against run `a` at their levels of `jobs` concurrent jobs.
pub fn verdict_at(a: &RunRecord, b: &RunRecord, j: &Judging, jobs: usize) -> Verdict {
    judge(
        a,
        b,
        j,
        round_figures_at(a, jobs),
        round_figures_at(b, jobs),
    )
}

fn judge(
    a: &RunRecord,
    b: &RunRecord,
    j: &Judging,
    fa: Vec<RoundFigures>,
    fb: Vec<RoundFigures>,
) -> Verdict {
    let tasks = task_changes(a, b);
    ab::judge(&ab::Input {
        expect: j.expect,
        a: &fa,
        b: &fb,
        min_effect: j.min_effect,
        drift_allowed: j.drift_allowed.clone(),
        tasks: &tasks,
        pass_rate_a: pass_rate(a),
        pass_rate_b: pass_rate(b),
        seed: j.seed,
        looks: j.looks,
        look: j.look,
    })
}
