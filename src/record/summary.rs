//! The derived figures of a run, computed once from the raw samples of the measured rounds
//! (warm-up rounds excluded) and stored in the record beside them, so scripts read the same
//! numbers the sheet prints. Pure: records in, summaries out.
//!
//! Definitions (also in `sweep --help`):
//! - attempted: tasks started in measured rounds; completed: tasks that ended with an answer
//!   (pass or fail), abstentions excluded; failures: tasks whose answer failed validation.
//! - TTFT: submission → first output token. Completion: submission → last token.
//! - per-job tok/s: a job's output tokens ÷ (its last finish − its first submission), per round.
//! - aggregate tok/s: all output tokens of a round ÷ the round's wall window.
//! - per-job busy tok/s: a job's output tokens ÷ the summed completion times of its tasks.
//! - tail: p95 with ≥ 20 samples, else the slowest sample.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::verdict::{self, LevelVerdict, RunVerdict};
use super::{LevelRecord, RoundRecord, RunRecord};
use crate::measure::clocks::{self, Warmup};
use crate::measure::stats::{median, min, tail};
use crate::workload::Outcome;

/// One row of the sheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    pub jobs: usize,
    pub rounds: usize,
    pub attempted: usize,
    pub completed: usize,
    pub passed: usize,
    pub failed: usize,
    pub abstained: usize,
    /// Median TTFT, seconds.
    pub ttft_median_s: Option<f64>,
    /// TTFT tail (p95 or slowest, see `tail_kind`), seconds.
    pub ttft_tail_s: Option<f64>,
    pub completion_median_s: Option<f64>,
    pub completion_tail_s: Option<f64>,
    /// "p95" or "slowest".
    pub tail_kind: String,
    /// Median over (job, round) samples, tokens/s.
    pub job_tok_s_median: Option<f64>,
    /// The slowest job: smallest of the per-job medians over rounds, tokens/s.
    pub job_tok_s_slowest: Option<f64>,
    /// Median over rounds, tokens/s.
    pub aggregate_tok_s: Option<f64>,
    /// Median of first-turn prompt tokens/s over tasks (the prefill clock's speed).
    pub prompt_tok_s: Option<f64>,
    /// Median time per output token over tasks (the decode clock), seconds.
    pub tpot_median_s: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    /// Most GPU memory the process held in any measured round, bytes (absent on the CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_device_bytes: Option<u64>,
    pub peak_kv_bytes: u64,
    /// Largest recurrent-state bytes held at once (hybrid models; absent when 0).
    #[serde(default, skip_serializing_if = "super::is_zero_u64")]
    pub peak_state_bytes: u64,
    /// Decode steps by sequences carried: seqs → steps.
    pub decode_steps_by_seqs: BTreeMap<usize, usize>,
    /// Fraction of decode steps that carried `jobs` or more sequences.
    pub full_step_fraction: Option<f64>,
    /// Wall time outside forward passes and the drafter ÷ wall time, over measured rounds
    /// (records before the drafter was counted apart included it here).
    pub harness_fraction: Option<f64>,
    /// The drafter's own time ÷ wall time, over measured rounds (none without speculation).
    #[serde(default)]
    pub drafter_fraction: Option<f64>,
    /// Median forward time of steps that only decoded, milliseconds.
    pub decode_step_ms_median: Option<f64>,
    /// Steps that carried prompt tokens ÷ wall time, over measured rounds (a prefill chunk
    /// stalls every running sequence's next token for its step).
    pub prefill_step_fraction: Option<f64>,
    /// Energy per output token, joules (none without a counter).
    pub joules_per_token: Option<f64>,
    /// Speculative decoding's figures (empty without speculation).
    #[serde(default, flatten)]
    pub spec: super::spec::SpecFigures,
    /// The scheduler's figures (empty for records without a timeline).
    #[serde(default, flatten)]
    pub profile: super::profile::ProfileFigures,
    /// Cold and cached prompts apart (every prompt is cold without `--prefix-cache on`).
    #[serde(default, flatten)]
    pub prefix: super::prefix::PrefixFigures,
    /// Per-job busy speed: a job's output tokens ÷ the time its tasks were in flight, per
    /// round; median over (job, round), tokens/s.
    #[serde(default)]
    pub job_busy_tok_s_median: Option<f64>,
    /// Whether the machine was quiet: the noise sentinel's figures over the measured rounds.
    #[serde(default, flatten)]
    pub quiet: super::quiet::QuietFigures,
    /// Whether the decode steps reached a steady state, and from which step.
    #[serde(default, flatten)]
    pub steady: super::steady::SteadyFigures,
}

