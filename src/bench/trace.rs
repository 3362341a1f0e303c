//! A Chrome trace (the `chrome://tracing` / Perfetto JSON format) of a whole run, built from the
//! engine's events: one process per concurrency level, with a track of rounds, a track of engine
//! steps (with their composition, the planner's decision and the drafter's span), counters of the
//! queue and the KV tokens held, and one track per job holding each request's queue, prefill and
//! decode spans, its preemptions and the prompt tokens it took from the prefix cache. Times are
//! microseconds since the run's first round started.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{json, Value};

use crate::engine::batching::{Event, EventKind};
use crate::engine::scheduler::RequestId;

/// Trace events collected round by round.
pub(crate) struct Trace {
    origin: Option<Instant>,
    events: Vec<Value>,
}

fn span(name: &str, pid: usize, tid: usize, from: f64, to: f64, args: Value) -> Value {
    json!({"name": name, "ph": "X", "pid": pid, "tid": tid, "ts": from, "dur": (to - from).max(0.0), "args": args})
}

fn counter(name: &str, pid: usize, at: f64, args: Value) -> Value {
    json!({"name": name, "ph": "C", "pid": pid, "tid": 0, "ts": at, "args": args})
}

fn instant(name: &str, pid: usize, tid: usize, at: f64, args: Value) -> Value {
    json!({"name": name, "ph": "i", "s": "t", "pid": pid, "tid": tid, "ts": at, "args": args})
}

fn meta(kind: &str, pid: usize, tid: usize, name: String) -> Value {
    json!({"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
}

/// One request's marks, µs.
struct Marks {
    submitted: f64,
    admitted: Option<f64>,
    first: Option<f64>,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    pub(crate) fn new() -> Self {
        Self {
            origin: None,
            events: Vec::new(),
        }
    }

    /// Names level `level` (1-based) and its tracks.
    pub(crate) fn level(&mut self, level: usize, jobs: usize) {
        self.events.push(meta(
            "process_name",
            level,
            0,
            format!("level {level}: {jobs} jobs"),
        ));
        self.events.push(meta(
            "thread_name",
            level,
            0,
            "rounds and engine steps".into(),
        ));
        for j in 0..jobs {
            self.events
                .push(meta("thread_name", level, j + 1, format!("job {j}")));
        }
    }

    /// Adds one round of level `level`; `job_of` maps request ids to job indices.
    pub(crate) fn round(
        &mut self,
        level: usize,
        label: &str,
        events: &[Event],
        job_of: &HashMap<RequestId, usize>,
    ) {
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return;
        };
        let origin = *self.origin.get_or_insert(first.at);
        let us = |at: Instant| at.saturating_duration_since(origin).as_secs_f64() * 1e6;
        self.events
            .push(span(label, level, 0, us(first.at), us(last.at), json!({})));
        let mut step: Option<(f64, Value)> = None;
        let mut req: HashMap<RequestId, Marks> = HashMap::new();
        for ev in events {
            let t = us(ev.at);
            match (&ev.kind, ev.id) {
                (
                    EventKind::StepStart {
                        seqs,
                        prefill_tokens,
                        decode_tokens,
                    },
                    _,
                ) => {
                    step = Some((
                        t,
                        json!({"seqs": seqs, "prefill_tokens": prefill_tokens, "decode_tokens": decode_tokens}),
                    ))
                }
                (EventKind::StepPlan(plan), _) => {
                    if let Some((_, args)) = step.as_mut() {
                        args["plan"] = json!(plan);
                    }
                    let queue = json!({"running": plan.running, "waiting": plan.waiting});
                    self.events.push(counter("queue", level, t, queue));
                    let kv = json!({"tokens": plan.kv_tokens});
                    self.events.push(counter("kv held", level, t, kv));
                }
                (EventKind::Drafted { seqs, draft_us }, _) => {
                    let from = t - *draft_us as f64;
                    let args = json!({"seqs": seqs});
                    self.events.push(span("draft", level, 0, from, t, args));
                }
                (EventKind::Verified { proposed, accepted }, _) => {
                    if let Some((_, args)) = step.as_mut() {
                        let add = |v: &Value, n: usize| json!(v.as_u64().unwrap_or(0) + n as u64);
                        args["proposed"] = add(&args["proposed"], *proposed);
                        args["accepted"] = add(&args["accepted"], *accepted);
                    }
                }
                (EventKind::Preempted, Some(id)) => {
                    let tid = job_of.get(&id).map_or(0, |j| j + 1);
                    let args = json!({"request": id});
                    self.events.push(instant("preempted", level, tid, t, args));
                }
                (EventKind::PrefixReused { tokens }, Some(id)) => {
                    let tid = job_of.get(&id).map_or(0, |j| j + 1);
                    let args = json!({"request": id, "tokens": tokens});
                    self.events
                        .push(instant("prefix reused", level, tid, t, args));
                }
                (EventKind::StepEnd { forward_us }, _) => {
                    if let Some((from, mut args)) = step.take() {
                        args["forward_us"] = json!(forward_us);
                        self.events.push(span("step", level, 0, from, t, args));
                    }
                }
                (EventKind::Submitted { .. }, Some(id)) => {
                    req.insert(
                        id,
                        Marks {
                            submitted: t,
                            admitted: None,
                            first: None,
                        },
                    );
                }
                (EventKind::Admitted, Some(id)) => {
                    if let Some(m) = req.get_mut(&id) {
                        m.admitted.get_or_insert(t);
                    }
                }
                (EventKind::Token { .. }, Some(id)) => {
                    if let Some(m) = req.get_mut(&id) {
                        m.first.get_or_insert(t);
                    }
                }
                (EventKind::Finished { output_tokens, .. }, Some(id)) => {
                    let Some(m) = req.remove(&id) else { continue };
                    let tid = job_of.get(&id).map_or(0, |j| j + 1);
                    let admitted = m.admitted.unwrap_or(m.submitted);
                    let first = m.first.unwrap_or(t);
                    let args = json!({"request": id, "output_tokens": output_tokens});
                    self.events.push(span(
                        "queue",
                        level,
                        tid,
                        m.submitted,
                        admitted,
                        args.clone(),
                    ));
                    self.events
                        .push(span("prefill", level, tid, admitted, first, args.clone()));
                    self.events.push(span("decode", level, tid, first, t, args));
                }
                _ => {}
            }
        }
    }

    /// The trace document.
    pub(crate) fn to_json(&self) -> Value {
        json!({"traceEvents": self.events, "displayTimeUnit": "ms"})
    }
}
