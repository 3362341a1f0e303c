//! Drafting with a model: greedy autoregressive proposals from the first `layers` layers of a
//! llama-family model plus its final norm and head (layer-skip self-speculation on the target's
//! own weights, no second copy in memory), or from a whole second model of any family
//! (`--spec draft:MODEL`).
//!
//! KV: the drafter keeps its own small cache per sequence, for its layers only. It does not
//! reuse the target's: the target's cache leaves the engine's hands during the verify forward
//! and holds positions the drafter must overwrite with its own proposals, so sharing would
//! couple the two forwards' writes. The price is `layers / total layers` of the target's KV
//! bytes and a catch-up pass of those layers over each prompt.
//!
//! With the engine's prefix cache on, the drafter keeps a prefix cache of its own rows (same
//! budget, same blocks): a new sequence copies its longest cached prefix instead of catching up
//! over it, which is what keeps a long shared prompt from costing a full drafter prefill per
//! sequence.
//!
//! Rollback: each call gets the sequence's true history; the cache is truncated to the common
//! prefix with what the drafter fed before, and the rest (the accepted tokens and the target's
//! correction) is fed in one batched catch-up forward before drafting.

use std::collections::HashMap;

use super::{DraftInput, Drafter};
use crate::error::EngineError;
use crate::model::family::Model;
use crate::model::kv::KvCache;
use crate::model::llama::{Llama, LogitRows, SeqInput};
use crate::model::prefix::{PrefixCache, PrefixStats};
use crate::model::qwen35::Qwen35;
use crate::model::vmath::argmax;

struct SeqState {
    cache: KvCache,
    /// The tokens whose K/V the cache holds, in order.
    fed: Vec<u32>,
}

/// The network that drafts.
enum Net<'m> {
    /// The first `.1` layers of a llama-family model.
    First(&'m Llama, usize),
    /// The first `.1` layers of a Qwen3.5 model (KV and recurrent state for those layers).
    FirstQwen35(&'m Qwen35, usize),
    /// A whole model.
    Whole(&'m Model),
}

/// A drafter running the first `layers` layers of a model, or a whole model.
pub struct ModelDrafter<'m> {
    net: Net<'m>,
    seqs: HashMap<u64, SeqState>,
    /// The most KV bytes held at once so far.
    peak_kv: usize,
    /// The drafter's own prefix cache (with the engine's `--prefix-cache on`).
    prefix: Option<PrefixCache>,
}

impl<'m> ModelDrafter<'m> {
    /// Drafts with the first `layers` layers of `model` (all of them when `layers` is larger).
    pub fn new(model: &'m Llama, layers: usize) -> Self {
        Self {
            net: Net::First(model, layers.clamp(1, model.cfg.layers)),
            seqs: HashMap::new(),
            peak_kv: 0,
            prefix: None,
        }
    }

    /// Drafts with the first `layers` layers of a Qwen3.5 `model` (all when larger).
    pub fn first_qwen35(model: &'m Qwen35, layers: usize) -> Self {
        Self {
            net: Net::FirstQwen35(model, layers.clamp(1, model.cfg.base.layers)),
            seqs: HashMap::new(),
            peak_kv: 0,
            prefix: None,
        }
    }

    /// Drafts with every layer of `model` (a draft model apart from the target).
    pub fn whole(model: &'m Model) -> Self {
        Self {
            net: Net::Whole(model),
            seqs: HashMap::new(),
            peak_kv: 0,
            prefix: None,
        }
    }

    /// Keeps a prefix cache of up to `tokens` tokens of the drafter's own rows (0: none).
    pub fn with_prefix_cache(mut self, tokens: usize) -> Result<Self, EngineError> {
        if tokens > 0 {
            let one = self.new_cache(1)?;
            let (bytes_per_token, state) = (one.bytes(), one.state_bytes());
            self.prefix = Some(PrefixCache::new(tokens, bytes_per_token, state));
        }
        Ok(self)
    }

    /// The drafter's prefix-cache counters (none without one).
    pub fn prefix_stats(&self) -> Option<PrefixStats> {
        self.prefix.as_ref().map(PrefixCache::stats)
    }

    /// A new sequence's state: an empty cache, or one holding the rows of the longest prefix of
    /// `tokens` the drafter's prefix cache has.
    fn start(&mut self, tokens: &[u32], k: usize) -> Result<SeqState, EngineError> {
        let mut cache = self.new_cache(tokens.len() + k + 1)?;
        // A draft model with recurrent layers rolls back to where the target diverged: at most
        // k tokens back, so it keeps the state after each of its last k + 1 tokens.
        cache.keep_snapshots(k + 1);
        let mut fed = Vec::new();
        if let Some(prefix) = self.prefix.as_mut() {
            let n = prefix.reusable(tokens);
            if n > 0 {
                prefix.fill(tokens, n, &mut cache)?;
                fed.extend_from_slice(&tokens[..n]);
            }
            cache.mark_states(&prefix.state_marks(tokens, n));
        }
        Ok(SeqState { cache, fed })
    }

    fn new_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        match self.net {
            Net::First(m, layers) => m.new_cache_layers(capacity, layers),
            Net::FirstQwen35(m, layers) => m.new_cache_layers(capacity, layers),
            Net::Whole(m) => m.new_cache(capacity),
        }
    }

    /// Cache bytes the drafter holds now: its sequences' caches and its prefix cache (K/V rows
    /// and, for a draft model with recurrent layers, their state).
    pub fn kv_bytes(&self) -> usize {
        let prefix = self
            .prefix
            .as_ref()
            .map_or(0, |p| p.kv_bytes() + p.state_bytes());
        let seqs = self.seqs.values();
        seqs.map(|s| s.cache.bytes() + s.cache.state_bytes())
            .sum::<usize>()
            + prefix
    }

    fn forward(&mut self, ids: &[u64], fed: &[Vec<u32>]) -> Result<Vec<u32>, EngineError> {
        let inputs: Vec<SeqInput> = fed
            .iter()
            .map(|t| SeqInput {
                tokens: t,
                logits: LogitRows::Last,
            })
            .collect();
        let mut states: Vec<SeqState> = ids
            .iter()
            .map(|id| {
                self.seqs
                    .remove(id)
                    .expect("state made before; this is a bug")
            })
            .collect();
        let result = {
            let mut refs: Vec<&mut KvCache> = states.iter_mut().map(|s| &mut s.cache).collect();
            match self.net {
                Net::First(m, layers) => m.forward_first(layers, &inputs, &mut refs),
                Net::FirstQwen35(m, layers) => m.forward_first(layers, &inputs, &mut refs),
                Net::Whole(m) => m.forward(&inputs, &mut refs),
            }
        };
        for ((id, mut s), t) in ids.iter().zip(states).zip(fed) {
            s.fed.extend_from_slice(t);
            self.seqs.insert(*id, s);
        }
        let rows = result?.to_vec2::<f32>()?;
        Ok(rows.iter().map(|r| argmax(r)).collect())
    }
}

