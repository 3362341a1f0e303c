//! The raw samples of a run read from a file, range-checked before any figure is derived from
//! them: a results file is hostile input, so a count no run could record (a step of 2^32
//! sequences) or a negative or infinite time is refused naming where it sits, instead of being
//! rendered as a figure. The bounds are those of the command line (`--jobs`) and the model
//! loader (the longest context), generous for any real run. Beyond the samples, every stored
//! figure whose name says it is a time, rate, size or share (`…_s`, `…_ms…`, `…tok_s…`,
//! `…bytes…`, `…fraction`, `…share`, `joules…`) anywhere in a run — summaries, prefill cells,
//! spec-cost steps, cold starts, drafter and load splits — is checked not negative, so no
//! presenter shows a negative duration read from a file.

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

/// Refuses a negative time, rate, size or share anywhere in `run`, naming where it sits.
pub(crate) fn check_magnitudes(run: &RunRecord) -> Result<(), String> {
    let value = serde_json::to_value(run).map_err(|e| e.to_string())?;
    walk(&value, &mut String::new(), false).map_err(|at| {
        format!(
            "run {}: {at} is negative; a time, rate, size or share never is (the record was \
             edited or damaged)",
            run.id
        )
    })
}

/// Whether a field named `key` holds a magnitude: one of its words is a unit or a share.
fn is_magnitude(key: &str) -> bool {
    key.split('_').any(|w| {
        matches!(
            w,
            "s" | "ms" | "bytes" | "tok" | "fraction" | "share" | "joules" | "seconds"
        )
    })
}

/// Walks `v` (at path `at`); `magnitude` when the nearest field name says so. The path of the
/// first negative number is the error.
fn walk(v: &serde_json::Value, at: &mut String, magnitude: bool) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::Number(n) if magnitude && n.as_f64().is_some_and(|x| x < 0.0) => {
            Err(format!("{at} ({n})"))
        }
        Value::Array(items) => {
            let len = at.len();
            for (i, item) in items.iter().enumerate() {
                at.push_str(&format!("[{i}]"));
                walk(item, at, magnitude)?;
                at.truncate(len);
            }
            Ok(())
        }
        Value::Object(fields) => {
            let len = at.len();
            for (k, item) in fields {
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(k);
                walk(item, at, is_magnitude(k))?;
                at.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
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
