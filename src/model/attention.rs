//! The CPU attention block of one step, straight on f32 slices (no candle ops): RoPE applied
//! while copying each token's q/k out of the fused QKV projection, the new k/v handed to the
//! KV cache, then causal attention per query token over exactly its own keys `0..=pos` (scores,
//! softmax, weighted sum of V), tiled over query and key blocks ([`tiled`]), parallel when the
//! step is large.
//!
//! Scoring ([`Scoring`]) can divide by another scale, soft-cap scores and restrict a query to
//! the last `window` keys (Gemma's sliding-window layers).
//!
//! Every query row's arithmetic depends only on its own position and the cache contents, in a
//! fixed order, so a token's output is bit-identical whether its prompt arrives whole or in
//! chunks, and whichever other sequences share the step. Only the CPU uses this path; other
//! devices use the candle-op attention in `llama.rs`.

mod tiled;
#[cfg(target_arch = "x86_64")]
mod wide;

/// Below this many multiply-adds (query-key pairs × heads × head width, scores and values) a
/// step's attention runs on one thread: about what a parallel call costs to start.
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// Model dimensions the block needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Pairs `(x[2i], x[2i+1])` (GGUF llama) rather than halves.
    pub interleaved: bool,
    /// The leading dimensions of a head that RoPE rotates (`head_dim` unless partial rotary);
    /// the tables hold `rot / 2` angles a position.
    pub rot: usize,
}

impl Dims {
    fn q_width(&self) -> usize {
        self.heads * self.head_dim
    }
    fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

/// Rotates one head vector (its rotated part, under partial rotary) in place by the angles of
/// one position (candle's `rope`/`rope_i` formulas, value for value).
pub(crate) fn rope_head(x: &mut [f32], cos: &[f32], sin: &[f32], interleaved: bool) {
    let half = x.len() / 2;
    for i in 0..half {
        let (a, b) = if interleaved {
            (2 * i, 2 * i + 1)
        } else {
            (i, i + half)
        };
        let (x1, x2) = (x[a], x[b]);
        x[a] = x1 * cos[i] - x2 * sin[i];
        x[b] = x1 * sin[i] + x2 * cos[i];
    }
}

/// Splits rows of `qkv` (`[T, q + 2 kv]`) into RoPE'd queries `[T, q]` and, for the tokens
/// `rows`, new keys and values laid out `[kv_heads, n, head_dim]` as the cache stores them.
/// `positions[t]` is token t's position; `cos`/`sin` are `[positions, head_dim / 2]` tables.
pub(crate) struct Split<'a> {
    pub dims: Dims,
    pub qkv: &'a [f32],
    pub positions: &'a [u32],
    pub cos: &'a [f32],
    pub sin: &'a [f32],
}

impl Split<'_> {
    fn angles(&self, t: usize) -> (&[f32], &[f32]) {
        let h = self.dims.rot / 2;
        let p = self.positions[t] as usize;
        (&self.cos[p * h..(p + 1) * h], &self.sin[p * h..(p + 1) * h])
    }

    fn row(&self, t: usize) -> &[f32] {
        let w = self.dims.q_width() + 2 * self.dims.kv_width();
        &self.qkv[t * w..(t + 1) * w]
    }

    /// RoPE'd queries of all tokens, `[T, heads * head_dim]`.
    pub(crate) fn queries(&self) -> Vec<f32> {
        let (qw, hd) = (self.dims.q_width(), self.dims.head_dim);
        let t_all = self.positions.len();
        let mut q = Vec::with_capacity(t_all * qw);
        for t in 0..t_all {
            q.extend_from_slice(&self.row(t)[..qw]);
            let (cos, sin) = self.angles(t);
            for head in q[t * qw..].chunks_exact_mut(hd) {
                rope_head(&mut head[..self.dims.rot], cos, sin, self.dims.interleaved);
            }
        }
        q
    }

    /// RoPE'd keys and values of tokens `rows`, each `[kv_heads, n, head_dim]`.
    pub(crate) fn new_kv(&self, rows: std::ops::Range<usize>) -> (Vec<f32>, Vec<f32>) {
        let (d, n) = (self.dims, rows.len());
        let (qw, kw, hd) = (d.q_width(), d.kv_width(), d.head_dim);
        let mut k = vec![0f32; n * kw];
        let mut v = vec![0f32; n * kw];
        for (i, t) in rows.enumerate() {
            let row = self.row(t);
            let (cos, sin) = self.angles(t);
            for g in 0..d.kv_heads {
                let dst = (g * n + i) * hd;
                k[dst..dst + hd].copy_from_slice(&row[qw + g * hd..qw + (g + 1) * hd]);
                rope_head(&mut k[dst..dst + d.rot], cos, sin, d.interleaved);
                v[dst..dst + hd].copy_from_slice(&row[qw + kw + g * hd..qw + kw + (g + 1) * hd]);
            }
        }
        (k, v)
    }
}

