//! A round's scheduler timeline: one [`PlanRow`] per engine step, from its `StepStart`,
//! `StepPlan` and `StepEnd` events and the `Finished` events between them. Aligned with the
//! round's steps: both are cut from the same `StepStart`/`StepEnd` pairs.

use crate::engine::batching::{Event, EventKind};
use crate::record::profile::PlanRow;

/// The timeline of a round's events.
pub fn timeline(events: &[Event]) -> Vec<PlanRow> {
    let mut out = Vec::new();
    let mut open: Option<PlanRow> = None;
    for ev in events {
        match &ev.kind {
            EventKind::StepStart {
                prefill_tokens,
                decode_tokens,
                ..
            } => {
                open = Some(PlanRow {
                    prefill_tokens: *prefill_tokens as u64,
                    decode_tokens: *decode_tokens as u64,
                    ..PlanRow::default()
                })
            }
            EventKind::StepPlan(p) => {
                if let Some(r) = open.as_mut() {
                    r.plan_ns = p.plan_ns;
                    r.running = p.running as u64;
                    r.waiting = p.waiting as u64;
                    r.admitted = p.admitted as u64;
                    r.preempted = p.preempted as u64;
                    r.draft_tokens = p.draft_tokens as u64;
                    r.skipped_decodes = p.skipped_decodes as u64;
                    r.kv_tokens = p.kv_tokens as u64;
                }
            }
            EventKind::Finished { .. } => {
                if let Some(r) = open.as_mut() {
                    r.finished += 1;
                }
            }
            EventKind::StepEnd { .. } => out.extend(open.take()),
            _ => {}
        }
    }
    out
}
