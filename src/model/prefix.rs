//! The prefix cache (`--prefix-cache on`): the KV rows of prompts already computed, kept in
//! 16-token blocks so that a new sequence whose prompt starts the same way copies them instead of
//! prefilling them again.
//!
//! Blocks form chains: a block is identified exactly by its parent block (the one before it in
//! the prompt) and its own tokens, so equal text at different depths or after different
//! prefixes never matches (no hash collisions either: the key holds the tokens). A new sequence
//! reuses the longest chain of whole blocks that starts its prompt, less at least one token that
//! is always computed (its logits choose the first output token).
//!
//! Reused rows are **copied** into the sequence's own cache rather than shared: the engine's
//! caches are contiguous per sequence, so sharing would need paged attention; a copy costs one
//! memcpy of the reused rows and the memory of those rows twice, which the KV budget counts (the
//! cache's own part is carved out of `--kv-budget`, the sequences keep the rest).
//!
//! Eviction is least-recently used within the cache's token budget, leaves first: a lookup or a
//! store touches a whole chain at once, so a parent is never older than its children, and only
//! blocks without cached children are evicted (no unreachable orphans). [`PrefixIndex`] is the
//! pure bookkeeping (unit-tested alone); [`PrefixCache`] keeps the tensors beside it.
//!
//! **Models with recurrent layers** (Qwen3.5's Gated DeltaNet) cannot resume from KV rows alone:
//! the recurrent state after the reused tokens must be restored too, and it exists only where a
//! sequence copied it on its way (it cannot be rebuilt from the rows). So a block can carry a
//! copy of the whole recurrent state after its last token, and a new sequence reuses only up to
//! the deepest matched block that has one. A sequence copies its state at two block ends of its
//! prompt ([`PrefixCache::state_marks`]): its last whole block before the final token (an
//! identical prompt, or a later turn of the same conversation, resumes there) and the block where
//! it leaves the deepest chain already cached (the branch point: the next prompt with the same
//! system prompt resumes there). A copy costs the model's state bytes (`inspect`'s "state per
//! sequence"; about 20 MB on a Qwen3.5-0.8B shape, 10.8 kB on the tiny test model) and weighs in
//! the cache's budget as that many bytes of whole blocks of KV rows
//! ([`PrefixCache::new`]); evicting a block drops its copy. The blocks' KV rows are those of the
//! attention layers only, as the sequences' caches hold them.

use std::collections::HashMap;

use candle_core::Tensor;

use super::kv::KvCache;
use super::recurrent::LayerState;
use crate::error::EngineError;

/// Tokens per cached block.
pub const BLOCK_TOKENS: usize = 16;

/// A block's identity: its parent's id (0 for a prompt's first block) and its tokens.
type Key = (u64, Vec<u32>);

#[derive(Debug)]
struct Node {
    key: Key,
    /// 1 for a prompt's first block.
    depth: usize,
    /// Blocks of the capacity it takes: 1, more with a recurrent-state copy attached.
    weight: usize,
    last_used: u64,
    children: usize,
}

/// What a store changed: blocks added (their index in the prompt and id) and ids evicted.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Stored {
    pub added: Vec<(usize, u64)>,
    pub evicted: Vec<u64>,
}

/// Which token blocks are cached, as chains, in least-recently-used order; no tensors.
#[derive(Debug)]
pub(crate) struct PrefixIndex {
    block: usize,
    capacity_blocks: usize,
    /// Sum of the held nodes' weights.
    used: usize,
    ids: HashMap<Key, u64>,
    nodes: HashMap<u64, Node>,
    next_id: u64,
    tick: u64,
}

impl PrefixIndex {
    /// An empty index of `block`-token blocks holding at most `capacity_blocks` of them.
    pub(crate) fn new(block: usize, capacity_blocks: usize) -> Self {
        Self {
            block: block.max(1),
            capacity_blocks,
            used: 0,
            ids: HashMap::new(),
            nodes: HashMap::new(),
            next_id: 1,
            tick: 0,
        }
    }

