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

use std::collections::HashMap;

use candle_core::Tensor;

use super::kv::KvCache;
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
            if self.nodes.len() >= self.capacity_blocks {
                match self.victim() {
                    Some(v) => out.evicted.push(self.remove(v)),
                    None => break,
                }
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
                    last_used: self.tick,
                    children: 0,
                },
            );
            if let Some(p) = self.nodes.get_mut(&parent) {
                p.children += 1;
            }
            out.added.push((i, id));
            parent = id;
        }
        out
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

/// The prefix cache: [`PrefixIndex`] with each block's K/V rows.
pub(crate) struct PrefixCache {
    index: PrefixIndex,
    blocks: HashMap<u64, BlockKv>,
    bytes_per_block: usize,
    stats: PrefixStats,
}

impl PrefixCache {
    /// A cache of at most `budget_tokens` tokens (whole blocks) for a model whose KV costs
    /// `bytes_per_token`.
    pub(crate) fn new(budget_tokens: usize, bytes_per_token: usize) -> Self {
        Self {
            index: PrefixIndex::new(BLOCK_TOKENS, budget_tokens / BLOCK_TOKENS),
            blocks: HashMap::new(),
            bytes_per_block: bytes_per_token * BLOCK_TOKENS,
            stats: PrefixStats::default(),
        }
    }

    /// Tokens of `tokens` a new sequence can copy from the cache: whole cached blocks, at most
    /// all but the last token (which is computed for its logits).
    pub(crate) fn reusable(&self, tokens: &[u32]) -> usize {
        let limit = tokens.len().saturating_sub(1);
        self.index.matched(&tokens[..limit]).len() * BLOCK_TOKENS
    }

    /// Copies the rows of the first `n` tokens of `tokens` into the empty `cache`; `n` must not
    /// exceed [`PrefixCache::reusable`] as it was since the last store.
    pub(crate) fn fill(
        &mut self,
        tokens: &[u32],
        n: usize,
        cache: &mut KvCache,
    ) -> Result<(), EngineError> {
        let ids = self.index.matched(tokens);
        let whole = n.div_ceil(BLOCK_TOKENS);
        if ids.len() < whole || cache.len() != 0 {
            return Err(EngineError::Bug(format!(
                "prefix cache: {n} tokens planned for reuse but {} cached",
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
        self.stats.reused_tokens += n as u64;
        Ok(())
    }

    /// Keeps the rows of every whole block of `tokens[..cache.len()]` not cached yet.
    pub(crate) fn store(&mut self, tokens: &[u32], cache: &KvCache) -> Result<(), EngineError> {
        let held = &tokens[..cache.len().min(tokens.len())];
        let change = self.index.store(held);
        for id in &change.evicted {
            self.blocks.remove(id);
        }
        self.stats.evicted_blocks += change.evicted.len() as u64;
        for (i, id) in change.added {
            self.blocks.insert(id, copy_block(cache, i * BLOCK_TOKENS)?);
            self.stats.stored_blocks += 1;
        }
        self.stats.peak_blocks = self.stats.peak_blocks.max(self.index.len() as u64);
        Ok(())
    }

    /// Bytes of K/V rows held.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * self.bytes_per_block
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