fn measured(level: &LevelRecord) -> impl Iterator<Item = &RoundRecord> {
    level.rounds.iter().filter(|r| !r.warmup)
}

/// Per-job tok/s of one round, by job index.
pub(crate) fn job_rates(round: &RoundRecord) -> BTreeMap<usize, f64> {
    let mut span: BTreeMap<usize, (f64, f64, usize)> = BTreeMap::new();
    for t in &round.tasks {
        let e = span.entry(t.job).or_insert((f64::MAX, 0.0, 0));
        e.0 = e.0.min(t.start_s);
        e.1 = e.1.max(t.start_s + t.completion_s);
        e.2 += t.output_tokens;
    }
    span.into_iter()
        .filter_map(|(j, (a, b, n))| clocks::rate(n, b - a).map(|r| (j, r)))
        .collect()
}

/// Summarises one level.
pub fn summarize(level: &LevelRecord) -> LevelSummary {
    let rounds: Vec<&RoundRecord> = measured(level).collect();
    let tasks: Vec<_> = rounds.iter().flat_map(|r| r.tasks.iter()).collect();
    let count = |f: fn(&Outcome) -> bool| tasks.iter().filter(|t| f(&t.outcome)).count();
    let passed = count(|o| matches!(o, Outcome::Pass));
    let failed = count(|o| matches!(o, Outcome::Fail { .. }));
    let abstained = count(|o| matches!(o, Outcome::Abstain { .. }));
    let ttft: Vec<f64> = tasks.iter().filter_map(|t| t.ttft_s).collect();
    let completion: Vec<f64> = tasks.iter().map(|t| t.completion_s).collect();
    let mut per_job: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for r in &rounds {
        for (j, v) in job_rates(r) {
            per_job.entry(j).or_default().push(v);
        }
    }
    let all_rates: Vec<f64> = per_job.values().flatten().copied().collect();
    let job_medians: Vec<f64> = per_job.values().filter_map(|v| median(v)).collect();
    let aggregate: Vec<f64> = rounds
        .iter()
        .filter_map(|r| clocks::rate(r.tasks.iter().map(|t| t.output_tokens).sum(), r.wall_s))
        .collect();
    let mut hist = BTreeMap::new();
    for s in rounds
        .iter()
        .flat_map(|r| &r.steps)
        .filter(|s| s.decode_tokens > 0)
    {
        *hist.entry(s.seqs).or_insert(0) += 1;
    }
    let decode_steps: usize = hist.values().sum();
    let full: usize = hist.range(level.jobs..).map(|(_, n)| n).sum();
    let wall: f64 = rounds.iter().map(|r| r.wall_s).sum();
    let forward: f64 = rounds.iter().map(|r| r.forward_s).sum();
    let draft: f64 = rounds.iter().map(|r| r.spec.draft_s).sum();
    let steps = || rounds.iter().flat_map(|r| &r.steps);
    let decode_only_ms: Vec<f64> = steps()
        .filter(|s| s.prefill_tokens == 0 && s.decode_tokens > 0)
        .map(|s| s.forward_s * 1e3)
        .collect();
    let prefill_s: f64 = steps()
        .filter(|s| s.prefill_tokens > 0)
        .map(|s| s.step_s)
        .sum();
    let tokens: usize = tasks.iter().map(|t| t.output_tokens).sum();
    let energy: Option<f64> = rounds.iter().map(|r| r.energy_j).sum();
    LevelSummary {
        jobs: level.jobs,
        rounds: rounds.len(),
        attempted: tasks.len(),
        completed: passed + failed,
        passed,
        failed,
        abstained,
        ttft_median_s: median(&ttft),
        ttft_tail_s: tail(&ttft).map(|t| t.0),
        completion_median_s: median(&completion),
        completion_tail_s: tail(&completion).map(|t| t.0),
        tail_kind: tail(&completion).map_or("slowest", |t| t.1).to_string(),
        job_tok_s_median: median(&all_rates),
        job_tok_s_slowest: min(&job_medians),
        aggregate_tok_s: median(&aggregate),
        prompt_tok_s: median(
            &tasks
                .iter()
                .filter_map(|t| t.prompt_tok_s)
                .collect::<Vec<_>>(),
        ),
        tpot_median_s: median(&tasks.iter().filter_map(|t| t.tpot_s).collect::<Vec<_>>()),
        peak_rss_bytes: level.peak_rss_bytes,
        peak_device_bytes: rounds.iter().filter_map(|r| r.peak_device_bytes).max(),
        peak_kv_bytes: level.peak_kv_bytes,
        peak_state_bytes: level.peak_state_bytes,
        decode_steps_by_seqs: hist,
        full_step_fraction: (decode_steps > 0).then(|| full as f64 / decode_steps as f64),
        harness_fraction: (wall > 0.0).then(|| (wall - forward - draft).max(0.0) / wall),
        drafter_fraction: (wall > 0.0 && draft > 0.0).then(|| draft / wall),
        decode_step_ms_median: median(&decode_only_ms),
        prefill_step_fraction: (wall > 0.0).then(|| prefill_s / wall),
        joules_per_token: energy.filter(|_| tokens > 0).map(|e| e / tokens as f64),
        spec: super::spec::SpecFigures::of(
            &rounds.iter().fold(Default::default(), |mut a, r| {
                super::spec::SpecSample::add(&mut a, &r.spec);
                a
            }),
            tokens,
        ),
        profile: Default::default(),
        prefix: super::prefix::PrefixFigures::of(tasks.iter().copied()),
        job_busy_tok_s_median: median(
            &rounds
                .iter()
                .flat_map(|r| job_busy_rates(r).into_values())
                .collect::<Vec<_>>(),
        ),
        quiet: super::quiet::QuietFigures::of(rounds.iter().copied()),
        steady: super::steady::SteadyFigures::of(rounds.iter().copied()),
    }
}

