//! The raw samples of a run read from a file, range-checked before any figure is derived from
//! them: a results file is hostile input, so a count no run could record (a step of 2^32
//! sequences) or a negative or infinite time is refused naming where it sits, instead of being
//! rendered as a figure. The bounds are those of the command line (`--jobs`) and the model
//! loader (the longest context), generous for any real run.

use super::{LevelRecord, RoundRecord, RunRecord, StepSample, TaskSample};
use crate::config::run::MAX_JOBS;

/// Most tokens one step or one request may count (the longest context a model may declare).
const MAX_TOKENS: usize = 1 << 24;

/// Checks every level of `run` and of its baseline arm.
pub(crate) fn check(run: &RunRecord) -> Result<(), String> {
    let arms = std::iter::once(run).chain(run.baseline.as_deref());
    for (arm, levels) in arms.map(|r| (r.id.as_str(), &r.levels)) {
        for (li, level) in levels.iter().enumerate() {
            check_level(level).map_err(|e| {
                format!(
                    "run {arm}, level {}: {e}; the record was edited or damaged",
                    li + 1
                )
            })?;
        }
    }
    Ok(())
}

fn check_level(level: &LevelRecord) -> Result<(), String> {
    if !(1..=MAX_JOBS).contains(&level.jobs) {
        return Err(format!("jobs {} is not 1 to {MAX_JOBS}", level.jobs));
    }
    for (ri, round) in level.rounds.iter().enumerate() {
        check_round(round).map_err(|e| format!("round {}: {e}", ri + 1))?;
    }
    Ok(())
}

fn check_round(r: &RoundRecord) -> Result<(), String> {
    seconds("wall_s", r.wall_s)?;
    seconds("forward_s", r.forward_s)?;
    for (i, s) in r.steps.iter().enumerate() {
        check_step(s).map_err(|e| format!("step {}: {e}", i + 1))?;
    }
    for (i, t) in r.tasks.iter().enumerate() {
        check_task(t).map_err(|e| format!("task sample {}: {e}", i + 1))?;
    }
    Ok(())
}

fn check_step(s: &StepSample) -> Result<(), String> {
    for (name, v) in [
        ("at_s", s.at_s),
        ("forward_s", s.forward_s),
        ("step_s", s.step_s),
    ] {
        seconds(name, v)?;
    }
    count("seqs", s.seqs, MAX_JOBS.max(MAX_TOKENS))?;
    count("prefill_tokens", s.prefill_tokens, MAX_TOKENS)?;
    count("decode_tokens", s.decode_tokens, MAX_TOKENS)
}

fn check_task(t: &TaskSample) -> Result<(), String> {
    let times = [
        ("start_s", Some(t.start_s)),
        ("queue_wait_s", Some(t.queue_wait_s)),
        ("ttft_s", t.ttft_s),
        ("completion_s", Some(t.completion_s)),
        ("tpot_s", t.tpot_s),
    ];
    for (name, v) in times {
        if let Some(v) = v {
            seconds(name, v)?;
        }
    }
    for (name, v) in [
        ("prompt_tokens", t.prompt_tokens),
        ("reused_tokens", t.reused_tokens),
        ("output_tokens", t.output_tokens),
        ("turns", t.turns),
    ] {
        count(name, v, MAX_TOKENS)?;
    }
    match t.gaps_ms.iter().find(|g| !(g.is_finite() && **g >= 0.0)) {
        Some(g) => Err(format!("an inter-token gap of {g} ms")),
        None => Ok(()),
    }
}

/// A stored time: finite and not negative.
fn seconds(name: &str, v: f64) -> Result<(), String> {
    match v.is_finite() && v >= 0.0 {
        true => Ok(()),
        false => Err(format!(
            "{name} {v} is not a time (finite, 0 or more seconds)"
        )),
    }
}

fn count(name: &str, v: usize, max: usize) -> Result<(), String> {
    match v <= max {
        true => Ok(()),
        false => Err(format!("{name} {v} is more than {max}")),
    }
}
