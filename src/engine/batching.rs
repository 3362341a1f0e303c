//! The continuous-batching engine: executes the scheduler's plan on the model, one batched
//! forward per step, samples each sequence with its own seeded sampler, and records events
//! stamped with `Instant` (submitted, admitted, preempted, prefill chunk, token, finished, step
//! start/end with its composition). Measuring reads these events; nothing here presents them.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::sampler::Sampler;
use super::scheduler::{Plan, RequestId, Scheduler, SchedulerConfig};
use crate::config::SamplingConfig;
use crate::error::EngineError;
use crate::model::family::Model;
use crate::model::kv::KvCache;
use crate::model::llama::{LogitRows, SeqInput};
use crate::model::prefix::{PrefixCache, PrefixStats};

mod verify;

/// A generation request.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: RequestId,
    pub prompt: Vec<u32>,
    pub max_new: usize,
    /// Tokens that end the sequence (not part of the output).
    pub stop: Vec<u32>,
}

/// Why a sequence ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    Stop,
    Length,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    Submitted {
        prompt_tokens: usize,
    },
    Admitted,
    /// Admitted with `tokens` prompt tokens copied from the prefix cache (not prefilled).
    PrefixReused {
        tokens: usize,
    },
    Preempted,
    PrefillChunk {
        tokens: usize,
    },
    Token {
        token: u32,
    },
    Finished {
        reason: FinishReason,
        output_tokens: usize,
    },
    StepStart {
        seqs: usize,
        prefill_tokens: usize,
        decode_tokens: usize,
    },
    StepEnd {
        /// Wall time of the batched forward pass alone (device synchronized), µs.
        forward_us: u64,
    },
    /// The drafter ran for this step's decoding sequences (before the forward).
    Drafted {
        /// Sequences that got a proposal.
        seqs: usize,
        /// Wall time of the drafter alone, µs.
        draft_us: u64,
    },
    /// A drafted sequence was verified: `accepted` of its `proposed` tokens were kept (and one
    /// more token from the target).
    Verified {
        proposed: usize,
        accepted: usize,
    },
    /// What the planner decided for the step and what deciding cost; right after `StepStart`.
    StepPlan(StepPlan),
}

/// The scheduler's side of one step (the `StepStart` counts are the fed tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepPlan {
    /// Wall time of `schedule()` alone, ns.
    pub plan_ns: u64,
    /// Sequences running once the step's admissions are made (planned or not).
    pub running: usize,
    /// Requests still waiting after the step's admissions.
    pub waiting: usize,
    /// Requests admitted for this step.
    pub admitted: usize,
    /// Sequences preempted (cache dropped) before this step.
    pub preempted: usize,
    /// Draft tokens the step verifies beside the fed tokens.
    pub draft_tokens: usize,
    /// Running sequences ready to decode that the plan gave no token (they wait the step out).
    pub skipped_decodes: usize,
    /// KV tokens held during the forward (cached before the step + every token it feeds).
    pub kv_tokens: usize,
}

/// One event, stamped when it happened.
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    /// The request concerned (none for step events).
    pub id: Option<RequestId>,
    pub kind: EventKind,
}

pub(super) struct Running {
    pub(super) tokens: Vec<u32>,
    prompt_len: usize,
    max_new: usize,
    stop: Vec<u32>,
    cache: Option<KvCache>,
    sampler: Sampler,
}

/// Runs many requests over one model.
pub struct Engine<'m> {
    model: &'m Model,
    sched: Scheduler,
    sampling: SamplingConfig,
    seqs: HashMap<RequestId, Running>,
    outputs: HashMap<RequestId, Vec<u32>>,
    events: Vec<Event>,
    spec: Option<verify::Speculation<'m>>,
    prefix: Option<PrefixCache>,
    /// Recurrent-state snapshots each new cache keeps (speculation's k + 1; 0 without), so a
    /// rejected draft can be rolled back on a model with recurrent layers.
    snapshots: usize,
}