/// One sequence's keys and values for a layer: `[kv_heads, capacity, head_dim]` slices, and
/// the keys in transposed blocks when the cache keeps them.
#[derive(Clone, Copy)]
pub(crate) struct KvSlices<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub capacity: usize,
    pub key_blocks: Option<KeyBlocks<'a>>,
}

/// Keys in blocks of `kb` positions, `[kv_heads, blocks, kb / KEY_GROUP, head_dim, KEY_GROUP]`
/// ([`key_at`]).
#[derive(Clone, Copy)]
pub(crate) struct KeyBlocks<'a> {
    pub data: &'a [f32],
    pub kb: usize,
    pub blocks: usize,
}

/// Keys per block of the CPU attention at head dimension `hd` (what a cache keeps them in).
pub(crate) fn key_block(hd: usize) -> usize {
    tiled::key_block(hd)
}

/// Keys per group of a transposed key block: a block of `kb` keys is `kb / KEY_GROUP` groups,
/// each `[head_dim, KEY_GROUP]`, so scoring a register tile of 16 keys reads one group front to
/// back (64 bytes per element) rather than 64 bytes of every `kb * 4`-byte row; and a step
/// scores only the groups that hold keys. `perf record` of the engine bench `--decode-only 3
/// --decode 128` (default model, 2 threads, Zen 3), samples in the attention: 2 878 with
/// `[head_dim, kb]` blocks scored whole, 2 411 scoring only groups that hold keys, 1 959 with
/// these groups as well (same bits: the tests compare kept, own and plain).
pub(crate) const KEY_GROUP: usize = 16;

/// Where element `d` of key `k` of a block lies in the block's transposed keys.
#[inline(always)]
pub(crate) fn key_at(hd: usize, k: usize, d: usize) -> usize {
    (k / KEY_GROUP * hd + d) * KEY_GROUP + k % KEY_GROUP
}

/// One sequence's query rows of the step.
#[derive(Clone, Copy)]
pub(crate) struct SegmentRows {
    /// First row in the step.
    pub start: usize,
    pub len: usize,
    /// Tokens in the cache before this step (the first row's position).
    pub pos: usize,
}

/// How scores are formed and which keys a query sees (beyond causality).
#[derive(Debug, Clone, Copy)]
pub struct Scoring {
    /// Scores are `q·k / divisor` (llama: sqrt(head_dim)).
    pub divisor: f32,
    /// Keys a query sees, itself included (a sliding-window layer); `None`: every earlier key.
    pub window: Option<usize>,
    /// `cap · tanh(s / cap)` on each score, when set.
    pub softcap: Option<f32>,
}

impl Scoring {
    /// Plain causal attention scaled by 1/sqrt(head_dim).
    pub fn causal(head_dim: usize) -> Self {
        Self {
            divisor: (head_dim as f32).sqrt(),
            window: None,
            softcap: None,
        }
    }
}

/// Causal attention of every query row, `out[T, heads * head_dim]`, with the scoring (scale,
/// window, soft-cap) given ([`tiled`]).
pub fn attend_scored(
    dims: Dims,
    scoring: Scoring,
    q: &[f32],
    segments: &[(SegmentRows, KvSlices)],
    out: &mut [f32],
) {
    let pairs: usize = segments
        .iter()
        .map(|(s, _)| s.len * (s.pos + s.len))
        .sum::<usize>()
        * dims.heads;
    let macs = pairs * dims.head_dim * 2;
    tiled::attend(dims, scoring, q, segments, out, macs >= PARALLEL_MIN_MACS);
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;