    /// Blocks held.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Ids of the longest cached chain of whole blocks that starts `tokens`, first block first.
    pub(crate) fn matched(&self, tokens: &[u32]) -> Vec<u64> {
        let mut out = Vec::new();
        let mut parent = 0;
        for chunk in tokens.chunks_exact(self.block) {
            match self.ids.get(&(parent, chunk.to_vec())) {
                Some(&id) => {
                    out.push(id);
                    parent = id;
                }
                None => break,
            }
        }
        out
    }

    /// Marks `ids` (one chain) as used now.
    pub(crate) fn touch(&mut self, ids: &[u64]) {
        self.tick += 1;
        for id in ids {
            if let Some(n) = self.nodes.get_mut(id) {
                n.last_used = self.tick;
            }
        }
    }

    /// Adds the whole blocks of `tokens` that are not cached yet, evicting least-recently used
    /// leaves of other chains to stay within the capacity; stops early rather than evict a block
    /// of this chain. Every block of the chain is touched.
    pub(crate) fn store(&mut self, tokens: &[u32]) -> Stored {
        let mut out = Stored::default();
        let have = self.matched(tokens);
        self.touch(&have);
        let mut parent = have.last().copied().unwrap_or(0);
        let chunks = tokens.chunks_exact(self.block).enumerate().skip(have.len());
        for (i, chunk) in chunks {
            if !self.make_room(1, &mut out.evicted) {
                break;
            }
            let id = self.next_id;
            self.next_id += 1;
            let key = (parent, chunk.to_vec());
            self.ids.insert(key.clone(), id);
            self.nodes.insert(
                id,
                Node {
                    key,
                    depth: i + 1,
                    weight: 1,
                    last_used: self.tick,
                    children: 0,
                },
            );
            self.used += 1;
            if let Some(p) = self.nodes.get_mut(&parent) {
                p.children += 1;
            }
            out.added.push((i, id));
            parent = id;
        }
        out
    }

    /// Makes `id` (a block of the chain just stored or touched) weigh `extra` more blocks,
    /// evicting least-recently used leaves of other chains as needed; false (and nothing
    /// added, though some blocks may be evicted) when that cannot make room. Ids evicted are
    /// appended to `evicted`.
    pub(crate) fn add_weight(&mut self, id: u64, extra: usize, evicted: &mut Vec<u64>) -> bool {
        if !self.nodes.contains_key(&id) || !self.make_room(extra, evicted) {
            return false;
        }
        if let Some(n) = self.nodes.get_mut(&id) {
            n.weight += extra;
            self.used += extra;
        }
        true
    }

    /// Evicts victims until `extra` more blocks fit; false when no victim is left first.
    fn make_room(&mut self, extra: usize, evicted: &mut Vec<u64>) -> bool {
        while self.used + extra > self.capacity_blocks {
            match self.victim() {
                Some(v) => evicted.push(self.remove(v)),
                None => return false,
            }
        }
        true
    }

    /// The least-recently used leaf (deepest first among equals) not used by the current call.
    fn victim(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.children == 0 && n.last_used < self.tick)
            .min_by_key(|(id, n)| (n.last_used, std::cmp::Reverse(n.depth), **id))
            .map(|(id, _)| *id)
    }

    fn remove(&mut self, id: u64) -> u64 {
        let node = self
            .nodes
            .remove(&id)
            .expect("victims are held blocks; this is a bug");
        self.ids.remove(&node.key);
        self.used -= node.weight;
        if let Some(p) = self.nodes.get_mut(&node.key.0) {
            p.children -= 1;
        }
        id
    }
}

/// One block's keys and values, per layer `[kv_heads, BLOCK_TOKENS, head_dim]`.
struct BlockKv {
    k: Vec<Tensor>,
    v: Vec<Tensor>,
}

/// Counters of a prefix cache's life (one engine, i.e. one round).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixStats {
    /// Blocks stored.
    pub stored_blocks: u64,
    /// Blocks evicted to stay within the budget.
    pub evicted_blocks: u64,
    /// Most blocks held at once.
    pub peak_blocks: u64,
    /// Tokens copied into new sequences' caches.
    pub reused_tokens: u64,
}