impl<'m> Engine<'m> {
    /// An engine over `model`; with `cfg.prefix_cache_tokens` > 0 it keeps a prefix cache of
    /// that many tokens.
    pub fn new(model: &'m Model, cfg: SchedulerConfig, sampling: SamplingConfig) -> Self {
        let bytes_per_token = model.kv_shape().bytes_per_token();
        let mut sched = Scheduler::new(cfg);
        sched.set_state_tokens(model.state_bytes_per_seq().div_ceil(bytes_per_token.max(1)));
        Self {
            prefix: (cfg.prefix_cache_tokens > 0).then(|| {
                let state = model.state_bytes_per_seq();
                PrefixCache::new(cfg.prefix_cache_tokens, bytes_per_token, state)
            }),
            model,
            sched,
            sampling,
            seqs: HashMap::new(),
            outputs: HashMap::new(),
            events: Vec::new(),
            spec: None,
            snapshots: 0,
        }
    }

    /// Speculative decoding: `drafter` proposes up to `k` tokens for each decoding sequence and
    /// the model verifies them in the step's batched forward. Greedy: the output is exactly the
    /// output without speculation; sampled: each token follows the sampler's distribution
    /// (rejection sampling), though the draws differ from a run without speculation.
    pub fn set_speculation(
        &mut self,
        drafter: Box<dyn crate::spec::Drafter + 'm>,
        k: usize,
    ) -> Result<(), EngineError> {
        if k == 0 {
            return Err(EngineError::Refused(
                "--spec-k 0 proposes nothing; use at least 1".into(),
            ));
        }
        // A verify step rolls back to any of its k + 1 lengths: keep the state after each.
        self.snapshots = k + 1;
        let per_seq = self.model.state_bytes_per_seq() * (1 + self.snapshots);
        let per_token = self.model.kv_shape().bytes_per_token().max(1);
        self.sched.set_state_tokens(per_seq.div_ceil(per_token));
        self.sched.set_draft_tokens(k);
        self.spec = Some(verify::Speculation::new(drafter));
        Ok(())
    }

    /// Queues a request; each gets its own sampler seeded from the config seed and its id.
    pub fn submit(&mut self, r: Request) -> Result<(), EngineError> {
        if r.prompt.is_empty() {
            return Err(EngineError::Refused(format!(
                "request {}: empty prompt",
                r.id
            )));
        }
        let positions = self.model.kv_shape().max_positions;
        if r.prompt.len() > positions {
            // Refused before any of it is prefilled.
            return Err(EngineError::Refused(format!(
                "request {}: a prompt of {} tokens is longer than the model's context of {positions} \
                 positions; shorten the prompt or use a model with a longer context",
                r.id,
                r.prompt.len()
            )));
        }
        self.sched
            .submit(r.id, r.prompt.len(), r.max_new)
            .map_err(EngineError::Refused)?;
        let sampling = SamplingConfig {
            seed: self.sampling.seed.wrapping_add(r.id),
            ..self.sampling.clone()
        };
        self.event(
            Some(r.id),
            EventKind::Submitted {
                prompt_tokens: r.prompt.len(),
            },
        );
        let running = Running {
            prompt_len: r.prompt.len(),
            tokens: r.prompt,
            max_new: r.max_new,
            stop: r.stop,
            cache: None,
            sampler: Sampler::new(&sampling),
        };
        self.seqs.insert(r.id, running);
        Ok(())
    }

    /// Requests not finished yet.
    pub(crate) fn pending(&self) -> usize {
        self.sched.pending()
    }

