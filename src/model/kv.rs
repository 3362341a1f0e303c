//! Per-sequence KV cache: one preallocated K and V buffer per attention layer, laid out
//! `[kv_heads, capacity, head_dim]`, written in place at the sequence's position (no concat per
//! step), grown by doubling when a sequence outlives its reservation, truncated for rollback;
//! for the hybrid families also the sequence's recurrent state ([`Recurrent`]), which a cut
//! to an earlier length cannot restore. Where our CPU attention reads the cache, each layer's
//! keys are also kept as it reads them ([`KeyBlocks`]), so a step transposes only its own keys.

use std::sync::{RwLock, RwLockReadGuard};

use candle_core::{DType, Device, Tensor};

use super::recurrent::{Recurrent, StateShape};
use crate::error::EngineError;

/// The shape of one sequence's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvShape {
    pub layers: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Longest sequence the model can address (its RoPE table), in tokens.
    pub max_positions: usize,
}

impl KvShape {
    /// Bytes one token's K and V take across all layers (f32).
    pub fn bytes_per_token(&self) -> usize {
        2 * self.layers * self.kv_heads * self.head_dim * DType::F32.size_in_bytes()
    }
}

/// The keys and values of one sequence, every layer.
pub struct KvCache {
    shape: KvShape,
    k: Vec<Tensor>,
    v: Vec<Tensor>,
    len: usize,
    capacity: usize,
    device: Device,
    /// The recurrent layers' state (hybrid families), none for attention-only models.
    recurrent: Option<Recurrent>,
    /// The keys once more in the CPU attention's blocks, when a model asked for them.
    key_blocks: Option<KeyBlocks>,
}

/// Every layer's keys in blocks of `kb` positions (block `b` holds positions `b*kb..`), each
/// block transposed in groups of 16 keys ([`super::attention::key_at`]): per layer
/// `[kv_heads, blocks, kb / 16, head_dim, 16]`, written with the keys. Positions past the
/// length hold stale values, never read.
struct KeyBlocks {
    kb: usize,
    layers: Vec<RwLock<Vec<f32>>>,
}

/// One layer's key blocks, read-locked for a step ([`KvCache::key_blocks`]).
pub(crate) struct KeyBlocksRead<'a> {
    pub kb: usize,
    /// Blocks per KV head.
    pub blocks: usize,
    pub data: RwLockReadGuard<'a, Vec<f32>>,
}

impl KvCache {
    /// A cache with room for `capacity` tokens before it has to grow.
    pub(crate) fn new(
        shape: KvShape,
        capacity: usize,
        device: &Device,
    ) -> Result<Self, EngineError> {
        let capacity = capacity.clamp(1, shape.max_positions);
        let (k, v) = alloc(&shape, capacity, device)?;
        Ok(Self {
            shape,
            k,
            v,
            len: 0,
            capacity,
            device: device.clone(),
            recurrent: None,
            key_blocks: None,
        })
    }

    /// Keeps every layer's keys also in transposed blocks of `kb` positions for our CPU
    /// attention (nothing on other devices). For a fresh cache, before anything is written.
    pub(crate) fn keep_key_blocks(&mut self, kb: usize) {
        assert!(
            kb > 0 && kb.is_multiple_of(super::attention::KEY_GROUP) && self.len == 0,
            "key blocks of {kb} keys or for a used cache; this is a bug"
        );
        if self.device.is_cpu() {
            let floats = self.key_block_floats(kb, self.capacity);
            let layers = (0..self.shape.layers)
                .map(|_| RwLock::new(vec![0f32; floats]))
                .collect();
            self.key_blocks = Some(KeyBlocks { kb, layers });
        }
    }

    /// Floats of one layer's key blocks at `capacity`.
    fn key_block_floats(&self, kb: usize, capacity: usize) -> usize {
        self.shape.kv_heads * capacity.div_ceil(kb) * kb * self.shape.head_dim
    }