/// The prefix cache: [`PrefixIndex`] with each block's K/V rows and, on models with recurrent
/// layers, the state after some blocks.
pub(crate) struct PrefixCache {
    index: PrefixIndex,
    blocks: HashMap<u64, BlockKv>,
    /// Recurrent state (every layer) after the block of that id.
    states: HashMap<u64, Vec<LayerState>>,
    bytes_per_block: usize,
    /// Bytes of one copy of a sequence's recurrent state (0: the model has none).
    state_bytes: usize,
    stats: PrefixStats,
}

impl PrefixCache {
    /// A cache of at most `budget_tokens` tokens (whole blocks) for a model whose KV costs
    /// `bytes_per_token` and whose recurrent state, if any, `state_bytes`; a state copy takes
    /// as much of the budget as the whole blocks its bytes would fill.
    pub(crate) fn new(budget_tokens: usize, bytes_per_token: usize, state_bytes: usize) -> Self {
        Self {
            index: PrefixIndex::new(BLOCK_TOKENS, budget_tokens / BLOCK_TOKENS),
            blocks: HashMap::new(),
            states: HashMap::new(),
            bytes_per_block: bytes_per_token * BLOCK_TOKENS,
            state_bytes,
            stats: PrefixStats::default(),
        }
    }

    /// Blocks of the budget one state copy takes.
    fn state_blocks(&self) -> usize {
        self.state_bytes.div_ceil(self.bytes_per_block.max(1))
    }

    /// The ids of the cached blocks `tokens` can resume from: the longest cached chain of whole
    /// blocks, at most all but the last token (computed for its logits), and on a model with
    /// recurrent state only up to the deepest block that carries a copy of it.
    fn usable(&self, tokens: &[u32]) -> Vec<u64> {
        let limit = tokens.len().saturating_sub(1);
        let mut ids = self.index.matched(&tokens[..limit]);
        if self.state_bytes > 0 {
            let keep = ids
                .iter()
                .rposition(|id| self.states.contains_key(id))
                .map_or(0, |i| i + 1);
            ids.truncate(keep);
        }
        ids
    }

    /// Tokens of `tokens` a new sequence can copy from the cache (see `usable`).
    pub(crate) fn reusable(&self, tokens: &[u32]) -> usize {
        self.usable(tokens).len() * BLOCK_TOKENS
    }

    /// The lengths at which a new sequence over `tokens`, resuming at `start`, should copy its
    /// recurrent state for this cache ([`KvCache::mark_states`]): the last block end before its
    /// final token and the end of the deepest chain already cached (empty on models without
    /// recurrent state).
    pub(crate) fn state_marks(&self, tokens: &[u32], start: usize) -> Vec<usize> {
        if self.state_bytes == 0 {
            return Vec::new();
        }
        let limit = tokens.len().saturating_sub(1);
        let branch = self.index.matched(&tokens[..limit]).len() * BLOCK_TOKENS;
        let end = limit / BLOCK_TOKENS * BLOCK_TOKENS;
        [branch, end].into_iter().filter(|&l| l > start).collect()
    }

    /// Copies the rows (and recurrent state) of the first `n` tokens of `tokens` into the empty
    /// `cache`; `n` must be [`PrefixCache::reusable`] as it was since the last store, or less on
    /// a model without recurrent state.
    pub(crate) fn fill(
        &mut self,
        tokens: &[u32],
        n: usize,
        cache: &mut KvCache,
    ) -> Result<(), EngineError> {
        let ids = self.usable(tokens);
        let whole = n.div_ceil(BLOCK_TOKENS);
        let exact = self.state_bytes == 0 || n == ids.len() * BLOCK_TOKENS;
        if ids.len() < whole || cache.len() != 0 || !exact {
            return Err(EngineError::Bug(format!(
                "prefix cache: {n} tokens planned for reuse but {} usable",
                ids.len() * BLOCK_TOKENS
            )));
        }
        self.index.touch(&ids[..whole]);
        cache.reserve(whole * BLOCK_TOKENS)?;
        for id in &ids[..whole] {
            let b = &self.blocks[id];
            for (layer, (k, v)) in b.k.iter().zip(&b.v).enumerate() {
                cache.write(layer, k, v)?;
            }
            cache.advance(BLOCK_TOKENS);
        }
        cache.truncate(n);
        if let (Some(rec), Some(id)) = (cache.recurrent_mut(), ids[..whole].last()) {
            let state = self.states.get(id).ok_or_else(|| {
                EngineError::Bug("prefix cache: a reused block without its state".into())
            })?;
            rec.restore(state)?;
        }
        self.stats.reused_tokens += n as u64;
        Ok(())
    }