    /// Runs one step; false when there was nothing to do.
    pub fn step(&mut self) -> Result<bool, EngineError> {
        let _span = tracing::trace_span!("engine_step").entered();
        let plan_start = Instant::now();
        let plan = match &self.prefix {
            Some(prefix) => {
                let seqs = &self.seqs;
                self.sched
                    .schedule_reusing(&|id| seqs.get(&id).map_or(0, |s| prefix.reusable(&s.tokens)))
            }
            None => self.sched.schedule(),
        };
        let plan_ns = plan_start.elapsed().as_nanos() as u64;
        if plan.items.is_empty() {
            if self.pending() > 0 {
                return Err(EngineError::Refused("the scheduler cannot fit any pending request in the budgets; raise --kv-budget or --max-batch-tokens".into()));
            }
            return Ok(false);
        }
        self.note_plan(&plan);
        self.event(None, EventKind::StepPlan(self.step_plan(&plan, plan_ns)));
        let mut caches = self.take_caches(&plan)?;
        let drafts = self.draft(&plan)?;
        let forward_start = Instant::now();
        let (logits, hidden) = {
            let fed: Vec<Vec<u32>> = plan
                .items
                .iter()
                .zip(&drafts)
                .map(|(it, d)| {
                    let mut t = self.seqs[&it.id].tokens[it.start..it.start + it.len].to_vec();
                    t.extend_from_slice(d);
                    t
                })
                .collect();
            let inputs: Vec<SeqInput> = plan
                .items
                .iter()
                .zip(&fed)
                .zip(&drafts)
                .map(|((it, tokens), d)| SeqInput {
                    tokens,
                    logits: match (it.samples, d.is_empty()) {
                        (true, false) => LogitRows::All,
                        (true, true) => LogitRows::Last,
                        (false, _) => LogitRows::None,
                    },
                })
                .collect();
            let mut refs: Vec<&mut KvCache> = caches.iter_mut().collect();
            let _span = tracing::trace_span!("forward", tokens = plan.tokens()).entered();
            // Copying to the host waits for the device: events after this are honest.
            let (logits, hidden) = self.forward_step(&inputs, &mut refs)?;
            (logits.to_vec2::<f32>()?, hidden)
        };
        let forward_us = forward_start.elapsed().as_micros() as u64;
        let mut rows = logits.iter();
        let mut at = 0;
        for ((item, mut cache), draft) in plan.items.iter().zip(caches).zip(&drafts) {
            let row = at;
            at += item.len + draft.len();
            if !item.decode {
                self.event(Some(item.id), EventKind::PrefillChunk { tokens: item.len });
            }
            // Every prefill chunk stores the whole blocks it completed, so a prompt that arrives
            // while this one is still prefilling already finds them.
            if let (Some(prefix), false) = (self.prefix.as_mut(), item.decode) {
                prefix.store(&self.seqs[&item.id].tokens, &mut cache)?;
            }
            self.seqs.get_mut(&item.id).expect("known request").cache = Some(cache);
            if !draft.is_empty() {
                let rows: Vec<&Vec<f32>> = rows.by_ref().take(draft.len() + 1).collect();
                let (accepted, stop) = self.verify(item, draft, &rows);
                self.hand_hidden(hidden.as_ref(), item, row, item.len + accepted)?;
                if self.sched.complete_accepted(item, accepted, stop) {
                    self.finish(item.id, stop);
                }
                continue;
            }
            let stop = match item.samples {
                true => self.sample(
                    item.id,
                    rows.next()
                        .expect("one logit row per sampling item; this is a bug"),
                ),
                false => false,
            };
            self.hand_hidden(hidden.as_ref(), item, row, item.len)?;
            if self.sched.complete(item, stop) {
                self.finish(item.id, stop);
            }
        }
        self.event(None, EventKind::StepEnd { forward_us });
        Ok(true)
    }

    /// Steps until every request has finished.
    pub fn run_to_completion(&mut self) -> Result<(), EngineError> {
        while self.step()? {}
        Ok(())
    }

    /// Output tokens of a finished request (stop token excluded).
    pub fn output(&self, id: RequestId) -> Option<&[u32]> {
        self.outputs.get(&id).map(Vec::as_slice)
    }

    /// KV-cache bytes held now: running sequences and the prefix cache.
    pub(crate) fn kv_bytes(&self) -> usize {
        let prefix = self.prefix.as_ref().map_or(0, PrefixCache::kv_bytes);
        self.seqs
            .values()
            .filter_map(|s| s.cache.as_ref().map(KvCache::bytes))
            .sum::<usize>()
            + prefix
    }

    /// Recurrent-state bytes held now by the running sequences and the prefix cache's copies
    /// (hybrid models; 0 otherwise).
    pub(crate) fn state_bytes(&self) -> usize {
        let prefix = self.prefix.as_ref().map_or(0, PrefixCache::state_bytes);
        self.seqs
            .values()
            .filter_map(|s| s.cache.as_ref().map(KvCache::state_bytes))
            .sum::<usize>()
            + prefix
    }

    /// Hands the prefix cache over, to carry it into the next engine over the same model (a
    /// session's requests each get an engine of their own).
    pub(crate) fn take_prefix_cache(&mut self) -> Option<PrefixCache> {
        self.prefix.take()
    }

    /// Uses `cache` (taken from an earlier engine over the same model) as the prefix cache.
    pub(crate) fn set_prefix_cache(&mut self, cache: PrefixCache) {
        self.prefix = Some(cache);
    }

    /// The prefix cache's counters (none without one).
    pub fn prefix_stats(&self) -> Option<PrefixStats> {
        self.prefix.as_ref().map(PrefixCache::stats)
    }

