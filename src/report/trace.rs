//! A Chrome trace (the `chrome://tracing` / Perfetto JSON format) of one round, built from the
//! engine's events: a track of engine steps with their composition, and one track per job with
//! each request's queue, prefill and decode spans.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{json, Value};

use crate::engine::batching::{Event, EventKind};
use crate::engine::scheduler::RequestId;

fn us(at: Instant, start: Instant) -> f64 {
    at.saturating_duration_since(start).as_secs_f64() * 1e6
}

fn span(name: &str, tid: usize, from: f64, to: f64, args: Value) -> Value {
    json!({"name": name, "ph": "X", "pid": 1, "tid": tid, "ts": from, "dur": (to - from).max(0.0), "args": args})
}

/// Trace events of a round; `job_of` maps request ids to job indices (tracks 1, 2, …).
pub fn chrome_trace(events: &[Event], start: Instant, job_of: &HashMap<RequestId, usize>) -> Value {
    let mut out = vec![
        json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "engine steps"}}),
    ];
    let mut step: Option<(f64, Value)> = None;
    let mut req: HashMap<RequestId, (f64, Option<f64>, Option<f64>)> = HashMap::new();
    for ev in events {
        let t = us(ev.at, start);
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
            (EventKind::StepEnd { forward_us }, _) => {
                if let Some((from, mut args)) = step.take() {
                    args["forward_us"] = json!(forward_us);
                    out.push(span("step", 0, from, t, args));
                }
            }
            (EventKind::Submitted { .. }, Some(id)) => {
                req.insert(id, (t, None, None));
            }
            (EventKind::Admitted, Some(id)) => {
                if let Some(r) = req.get_mut(&id) {
                    r.1.get_or_insert(t);
                }
            }
            (EventKind::Token { .. }, Some(id)) => {
                if let Some(r) = req.get_mut(&id) {
                    r.2.get_or_insert(t);
                }
            }
            (EventKind::Finished { output_tokens, .. }, Some(id)) => {
                let Some((sub, adm, first)) = req.remove(&id) else {
                    continue;
                };
                let tid = job_of.get(&id).map_or(0, |j| j + 1);
                let adm = adm.unwrap_or(sub);
                let first = first.unwrap_or(t);
                let args = json!({"request": id, "output_tokens": output_tokens});
                out.push(span("queue", tid, sub, adm, args.clone()));
                out.push(span("prefill", tid, adm, first, args.clone()));
                out.push(span("decode", tid, first, t, args));
            }
            _ => {}
        }
    }
    let mut names: Vec<usize> = job_of.values().copied().collect();
    names.sort_unstable();
    names.dedup();
    for j in names {
        out.push(json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": j + 1, "args": {"name": format!("job {j}")}}));
    }
    json!({"traceEvents": out, "displayTimeUnit": "ms"})
}