/// Per-job busy speed of one round, by job index: output tokens ÷ the summed completion times
/// of its tasks (a job runs one task at a time, so they never overlap).
pub(crate) fn job_busy_rates(round: &RoundRecord) -> BTreeMap<usize, f64> {
    let mut busy: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
    for t in &round.tasks {
        let e = busy.entry(t.job).or_insert((0.0, 0));
        e.0 += t.completion_s;
        e.1 += t.output_tokens;
    }
    busy.into_iter()
        .filter_map(|(j, (s, n))| clocks::rate(n, s).map(|r| (j, r)))
        .collect()
}

/// Kernel warm-up: the first pure-decode step of the first round against the pure-decode steps
/// with the same number of sequences in the measured rounds ([`clocks::kernel_warmup`]).
pub(crate) fn kernel_warmup(level: &LevelRecord) -> Option<Warmup> {
    let first = level.rounds.first()?;
    let s0 = first
        .steps
        .iter()
        .find(|s| s.prefill_tokens == 0 && s.decode_tokens > 0)?;
    let steady: Vec<f64> = measured(level)
        .flat_map(|r| &r.steps)
        .filter(|s| s.prefill_tokens == 0 && s.seqs == s0.seqs)
        .map(|s| s.forward_s)
        .collect();
    clocks::kernel_warmup(s0.forward_s, &steady)
}

/// The first TTFT the process produced (first task of the first round), seconds.
pub(crate) fn first_ttft_s(level: &LevelRecord) -> Option<f64> {
    let r = level.rounds.first()?;
    r.tasks
        .iter()
        .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
        .and_then(|t| t.ttft_s)
}

/// The first request's own task, later: its TTFT in the level's measured rounds (the first
/// request itself left out), median, seconds.
pub(crate) fn first_prompt_later_ttft_s(level: &LevelRecord) -> Option<f64> {
    let first = level
        .rounds
        .first()?
        .tasks
        .iter()
        .min_by(|a, b| a.start_s.total_cmp(&b.start_s))?;
    let later: Vec<f64> = measured(level)
        .flat_map(|r| &r.tasks)
        .filter(|t| t.task == first.task && !std::ptr::eq(*t, first))
        .filter_map(|t| t.ttft_s)
        .collect();
    median(&later)
}

