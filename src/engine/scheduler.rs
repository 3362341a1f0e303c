//! Iteration-level scheduler: pure planning over sequence lengths, no tensors.
//!
//! Each step it packs every running sequence's decode token, then prefill chunks (in admission
//! order), then admits waiting requests first-in first-out while the slot (`max_seqs`), step token
//! (`max_batch_tokens`) and KV (`kv_budget_tokens`) budgets allow. When the KV budget cannot hold
//! the step it preempts the most recently admitted sequence by recompute: its cache is dropped and
//! it goes back to the head of the queue, to re-prefill its prompt and the tokens it had generated.
//! The queue is strict FIFO (a request that does not fit blocks those behind it), so nobody starves.
//! That is the `fifo` policy; `decode-first` and `prefill-first` share the step differently
//! (`policy.rs`). This module holds the state; the policies plan from it.

use std::collections::VecDeque;

/// Identifies a request for the lifetime of an engine.
pub type RequestId = u64;

/// Budgets the scheduler respects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedulerConfig {
    /// Most sequences in one step (slots).
    pub max_seqs: usize,
    /// Most tokens (decode + prefill) in one step.
    pub max_batch_tokens: usize,
    /// Longest prefill chunk of one sequence in one step.
    pub prefill_chunk: usize,
    /// Most tokens held in KV caches across running sequences.
    pub kv_budget_tokens: usize,
    /// How a step is shared between decodes and prefill.
    pub schedule: crate::config::schedule::Schedule,
    /// Tokens of `kv_budget_tokens` held back for the prefix cache (0: no prefix cache); the
    /// running sequences share the rest.
    pub prefix_cache_tokens: usize,
}

impl SchedulerConfig {
    /// The KV tokens the running sequences may hold (the budget less the prefix cache's part).
    pub fn seq_kv_budget(&self) -> usize {
        self.kv_budget_tokens
            .saturating_sub(self.prefix_cache_tokens)
    }
}

/// What one sequence does in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanItem {
    pub id: RequestId,
    /// Tokens already in this sequence's cache (the position of the first token fed).
    pub start: usize,
    /// Tokens fed this step.
    pub len: usize,
    /// Whether this step ends with a new token sampled for the sequence (its last known token
    /// is fed); false for a prefill chunk that is not the last.
    pub samples: bool,
    /// Whether this is a single decode token rather than (part of) a prefill.
    pub decode: bool,
    /// Draft tokens the step may verify after the decode token (speculation; 0 otherwise).
    /// They are budgeted like any other token: the item costs `len + draft`.
    pub draft: usize,
}

/// One step's plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub items: Vec<PlanItem>,
    /// Requests that started running this step (their queue wait ends here).
    pub admitted: Vec<RequestId>,
    /// Requests whose caches must be dropped before this step (recompute preemption).
    pub preempted: Vec<RequestId>,
}

impl Plan {
    pub fn tokens(&self) -> usize {
        self.items.iter().map(|i| i.len + i.draft).sum()
    }
}

#[derive(Debug, Clone)]
struct Seq {
    id: RequestId,
    prompt_len: usize,
    max_new: usize,
    /// Tokens sampled so far.
    generated: usize,
    /// Tokens in the KV cache.
    cached: usize,
}

impl Seq {
    /// Prompt plus sampled tokens: everything the cache must eventually hold.
    fn known(&self) -> usize {
        self.prompt_len + self.generated
    }

    /// Whether its next item is a single decode token (its prompt is prefilled).
    fn decoding(&self) -> bool {
        self.cached > 0 && self.known() - self.cached == 1 && self.generated > 0
    }
}

/// The scheduler's state: waiting queue and running set.
#[derive(Debug)]
pub struct Scheduler {
    cfg: SchedulerConfig,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    /// Draft tokens a decode item may carry (speculation's k; 0 without).
    draft_k: usize,
    /// KV-token equivalents of the fixed recurrent state each running sequence holds (hybrid
    /// models; 0 otherwise): counted against the KV budget like the tokens it stands for.
    state_tokens: usize,
}

impl Scheduler {
    pub fn new(cfg: SchedulerConfig) -> Self {
        Self {
            cfg,
            waiting: VecDeque::new(),
            running: Vec::new(),
            draft_k: 0,
            state_tokens: 0,
        }
    }

    /// Charges every running sequence `n` KV tokens more for its recurrent state (the state's
    /// bytes over a token's KV bytes, rounded up).
    pub fn set_state_tokens(&mut self, n: usize) {
        self.state_tokens = n;
    }

    /// Lets each decode item carry up to `k` draft tokens, budgeted like any other token.
    pub fn set_draft_tokens(&mut self, k: usize) {
        self.draft_k = k;
    }