    /// Keeps the rows of every whole block of `tokens[..cache.len()]` not cached yet, and the
    /// recurrent states `cache` copied at block ends (moved out of it).
    pub(crate) fn store(&mut self, tokens: &[u32], cache: &mut KvCache) -> Result<(), EngineError> {
        let held = &tokens[..cache.len().min(tokens.len())];
        let change = self.index.store(held);
        self.drop_evicted(&change.evicted);
        for (i, id) in change.added {
            self.blocks.insert(id, copy_block(cache, i * BLOCK_TOKENS)?);
            self.stats.stored_blocks += 1;
        }
        let marked = cache.recurrent_mut().map(|r| r.take_marked());
        for (len, state) in marked.into_iter().flatten() {
            self.keep_state(&held[..len.min(held.len())], state);
        }
        self.stats.peak_blocks = self.stats.peak_blocks.max(self.index.len() as u64);
        Ok(())
    }

    /// Attaches `state` (the recurrent state after `tokens`) to the cached block that ends
    /// `tokens`, when that block is held, has none yet and the budget can make room.
    fn keep_state(&mut self, tokens: &[u32], state: Vec<LayerState>) {
        if tokens.is_empty() || !tokens.len().is_multiple_of(BLOCK_TOKENS) {
            return;
        }
        let ids = self.index.matched(tokens);
        let Some(&id) = ids
            .last()
            .filter(|_| ids.len() * BLOCK_TOKENS == tokens.len())
        else {
            return;
        };
        if self.states.contains_key(&id) {
            return;
        }
        // The store before this touched the whole chain, so making room evicts other chains.
        let mut evicted = Vec::new();
        let kept = self.index.add_weight(id, self.state_blocks(), &mut evicted);
        self.drop_evicted(&evicted);
        if kept {
            self.states.insert(id, state);
        }
    }

    fn drop_evicted(&mut self, ids: &[u64]) {
        for id in ids {
            self.blocks.remove(id);
            self.states.remove(id);
        }
        self.stats.evicted_blocks += ids.len() as u64;
    }

    /// Bytes of K/V rows held.
    pub(crate) fn kv_bytes(&self) -> usize {
        self.blocks.len() * self.bytes_per_block
    }

    /// Bytes of recurrent-state copies held.
    pub(crate) fn state_bytes(&self) -> usize {
        self.states.len() * self.state_bytes
    }

    pub(crate) fn stats(&self) -> PrefixStats {
        self.stats
    }
}

/// An owned copy of one block's rows from `cache`, starting at token `start`.
fn copy_block(cache: &KvCache, start: usize) -> Result<BlockKv, EngineError> {
    let (mut k, mut v) = (Vec::new(), Vec::new());
    for layer in 0..cache.layers() {
        let (lk, lv) = cache.view(layer, start + BLOCK_TOKENS)?;
        k.push(owned(&lk.narrow(1, start, BLOCK_TOKENS)?)?);
        v.push(owned(&lv.narrow(1, start, BLOCK_TOKENS)?)?);
    }
    Ok(BlockKv { k, v })
}

/// A copy of `t` in storage of its own (a contiguous view would still share the cache's).
fn owned(t: &Tensor) -> Result<Tensor, EngineError> {
    if !t.is_contiguous() {
        return Ok(t.contiguous()?);
    }
    let out = Tensor::zeros(t.shape(), t.dtype(), t.device())?;
    out.slice_set(t, 0, 0)?;
    Ok(out)
}

#[cfg(test)]
#[path = "prefix_tests.rs"]
mod tests;
