//! The scheduling policies: each maps the scheduler's state (waiting queue, running set, budgets)
//! to one step's plan, with no tensors. All three first preempt by recompute until every running
//! decode fits the KV budget, never exceed the slot, step-token and KV budgets, and admit strictly
//! first-in first-out.
//!
//! - `fifo`: running sequences in admission order (decode tokens and prefill chunks of up to
//!   `prefill_chunk`), then admissions into what is left of the step.
//! - `decode-first` (stall-free batching, Sarathi-Serve, OSDI '24): every running decode is
//!   planned first; prefill chunks and admissions then share at most one `prefill_chunk` of the
//!   step, so a step that carries prefill is at most one chunk longer than a decode-only step.
//! - `prefill-first` (classic servers): while prefill work remains, a step carries only prefill;
//!   decodes run in steps with none. Admission keeps room for every running sequence's whole
//!   context plus one token, so an admission never forces a preemption in the next step (without
//!   that guard it would preempt and re-admit the same request forever).

use super::{Plan, Scheduler, Seq};
use crate::config::schedule::Schedule;

/// What is left of a step's token and KV budgets.
struct Room {
    tokens: usize,
    kv: usize,
}

impl Room {
    fn of(s: &Scheduler) -> Self {
        Self {
            tokens: s.cfg.max_batch_tokens,
            kv: s.cfg.seq_kv_budget().saturating_sub(s.kv_tokens()),
        }
    }

    fn take(&mut self, n: usize) {
        self.tokens = self.tokens.saturating_sub(n);
        self.kv = self.kv.saturating_sub(n);
    }
}

/// Tokens a request admitted now finds in the prefix cache.
type Reusable<'a> = &'a dyn Fn(super::RequestId) -> usize;

/// Plans the next step under the configured policy.
pub(super) fn plan(s: &mut Scheduler, reusable: Reusable<'_>) -> Plan {
    let mut plan = Plan::default();
    s.preempt_for_kv(&mut plan);
    match s.cfg.schedule {
        Schedule::Fifo => fifo(s, &mut plan, reusable),
        Schedule::DecodeFirst => decode_first(s, &mut plan, reusable),
        Schedule::PrefillFirst => prefill_first(s, &mut plan, reusable),
    }
    plan
}

/// Plans the running sequences that `pick` selects, in admission order; `reserve(k)` tokens are
/// held back for the `k` picked sequences still to come.
fn plan_running(
    s: &Scheduler,
    plan: &mut Plan,
    room: &mut Room,
    pick: fn(&Seq) -> bool,
    reserve: bool,
) {
    let picked: Vec<&Seq> = s.running.iter().filter(|q| pick(q)).collect();
    for (k, q) in picked.iter().enumerate() {
        let held = if reserve { picked.len() - k - 1 } else { 0 };
        let tokens = room.tokens.saturating_sub(held);
        let kv = room.kv.saturating_sub(held);
        if let Some(item) = s.item_for(q, tokens, kv) {
            room.take(item.len + item.draft);
            plan.items.push(item);
        }
    }
}

/// Admits waiting requests in order while slots and `room` allow and the head's whole known
/// context fits the room's KV and `kv_for_new`, which each admission spends by its context plus
/// one token. An admitted request starts with the tokens `reusable` finds cached (they hold KV
/// like any other) and prefills the rest.
fn admit(
    s: &mut Scheduler,
    plan: &mut Plan,
    room: &mut Room,
    mut kv_for_new: usize,
    reusable: Reusable<'_>,
) {
    while s.running.len() < s.cfg.max_seqs {
        let Some(head) = s.waiting.front() else {
            break;
        };
        if head.known() + s.state_tokens > room.kv.min(kv_for_new) {
            break; // admit only what can hold its whole prompt, or it would be preempted at once
        }
        let mut seq = head.clone();
        seq.cached = reusable(seq.id).min(seq.known() - 1);
        let held = seq.cached + s.state_tokens;
        let Some(item) = s.item_for(&seq, room.tokens, room.kv - held) else {
            break;
        };
        kv_for_new = kv_for_new.saturating_sub(seq.known() + 1 + s.state_tokens);
        room.take(item.len);
        room.kv -= held;
        plan.items.push(item);
        plan.admitted.push(seq.id);
        s.waiting.pop_front().expect("head exists; this is a bug");
        s.running.push(seq);
    }
}

/// Running sequences in admission order, then admissions into what is left.
fn fifo(s: &mut Scheduler, plan: &mut Plan, reusable: Reusable<'_>) {
    let mut room = Room::of(s);
    plan_running(s, plan, &mut room, |_| true, false);
    admit(s, plan, &mut room, usize::MAX, reusable);
}

/// Every running decode first; prefill and admissions within one chunk of the step.
fn decode_first(s: &mut Scheduler, plan: &mut Plan, reusable: Reusable<'_>) {
    let mut room = Room::of(s);
    plan_running(s, plan, &mut room, Seq::decoding, true);
    room.tokens = room.tokens.min(s.cfg.prefill_chunk.max(1));
    plan_running(s, plan, &mut room, |q| !q.decoding(), false);
    admit(s, plan, &mut room, usize::MAX, reusable);
}

/// Prefill-only steps while prefill work remains; decode-only steps otherwise.
fn prefill_first(s: &mut Scheduler, plan: &mut Plan, reusable: Reusable<'_>) {
    let mut room = Room::of(s);
    plan_running(s, plan, &mut room, |q| !q.decoding(), false);
    let held: usize = s
        .running
        .iter()
        .map(|q| q.known() + 1 + s.state_tokens)
        .sum();
    let kv_for_new = s.cfg.seq_kv_budget().saturating_sub(held).saturating_sub(1);
    admit(s, plan, &mut room, kv_for_new, reusable);
    if plan.items.is_empty() {
        plan_running(s, plan, &mut room, Seq::decoding, true);
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
