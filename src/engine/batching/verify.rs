//! The engine's speculative path: asks the drafter for each decoding sequence's proposal before
//! the step's forward, then applies the greedy acceptance rule ([`crate::spec::verify`]), or
//! with sampling the rejection rule ([`crate::spec::rejection`]), to the logit rows of every
//! drafted position and rolls the target's KV cache back to the accepted
//! prefix. A drafter that reads the target's hidden states (`--spec mtp`) gets them for the
//! tokens the target kept; only then does the forward hand them out. A child of `batching` so
//! that it works on the engine's own state.

use std::time::Instant;

use candle_core::Tensor;

use super::{Engine, EventKind};
use crate::engine::scheduler::{Plan, PlanItem};
use crate::error::EngineError;
use crate::model::kv::KvCache;
use crate::model::llama::SeqInput;
use crate::spec::rejection::{accept_sampled, DraftDist};
use crate::spec::{verify::accept_greedy, DraftInput, Drafter};

/// The drafter of a speculative engine.
pub(super) struct Speculation<'m> {
    drafter: Box<dyn Drafter + 'm>,
}

impl<'m> Speculation<'m> {
    pub(super) fn new(drafter: Box<dyn Drafter + 'm>) -> Self {
        Self { drafter }
    }

    pub(super) fn release(&mut self, id: u64) {
        self.drafter.release(id);
    }
}

impl Engine<'_> {
    /// The most KV-cache bytes the drafter has held at once (0 without speculation).
    pub fn drafter_peak_kv_bytes(&self) -> usize {
        self.spec.as_ref().map_or(0, |s| s.drafter.peak_kv_bytes())
    }

    /// The proposal of each plan item, in plan order (empty for items that do not decode or
    /// got no proposal). Times the drafter alone.
    pub(super) fn draft(&mut self, plan: &Plan) -> Result<Vec<Vec<u32>>, EngineError> {
        let mut out = vec![Vec::new(); plan.items.len()];
        let Some(spec) = self.spec.as_mut() else {
            return Ok(out);
        };
        let wanted: Vec<usize> = (0..plan.items.len())
            .filter(|&i| plan.items[i].decode && plan.items[i].draft > 0)
            .collect();
        if wanted.is_empty() {
            return Ok(out);
        }
        let inputs: Vec<DraftInput> = wanted
            .iter()
            .map(|&i| {
                let it = &plan.items[i];
                DraftInput {
                    id: it.id,
                    tokens: &self.seqs[&it.id].tokens,
                    k: it.draft,
                }
            })
            .collect();
        let start = Instant::now();
        let proposals = spec.drafter.propose(&inputs)?;
        let draft_us = start.elapsed().as_micros() as u64;
        let mut seqs = 0;
        for (&i, mut p) in wanted.iter().zip(proposals) {
            p.truncate(plan.items[i].draft);
            seqs += usize::from(!p.is_empty());
            out[i] = p;
        }
        self.event(None, EventKind::Drafted { seqs, draft_us });
        Ok(out)
    }

    /// The step's forward: the requested logit rows and, when the drafter reads them, every fed
    /// token's hidden state (`[tokens, hidden]`, step order).
    pub(super) fn forward_step(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Option<Tensor>), EngineError> {
        if self.spec.as_ref().is_some_and(|s| s.drafter.wants_hidden()) {
            let (logits, hidden) = self.model.forward_hidden(inputs, caches)?;
            return Ok((logits, Some(hidden)));
        }
        Ok((self.model.forward(inputs, caches)?, None))
    }

    /// Hands the drafter the hidden states of the `kept` tokens that `item` fed from row `at` of
    /// the step (nothing without `hidden`).
    pub(super) fn hand_hidden(
        &mut self,
        hidden: Option<&Tensor>,
        item: &PlanItem,
        at: usize,
        kept: usize,
    ) -> Result<(), EngineError> {
        let (Some(hidden), Some(spec)) = (hidden, self.spec.as_mut()) else {
            return Ok(());
        };
        spec.drafter
            .observe_hidden(item.id, item.start, hidden.narrow(0, at, kept)?)
    }

    /// Verifies `draft` of `item` against its logit rows (one per fed position): appends the
    /// accepted tokens and the target's next one, stopping at a stop token, and truncates the
    /// cache to what the target computed on accepted tokens. Returns (accepted drafts, stop).
    pub(super) fn verify(
        &mut self,
        item: &PlanItem,
        draft: &[u32],
        rows: &[&Vec<f32>],
    ) -> (usize, bool) {
        debug_assert_eq!(
            rows.len(),
            draft.len() + 1,
            "rows per drafted position; this is a bug"
        );
        let s = self.seqs.get_mut(&item.id).expect("known request");
        let kept = if s.sampler.draws() {
            // Every drafter here proposes deterministically: its q is a point mass.
            let p: Vec<Vec<f64>> = rows.iter().map(|r| s.sampler.probs(r)).collect();
            let sampler = &mut s.sampler;
            accept_sampled(draft, DraftDist::Certain, &p, &mut || sampler.uniform())
        } else {
            let target: Vec<u32> = rows.iter().map(|r| s.sampler.sample(r)).collect();
            accept_greedy(draft, &target)
        };
        let accepted = kept.len() - 1;
        // The cache holds the fed token and every draft; keep the fed token and the accepted
        // drafts (the target's own next token is fed next step, like any decode token).
        if let Some(cache) = s.cache.as_mut() {
            cache.truncate(item.start + item.len + accepted);
        }
        self.event(
            Some(item.id),
            EventKind::Verified {
                proposed: draft.len(),
                accepted,
            },
        );
        for (n, &t) in kept.iter().enumerate() {
            if self.push_token(item.id, t) {
                return (n, true);
            }
        }
        (accepted, false)
    }
}

#[cfg(test)]
#[path = "rollback_tests.rs"]
mod rollback_tests;

#[cfg(test)]
#[path = "synthetic_tests.rs"]
mod synthetic_tests;