    /// Layer `layer`'s key blocks, read-locked, when the cache keeps them.
    pub(crate) fn key_blocks(&self, layer: usize) -> Option<KeyBlocksRead<'_>> {
        let kb = self.key_blocks.as_ref()?;
        Some(KeyBlocksRead {
            kb: kb.kb,
            blocks: self.capacity.div_ceil(kb.kb),
            data: kb.layers[layer].read().unwrap_or_else(|e| e.into_inner()),
        })
    }

    /// [`KvCache::new`] with recurrent state of `state`'s shape beside the KV rows.
    pub(crate) fn with_state(
        shape: KvShape,
        capacity: usize,
        device: &Device,
        state: StateShape,
    ) -> Result<Self, EngineError> {
        let mut cache = Self::new(shape, capacity, device)?;
        cache.recurrent = (state.layers > 0).then(|| Recurrent::new(state));
        Ok(cache)
    }

    /// The recurrent state, for the hybrid families' steps.
    pub(crate) fn recurrent_mut(&mut self) -> Option<&mut Recurrent> {
        self.recurrent.as_mut()
    }

    /// The recurrent state, when the model has any.
    #[cfg(any(test, feature = "synthetic"))]
    pub fn recurrent(&self) -> Option<&Recurrent> {
        self.recurrent.as_ref()
    }

    /// Bytes of recurrent state held, snapshots included (0 for attention-only models).
    pub(crate) fn state_bytes(&self) -> usize {
        self.recurrent.as_ref().map_or(0, Recurrent::bytes)
    }

    /// Lets the sequence be cut back by up to `n - 1` tokens: a model with recurrent state keeps
    /// the state after each of its last `n` tokens (nothing changes for attention-only models).
    pub(crate) fn keep_snapshots(&mut self, n: usize) {
        if let Some(r) = self.recurrent.as_mut() {
            r.keep_snapshots(n);
        }
    }

    /// Copies the recurrent state when the sequence reaches each of `lens`, for the prefix
    /// cache (nothing for attention-only models).
    pub(crate) fn mark_states(&mut self, lens: &[usize]) {
        if let Some(r) = self.recurrent.as_mut() {
            r.mark(lens);
        }
    }

    /// Tokens held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Layers held.
    pub(crate) fn layers(&self) -> usize {
        self.shape.layers
    }

    /// Tokens that fit before the buffers grow.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes allocated for K and V across all layers (capacity, not length); the recurrent
    /// state is [`KvCache::state_bytes`].
    pub(crate) fn bytes(&self) -> usize {
        let blocks = self.key_blocks.as_ref().map_or(0, |b| {
            self.shape.layers * self.key_block_floats(b.kb, self.capacity)
        });
        (2 * self.shape.layers * self.shape.kv_heads * self.capacity * self.shape.head_dim + blocks)
            * DType::F32.size_in_bytes()
    }

    /// Forgets every token from position `len` on (speculative rollback, preemption). Recurrent
    /// state is reset by a cut to 0, restored from its snapshot at `len`, or made unusable when
    /// it has none there.
    pub(crate) fn truncate(&mut self, len: usize) {
        if let Some(r) = self.recurrent.as_mut() {
            if len == 0 {
                r.reset();
            } else if len < self.len && !r.roll_back(len) {
                r.mark_stale();
            }
        }
        self.len = self.len.min(len);
    }

    /// Makes room for `extra` more tokens, growing (doubling) the buffers if needed.
    pub(crate) fn reserve(&mut self, extra: usize) -> Result<(), EngineError> {
        let needed = self.len + extra;
        if needed > self.shape.max_positions {
            return Err(EngineError::Refused(format!(
                "sequence of {needed} tokens exceeds the model's {} positions",
                self.shape.max_positions
            )));
        }
        if needed <= self.capacity {
            return Ok(());
        }
        let capacity = needed.max(self.capacity * 2).min(self.shape.max_positions);
        let (k, v) = alloc(&self.shape, capacity, &self.device)?;
        if self.len > 0 {
            for (new, old) in k.iter().zip(&self.k).chain(v.iter().zip(&self.v)) {
                new.slice_set(&old.narrow(1, 0, self.len)?.contiguous()?, 1, 0)?;
            }
        }
        self.k = k;
        self.v = v;
        self.grow_key_blocks(capacity);
        self.capacity = capacity;
        Ok(())
    }

    /// The key blocks at a larger `capacity`, the held positions' blocks copied over.
    fn grow_key_blocks(&mut self, capacity: usize) {
        let Some(kb) = self.key_blocks.as_ref() else {
            return;
        };
        let (k, hd) = (kb.kb, self.shape.head_dim);
        let (old_n, new_n, held) = (
            self.capacity.div_ceil(k),
            capacity.div_ceil(k),
            self.len.div_ceil(k),
        );
        let floats = self.key_block_floats(k, capacity);
        for layer in &kb.layers {
            let mut l = layer.write().unwrap_or_else(|e| e.into_inner());
            let mut grown = vec![0f32; floats];
            for g in 0..self.shape.kv_heads {
                let (from, to) = (g * old_n * k * hd, g * new_n * k * hd);
                grown[to..to + held * k * hd].copy_from_slice(&l[from..from + held * k * hd]);
            }
            *l = grown;
        }
    }

    /// Writes `k`, `v` (`[kv_heads, n, head_dim]`, contiguous) of `layer` at the current length.
    /// The length moves on only with [`KvCache::advance`], once every layer is written.
    pub(crate) fn write(&self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(), EngineError> {
        self.k[layer].slice_set(k, 1, self.len)?;
        self.v[layer].slice_set(v, 1, self.len)?;
        if let Some(kb) = &self.key_blocks {
            let mut l = kb.layers[layer].write().unwrap_or_else(|e| e.into_inner());
            super::projections::with_f32(k, |keys| {
                scatter(&mut l, keys, self.len, self.capacity, kb.kb, self.shape)
            })?;
        }
        Ok(())
    }

    /// Keys and values of `layer` for the first `len` positions, `[kv_heads, len, head_dim]`.
    pub(crate) fn view(&self, layer: usize, len: usize) -> Result<(Tensor, Tensor), EngineError> {
        Ok((
            self.k[layer].narrow(1, 0, len)?,
            self.v[layer].narrow(1, 0, len)?,
        ))
    }

    /// The whole K and V buffers of `layer`, `[kv_heads, capacity, head_dim]`.
    pub(crate) fn layer(&self, layer: usize) -> (&Tensor, &Tensor) {
        (&self.k[layer], &self.v[layer])
    }

    /// Commits `n` tokens written to every layer.
    pub(crate) fn advance(&mut self, n: usize) {
        debug_assert!(
            self.len + n <= self.capacity,
            "advance past reserve; this is a bug"
        );
        self.len += n;
    }
}