impl LevelSummary {
    /// A level with no measured samples.
    #[cfg(test)]
    pub(crate) fn empty(jobs: usize) -> Self {
        Self {
            jobs,
            rounds: 0,
            attempted: 0,
            completed: 0,
            passed: 0,
            failed: 0,
            abstained: 0,
            ttft_median_s: None,
            ttft_tail_s: None,
            completion_median_s: None,
            completion_tail_s: None,
            tail_kind: "slowest".into(),
            job_tok_s_median: None,
            job_tok_s_slowest: None,
            aggregate_tok_s: None,
            prompt_tok_s: None,
            tpot_median_s: None,
            peak_rss_bytes: None,
            peak_device_bytes: None,
            peak_kv_bytes: 0,
            peak_state_bytes: 0,
            decode_steps_by_seqs: BTreeMap::new(),
            full_step_fraction: None,
            harness_fraction: None,
            drafter_fraction: None,
            decode_step_ms_median: None,
            prefill_step_fraction: None,
            joules_per_token: None,
            spec: Default::default(),
            profile: Default::default(),
            prefix: Default::default(),
            job_busy_tok_s_median: None,
            quiet: Default::default(),
            steady: Default::default(),
        }
    }
}

/// Everything derived from a run: the sheet's rows, the verdict per level and overall, and the
/// run-wide clocks. Stored in the record (`summary`) and rendered by every format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// One row per concurrency level, in the order run.
    pub levels: Vec<LevelSummary>,
    /// Each level against the workload's criteria.
    pub verdicts: Vec<LevelVerdict>,
    pub verdict: RunVerdict,
    /// Kernel warm-up of the first level (none when it had too few steady steps).
    pub kernel_warmup: Option<Warmup>,
    /// The first TTFT the process produced (first task of the first round), seconds.
    pub first_ttft_s: Option<f64>,
    /// The first request of the process as a person sees it: load + first TTFT, seconds (the
    /// page cache as it was: not a cold start, which is `tokfire cold`).
    pub cold_first_token_s: Option<f64>,
    /// The TTFT of the first request's own task in the first level's later measured requests,
    /// median, seconds: the same prompt once the process is warm (absent in older records).
    #[serde(default)]
    pub first_prompt_later_ttft_s: Option<f64>,
    /// Bytes the process read from disk: the load and every round, warm-up included (none when
    /// any of them was not measured; summaries written before it was stored get it on reading).
    #[serde(default)]
    pub disk_read_bytes: Option<u64>,
}

/// Bytes read from disk by the load and every round, or none when any reading is missing.
pub(crate) fn disk_read(run: &RunRecord) -> Option<u64> {
    run.levels
        .iter()
        .flat_map(|l| &l.rounds)
        .map(|r| r.disk_read_bytes)
        .sum::<Option<u64>>()
        .map(|b| b + run.load.disk_read_bytes.unwrap_or(0))
}

/// Derives the summary of a run; `headroom` is the margin a comfortable level should keep.
pub fn summarize_run(run: &RunRecord) -> RunSummary {
    let mut levels: Vec<LevelSummary> = run
        .levels
        .iter()
        .map(|l| LevelSummary {
            profile: super::profile::figures(&measured(l).collect::<Vec<_>>(), &run.scheduler),
            ..summarize(l)
        })
        .collect();
    if let Some(base) = &run.baseline {
        for (l, v) in levels.iter_mut().zip(super::baseline::compare(base, run)) {
            l.spec.baseline = v;
        }
    }
    let verdicts: Vec<LevelVerdict> = levels
        .iter()
        .map(|s| verdict::judge(s, &run.workload.criteria, run.config.headroom))
        .collect();
    let verdict = verdict::overall(&verdicts, outputs_identical(run));
    let first = run.levels.first();
    let first_ttft_s = first.and_then(first_ttft_s);
    RunSummary {
        levels,
        verdicts,
        verdict,
        kernel_warmup: first.and_then(kernel_warmup),
        first_ttft_s,
        cold_first_token_s: first_ttft_s.map(|t| t + run.load.seconds),
        first_prompt_later_ttft_s: first.and_then(first_prompt_later_ttft_s),
        disk_read_bytes: disk_read(run),
    }
}

/// True when at least two levels ran and every task gave the same output in every measured
/// round of every level (greedy decoding: the load did not change what the model said).
pub(crate) fn outputs_identical(run: &RunRecord) -> bool {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut levels = 0;
    for level in &run.levels {
        let mut any = false;
        for t in measured(level).flat_map(|r| &r.tasks) {
            any = true;
            if *seen.entry(&t.task).or_insert(&t.output) != t.output.as_str() {
                return false;
            }
        }
        levels += usize::from(any);
    }
    levels >= 2
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