impl Drafter for ModelDrafter<'_> {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        let mut out = vec![Vec::new(); seqs.len()];
        let live: Vec<usize> = (0..seqs.len()).filter(|&i| seqs[i].k > 0).collect();
        if live.is_empty() {
            return Ok(out);
        }
        // Roll back to the common prefix; feed the rest.
        let mut fed = Vec::with_capacity(live.len());
        let mut started = Vec::new();
        for &i in &live {
            let s = &seqs[i];
            if !self.seqs.contains_key(&s.id) {
                let state = self.start(s.tokens, s.k)?;
                self.seqs.insert(s.id, state);
                started.push(s.id);
            }
            let st = self.seqs.get_mut(&s.id).expect("inserted above");
            let mut common = st
                .fed
                .iter()
                .zip(s.tokens)
                .take_while(|(a, b)| a == b)
                .count();
            // The last known token must be fed to get the next one's logits.
            common = common.min(s.tokens.len() - 1);
            st.cache.keep_snapshots(s.k + 1);
            st.cache.truncate(common);
            st.fed.truncate(common);
            fed.push(s.tokens[common..].to_vec());
        }
        let mut ids: Vec<u64> = live.iter().map(|&i| seqs[i].id).collect();
        let mut slots = live.clone();
        let mut next = self.forward(&ids, &fed)?;
        if let Some(prefix) = self.prefix.as_mut() {
            // A new sequence's first catch-up fed its prompt: keep its whole blocks (later steps
            // add only its answer, which another prompt is unlikely to share).
            for id in &started {
                let st = self.seqs.get_mut(id).expect("started above");
                prefix.store(&st.fed, &mut st.cache)?;
            }
        }
        loop {
            for (&slot, &t) in slots.iter().zip(&next) {
                out[slot].push(t);
            }
            let keep: Vec<usize> = (0..slots.len())
                .filter(|&j| out[slots[j]].len() < seqs[slots[j]].k)
                .collect();
            if keep.is_empty() {
                self.peak_kv = self.peak_kv.max(self.kv_bytes());
                return Ok(out);
            }
            let fed: Vec<Vec<u32>> = keep.iter().map(|&j| vec![next[j]]).collect();
            ids = keep.iter().map(|&j| ids[j]).collect();
            slots = keep.iter().map(|&j| slots[j]).collect();
            next = self.forward(&ids, &fed)?;
        }
    }

    fn release(&mut self, id: u64) {
        self.seqs.remove(&id);
    }

    fn peak_kv_bytes(&self) -> usize {
        self.peak_kv
    }
}

#[cfg(test)]
#[path = "model_drafter_tests.rs"]
mod tests;