    /// Each planned sequence's cache: its own, or a new one holding the rows the plan reuses
    /// from the prefix cache (announced with [`EventKind::PrefixReused`]).
    fn take_caches(&mut self, plan: &Plan) -> Result<Vec<KvCache>, EngineError> {
        let mut caches = Vec::with_capacity(plan.items.len());
        let mut reused = Vec::new();
        for item in &plan.items {
            let s = self
                .seqs
                .get_mut(&item.id)
                .expect("planned requests are known; this is a bug");
            let cache = match s.cache.take() {
                Some(c) => c,
                None => {
                    let mut c = self.model.new_cache(s.prompt_len + s.max_new)?;
                    c.keep_snapshots(self.snapshots);
                    if let Some(prefix) = self.prefix.as_mut() {
                        c.mark_states(&prefix.state_marks(&s.tokens, item.start));
                    }
                    if item.start > 0 {
                        let prefix = self.prefix.as_mut().ok_or_else(|| {
                            EngineError::Bug(
                                "a new cache planned past 0 without a prefix cache".into(),
                            )
                        })?;
                        prefix.fill(&s.tokens, item.start, &mut c)?;
                        reused.push((item.id, item.start));
                    }
                    c
                }
            };
            caches.push(cache);
        }
        for (id, tokens) in reused {
            self.event(Some(id), EventKind::PrefixReused { tokens });
        }
        Ok(caches)
    }

    /// Every event so far, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn note_plan(&mut self, plan: &Plan) {
        for id in &plan.preempted {
            if let Some(s) = self.seqs.get_mut(id) {
                s.cache = None;
            }
            if let Some(spec) = self.spec.as_mut() {
                spec.release(*id);
            }
            self.event(Some(*id), EventKind::Preempted);
        }
        for id in &plan.admitted {
            self.event(Some(*id), EventKind::Admitted);
        }
        let decode = plan.items.iter().filter(|i| i.decode).count();
        let fed = plan.items.iter().map(|i| i.len).sum::<usize>();
        self.event(
            None,
            EventKind::StepStart {
                seqs: plan.items.len(),
                prefill_tokens: fed - decode,
                decode_tokens: decode,
            },
        );
    }

    fn step_plan(&self, plan: &Plan, plan_ns: u64) -> StepPlan {
        StepPlan {
            plan_ns,
            running: self.sched.running(),
            waiting: self.sched.waiting(),
            admitted: plan.admitted.len(),
            preempted: plan.preempted.len(),
            draft_tokens: plan.items.iter().map(|i| i.draft).sum(),
            skipped_decodes: self.sched.unplanned_decodes(plan),
            kv_tokens: self.sched.kv_tokens() + plan.tokens(),
        }
    }

    /// Samples the next token; true when it is a stop token.
    fn sample(&mut self, id: RequestId, row: &[f32]) -> bool {
        let s = self.seqs.get_mut(&id).expect("known request");
        let token = s.sampler.sample(row);
        self.push_token(id, token)
    }

    /// Appends a chosen token to the sequence; true when it is a stop token.
    fn push_token(&mut self, id: RequestId, token: u32) -> bool {
        let s = self.seqs.get_mut(&id).expect("known request");
        s.tokens.push(token);
        let stop = s.stop.contains(&token);
        if !stop {
            self.event(Some(id), EventKind::Token { token });
        }
        stop
    }

    fn finish(&mut self, id: RequestId, stop: bool) {
        if let Some(spec) = self.spec.as_mut() {
            spec.release(id);
        }
        let mut s = self.seqs.remove(&id).expect("known request");
        if let (Some(prefix), Some(cache)) = (self.prefix.as_mut(), s.cache.as_mut()) {
            // A failed copy only loses a cache entry; the answer is complete.
            if let Err(e) = prefix.store(&s.tokens, cache) {
                tracing::warn!("prefix cache: {e}");
            }
        }
        let mut out = s.tokens[s.prompt_len..].to_vec();
        if stop {
            out.pop();
        }
        let reason = if stop {
            FinishReason::Stop
        } else {
            FinishReason::Length
        };
        self.event(
            Some(id),
            EventKind::Finished {
                reason,
                output_tokens: out.len(),
            },
        );
        self.outputs.insert(id, out);
    }

    fn event(&mut self, id: Option<RequestId>, kind: EventKind) {
        self.events.push(Event {
            at: Instant::now(),
            id,
            kind,
        });
    }
}
