//! Turns a round's engine events into raw samples: per task (queue wait, TTFT, completion,
//! TPOT, token gaps, outcome) and per step (composition, forward time). Pure: events in,
//! record out, so it is tested with hand-made event lists.

use std::collections::HashMap;
use std::time::Instant;

use crate::engine::batching::{Event, EventKind};
use crate::engine::scheduler::RequestId;
use crate::record::{RoundRecord, StepSample, TaskSample};
use crate::workload::TaskResult;

/// A task a job finished, with the engine requests of its turns.
#[derive(Debug, Clone)]
pub(crate) struct TaskDone {
    pub job: usize,
    pub task: String,
    pub requests: Vec<RequestId>,
    pub result: TaskResult,
    pub hit_limit: bool,
}

/// One request's timeline, seconds after the round start.
#[derive(Debug, Default, Clone)]
struct Timeline {
    submitted: f64,
    admitted: Option<f64>,
    prompt_tokens: usize,
    /// Prompt tokens copied from the prefix cache at its first admission.
    reused: usize,
    tokens: Vec<f64>,
    finished: Option<f64>,
}

fn secs(at: Instant, start: Instant) -> f64 {
    at.saturating_duration_since(start).as_secs_f64()
}

fn timelines(events: &[Event], start: Instant) -> HashMap<RequestId, Timeline> {
    let mut map: HashMap<RequestId, Timeline> = HashMap::new();
    for ev in events {
        let Some(id) = ev.id else { continue };
        let t = secs(ev.at, start);
        let tl = map.entry(id).or_default();
        match ev.kind {
            EventKind::Submitted { prompt_tokens } => {
                tl.submitted = t;
                tl.prompt_tokens = prompt_tokens;
            }
            EventKind::Admitted => {
                tl.admitted.get_or_insert(t);
            }
            EventKind::PrefixReused { tokens } if tl.tokens.is_empty() && tl.reused == 0 => {
                tl.reused = tokens;
            }
            EventKind::Token { .. } => tl.tokens.push(t),
            EventKind::Finished { .. } => tl.finished = Some(t),
            _ => {}
        }
    }
    map
}

/// Steps from StepStart/StepEnd pairs.
pub(crate) fn steps(events: &[Event], start: Instant) -> Vec<StepSample> {
    let mut out = Vec::new();
    let mut open: Option<(f64, usize, usize, usize)> = None;
    for ev in events {
        let t = secs(ev.at, start);
        match ev.kind {
            EventKind::StepStart {
                seqs,
                prefill_tokens,
                decode_tokens,
            } => open = Some((t, seqs, prefill_tokens, decode_tokens)),
            EventKind::StepEnd { forward_us } => {
                if let Some((at, seqs, prefill, decode)) = open.take() {
                    out.push(StepSample {
                        at_s: at,
                        seqs,
                        prefill_tokens: prefill,
                        decode_tokens: decode,
                        forward_s: forward_us as f64 / 1e6,
                        step_s: t - at,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

fn task_sample(done: &TaskDone, lines: &HashMap<RequestId, Timeline>) -> TaskSample {
    let turns: Vec<&Timeline> = done.requests.iter().filter_map(|r| lines.get(r)).collect();
    let first = turns.first().copied().cloned().unwrap_or_default();
    let start = first.submitted;
    let end = turns
        .iter()
        .filter_map(|t| t.finished)
        .fold(start, f64::max);
    let ttft = turns
        .iter()
        .find_map(|t| t.tokens.first())
        .map(|t| t - start);
    let output_tokens: usize = turns.iter().map(|t| t.tokens.len()).sum();
    let completion = end - start;
    let prompt_tok_s = match (first.admitted, first.tokens.first()) {
        (Some(a), Some(f)) if *f > a => {
            Some(first.prompt_tokens.saturating_sub(first.reused) as f64 / (f - a))
        }
        _ => None,
    };
    let tpot = match ttft {
        Some(ttft) if output_tokens >= 2 => Some((completion - ttft) / (output_tokens - 1) as f64),
        _ => None,
    };
    TaskSample {
        job: done.job,
        task: done.task.clone(),
        turns: done.requests.len(),
        start_s: start,
        queue_wait_s: first.admitted.map_or(0.0, |a| a - start),
        ttft_s: ttft,
        completion_s: completion,
        prompt_tokens: turns.iter().map(|t| t.prompt_tokens).sum(),
        reused_tokens: turns.iter().map(|t| t.reused).sum(),
        first_turn_reused: first.reused,
        output_tokens,
        prompt_tok_s,
        tpot_s: tpot,
        gaps_ms: turns
            .iter()
            .flat_map(|t| t.tokens.windows(2).map(|w| (w[1] - w[0]) * 1e3))
            .collect(),
        hit_limit: done.hit_limit,
        outcome: done.result.outcome.clone(),
        tool_calls: done.result.tool_calls.clone(),
        output: done.result.final_text.clone(),
    }
}

/// The round's record (index and warm-up flag are set by the caller).
pub(crate) fn round_record(events: &[Event], start: Instant, done: &[TaskDone]) -> RoundRecord {
    let lines = timelines(events, start);
    let mut tasks: Vec<TaskSample> = done.iter().map(|d| task_sample(d, &lines)).collect();
    tasks.sort_by(|a, b| {
        (a.job, a.start_s)
            .partial_cmp(&(b.job, b.start_s))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let steps = steps(events, start);
    let wall = events.last().map_or(0.0, |e| secs(e.at, start));
    RoundRecord {
        index: 0,
        warmup: false,
        wall_s: wall,
        forward_s: steps.iter().map(|s| s.forward_s).sum(),
        disk_read_bytes: None,
        energy_j: None,
        peak_device_bytes: None,
        tasks,
        steps,
        spec: super::spec_samples::spec_sample(events),
        timeline: super::timeline::timeline(events),
        sentinel: None,
        quiet_wait: None,
    }
}

#[cfg(test)]
#[path = "samples_tests.rs"]
mod tests;