/// Keys `[kv_heads, n, head_dim]` of positions `pos..pos + n` into their blocks' columns.
fn scatter(blocks: &mut [f32], keys: &[f32], pos: usize, capacity: usize, kb: usize, s: KvShape) {
    let (hd, per_head) = (s.head_dim, capacity.div_ceil(kb) * kb * s.head_dim);
    let n = keys.len() / (s.kv_heads * hd);
    for g in 0..s.kv_heads {
        for i in 0..n {
            let p = pos + i;
            let at = g * per_head + (p / kb) * kb * hd;
            for (d, &x) in keys[(g * n + i) * hd..][..hd].iter().enumerate() {
                blocks[at + super::attention::key_at(hd, p % kb, d)] = x;
            }
        }
    }
}

#[cfg(test)]
impl KvCache {
    /// The largest absolute difference between this cache's K/V rows and `other`'s, over every
    /// layer and the held positions; an error when the lengths or layer counts differ.
    pub(crate) fn max_row_diff(&self, other: &KvCache) -> Result<f32, String> {
        if self.len != other.len || self.k.len() != other.k.len() {
            return Err(format!(
                "{} tokens in {} layers against {} tokens in {} layers",
                self.len,
                self.k.len(),
                other.len,
                other.k.len()
            ));
        }
        let mut worst = 0f32;
        for layer in 0..self.k.len() {
            let (ka, va) = self.view(layer, self.len).map_err(|e| e.to_string())?;
            let (kb, vb) = other.view(layer, other.len).map_err(|e| e.to_string())?;
            for (a, b) in [(ka, kb), (va, vb)] {
                let d = (a - b)
                    .and_then(|d| d.abs())
                    .and_then(|d| d.max_all())
                    .and_then(|d| d.to_scalar::<f32>())
                    .map_err(|e| e.to_string())?;
                worst = worst.max(d);
            }
        }
        Ok(worst)
    }
}

fn alloc(
    shape: &KvShape,
    capacity: usize,
    device: &Device,
) -> Result<(Vec<Tensor>, Vec<Tensor>), EngineError> {
    let dims = (shape.kv_heads, capacity, shape.head_dim);
    let mut k = Vec::with_capacity(shape.layers);
    let mut v = Vec::with_capacity(shape.layers);
    for _ in 0..shape.layers {
        k.push(Tensor::zeros(dims, DType::F32, device)?);
        v.push(Tensor::zeros(dims, DType::F32, device)?);
    }
    Ok((k, v))
}

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;
