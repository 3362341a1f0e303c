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
        tasks,
        steps,
        spec: super::spec_samples::spec_sample(events),
        timeline: super::timeline::timeline(events),
        sentinel: None,
        quiet_wait: None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::batching::FinishReason;
    use crate::workload::Outcome;

    /// A passed single-turn task of job 0 that hit its token limit.
    fn done(requests: Vec<RequestId>, text: &str) -> TaskDone {
        TaskDone {
            job: 0,
            task: "t".into(),
            requests,
            result: TaskResult {
                outcome: Outcome::Pass,
                turns: 1,
                tool_calls: vec![],
                final_text: text.into(),
            },
            hit_limit: true,
        }
    }

    fn ev(start: Instant, ms: u64, id: Option<RequestId>, kind: EventKind) -> Event {
        Event {
            at: start + Duration::from_millis(ms),
            id,
            kind,
        }
    }

    #[test]
    fn task_timings_come_from_events() {
        let s = Instant::now();
        let step = |seqs, p, d| EventKind::StepStart {
            seqs,
            prefill_tokens: p,
            decode_tokens: d,
        };
        let events = vec![
            ev(s, 0, Some(7), EventKind::Submitted { prompt_tokens: 10 }),
            ev(s, 5, Some(7), EventKind::Admitted),
            ev(s, 5, None, step(1, 10, 0)),
            ev(s, 25, Some(7), EventKind::Token { token: 1 }),
            ev(s, 25, None, EventKind::StepEnd { forward_us: 19_000 }),
            ev(s, 25, None, step(1, 0, 1)),
            ev(s, 35, Some(7), EventKind::Token { token: 2 }),
            ev(s, 35, None, EventKind::StepEnd { forward_us: 9_000 }),
            ev(s, 35, None, step(1, 0, 1)),
            ev(s, 55, Some(7), EventKind::Token { token: 3 }),
            ev(
                s,
                55,
                Some(7),
                EventKind::Finished {
                    reason: FinishReason::Length,
                    output_tokens: 3,
                },
            ),
            ev(s, 56, None, EventKind::StepEnd { forward_us: 19_000 }),
        ];
        let done = done(vec![7], "abc");
        let r = round_record(&events, s, &[done]);
        let t = &r.tasks[0];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(t.queue_wait_s, 0.005));
        assert!(close(t.ttft_s.unwrap(), 0.025));
        assert!(close(t.completion_s, 0.055));
        assert!(close(t.tpot_s.unwrap(), 0.015), "(55 - 25) / 2 ms");
        assert!(close(t.prompt_tok_s.unwrap(), 10.0 / 0.020));
        assert_eq!(t.gaps_ms.len(), 2);
        assert!(close(t.gaps_ms[1], 20.0));
        assert_eq!(r.steps.len(), 3);
        assert!(close(r.forward_s, 0.047));
        assert!(close(r.wall_s, 0.056));
        assert_eq!(
            (r.steps[0].prefill_tokens, r.steps[1].decode_tokens),
            (10, 1)
        );
    }

    #[test]
    fn a_reused_prefix_is_counted_and_left_out_of_the_prefill_speed() {
        let s = Instant::now();
        let events = vec![
            ev(s, 0, Some(3), EventKind::Submitted { prompt_tokens: 40 }),
            ev(s, 0, Some(3), EventKind::Admitted),
            ev(s, 0, Some(3), EventKind::PrefixReused { tokens: 32 }),
            ev(s, 10, Some(3), EventKind::Token { token: 1 }),
            ev(
                s,
                10,
                Some(3),
                EventKind::Finished {
                    reason: FinishReason::Length,
                    output_tokens: 1,
                },
            ),
        ];
        let done = done(vec![3], "x");
        let t = &round_record(&events, s, &[done]).tasks[0];
        assert_eq!((t.reused_tokens, t.first_turn_reused), (32, 32));
        assert!(
            (t.prompt_tok_s.unwrap() - 8.0 / 0.010).abs() < 1e-6,
            "8 computed tokens in 10 ms"
        );
    }
}