    /// Queues a request of `prompt_len` tokens that may generate up to `max_new`; refuses one
    /// that could never fit the KV budget alone.
    pub fn submit(
        &mut self,
        id: RequestId,
        prompt_len: usize,
        max_new: usize,
    ) -> Result<(), String> {
        let need = prompt_len + max_new + self.state_tokens;
        if need > self.cfg.seq_kv_budget() {
            let cache = match self.cfg.prefix_cache_tokens {
                0 => String::new(),
                n => format!(" after the prefix cache's {n}"),
            };
            let state = match self.state_tokens {
                0 => String::new(),
                n => format!(" + {n} for its recurrent state"),
            };
            return Err(format!(
                "request {id} needs {need} KV tokens ({prompt_len} prompt + {max_new} new{state}) but the KV budget{cache} is {}; raise --kv-budget or lower the output limit",
                self.cfg.seq_kv_budget()
            ));
        }
        self.waiting.push_back(Seq {
            id,
            prompt_len: prompt_len.max(1),
            max_new,
            generated: 0,
            cached: 0,
        });
        Ok(())
    }

    /// Requests still waiting or running.
    pub fn pending(&self) -> usize {
        self.waiting.len() + self.running.len()
    }

    /// Plans the next step. An empty plan with pending work means a single request cannot fit
    /// the budgets at all (the caller reports it).
    pub fn schedule(&mut self) -> Plan {
        self.schedule_reusing(&|_| 0)
    }

    /// [`Scheduler::schedule`] where a request admitted now starts with `reusable(id)` tokens
    /// already in its cache (copied from the prefix cache; at most all but its last known
    /// token): its first item starts there and only the rest is prefilled.
    pub fn schedule_reusing(&mut self, reusable: &dyn Fn(RequestId) -> usize) -> Plan {
        let _span = tracing::trace_span!("schedule").entered();
        policy::plan(self, reusable)
    }

    /// Requests waiting for admission.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Requests admitted and not finished.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Tokens held in the running sequences' KV caches now, their recurrent state counted as
    /// the tokens it stands for.
    pub fn kv_tokens(&self) -> usize {
        self.running
            .iter()
            .map(|s| s.cached + self.state_tokens)
            .sum()
    }

    /// Running sequences ready to decode that `plan` gives no item (they wait this step out).
    pub fn unplanned_decodes(&self, plan: &Plan) -> usize {
        self.running
            .iter()
            .filter(|s| s.decoding() && !plan.items.iter().any(|i| i.id == s.id))
            .count()
    }

    /// Records that `item` ran and, when it sampled, whether that token finished the sequence
    /// (stop token or limit). Returns true when the sequence is done.
    pub fn complete(&mut self, item: &PlanItem, stop: bool) -> bool {
        self.complete_accepted(item, 0, stop)
    }

    /// [`Scheduler::complete`] for a verified item: `accepted` draft tokens were kept, so the
    /// cache holds them too and the sequence gained `accepted + 1` tokens.
    pub fn complete_accepted(&mut self, item: &PlanItem, accepted: usize, stop: bool) -> bool {
        let Some(pos) = self.running.iter().position(|s| s.id == item.id) else {
            return false;
        };
        let s = &mut self.running[pos];
        s.cached += item.len + accepted;
        if item.samples {
            s.generated += 1 + accepted;
            if stop || s.generated >= s.max_new {
                self.running.remove(pos);
                return true;
            }
        }
        false
    }

    /// The step item of `s` within the remaining token and KV room, if any fits.
    fn item_for(&self, s: &Seq, tokens_left: usize, kv_left: usize) -> Option<PlanItem> {
        let todo = s.known() - s.cached;
        let len = todo
            .min(self.cfg.prefill_chunk.max(1))
            .min(tokens_left)
            .min(kv_left);
        let decode = s.decoding();
        // A drafted decode never overshoots the output limit, the step or the KV budget.
        let draft = match decode {
            true => self
                .draft_k
                .min(s.max_new.saturating_sub(s.generated + 1))
                .min(tokens_left.saturating_sub(len))
                .min(kv_left.saturating_sub(len)),
            false => 0,
        };
        (len > 0).then_some(PlanItem {
            id: s.id,
            start: s.cached,
            len,
            samples: len == todo,
            decode,
            draft,
        })
    }

    /// Preempts the most recently admitted sequences until every running decode fits the budget.
    fn preempt_for_kv(&mut self, plan: &mut Plan) {
        let state = self.state_tokens;
        let need = |run: &[Seq]| {
            run.iter()
                .map(|s| s.cached + (s.known() - s.cached).min(1) + state)
                .sum::<usize>()
        };
        while self.running.len() > 1 && need(&self.running) > self.cfg.seq_kv_budget() {
            let mut victim = self
                .running
                .pop()
                .expect("more than one running; this is a bug");
            victim.cached = 0;
            plan.preempted.push(victim.id);
            self.waiting.push_front(victim);
        }
    }
}

mod policy;

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
