//! Attention through candle tensor ops: the device-generic path (any device; on the CPU with
//! `--kernels candle`), shared by the model families. Per sequence: RoPE on the first `rot`
//! dimensions of each head (none on a layer without RoPE), the new K/V written to the cache,
//! scores `q·k / divisor`, optionally soft-capped, masked causally and to a sliding window,
//! softmax, weighted sum of V — what [`super::attention::attend_scored`] computes on slices.

use candle_core::{Device, Tensor};

use super::super::attention::{Dims, Scoring};
use super::super::kv::KvCache;
use super::StepPlan;
use crate::error::EngineError;

/// One layer's attention on candle ops.
pub(crate) struct OpsAttention<'a> {
    pub dims: Dims,
    pub scoring: Scoring,
    /// The step's RoPE angles `(cos, sin)`, `[T, 1, rot / 2]`; none for a layer without RoPE.
    pub rope: Option<(&'a Tensor, &'a Tensor)>,
    /// Per sequence, the additive mask of its scores (none: it sees every key in its cache),
    /// from [`StepPlan::masks`] with this scoring's window.
    pub masks: &'a [Option<Tensor>],
}

impl OpsAttention<'_> {
    /// Layer `l`'s attention for the step's stacked `[T, q + k + v]` projection.
    pub(crate) fn run(
        &self,
        l: usize,
        qkv: &Tensor,
        plan: &StepPlan,
        caches: &[&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let c = &self.dims;
        let t = plan.tokens.len();
        let (qw, kw) = (c.heads * c.head_dim, c.kv_heads * c.head_dim);
        let q = qkv.narrow(1, 0, qw)?.contiguous()?;
        let k = qkv.narrow(1, qw, kw)?.contiguous()?;
        let (q, k) = (
            q.reshape((t, c.heads, 1, c.head_dim))?,
            k.reshape((t, c.kv_heads, 1, c.head_dim))?,
        );
        let (q, k) = match self.rope {
            Some((cos, sin)) => (rope(c, &q, cos, sin)?, rope(c, &k, cos, sin)?),
            None => (q, k),
        };
        let v = qkv
            .narrow(1, qw + kw, kw)?
            .contiguous()?
            .reshape((t, c.kv_heads, c.head_dim))?;
        let mut outs = Vec::with_capacity(plan.segments.len());
        for (seg, (cache, mask)) in plan.segments.iter().zip(caches.iter().zip(self.masks)) {
            let (start, n) = (seg.start, seg.len);
            let k_new = k
                .narrow(0, start, n)?
                .reshape((n, c.kv_heads, c.head_dim))?
                .transpose(0, 1)?
                .contiguous()?;
            let v_new = v.narrow(0, start, n)?.transpose(0, 1)?.contiguous()?;
            cache.write(l, &k_new, &v_new)?;
            let q_seg = q.narrow(0, start, n)?;
            outs.push(self.attend(&q_seg, cache, (l, seg.pos + n), mask.as_ref())?);
        }
        Ok(match outs.len() {
            1 => outs.pop().expect("one segment"),
            _ => Tensor::cat(&outs, 0)?,
        })
    }

    /// One sequence's `n` queries `[n, heads, 1, head_dim]` over its `total` cached keys of
    /// layer `l`: `[n, heads * head_dim]`.
    fn attend(
        &self,
        q: &Tensor,
        cache: &KvCache,
        (l, total): (usize, usize),
        mask: Option<&Tensor>,
    ) -> Result<Tensor, EngineError> {
        let c = &self.dims;
        let n = q.dim(0)?;
        let group = c.heads / c.kv_heads;
        let (k_all, v_all) = cache.view(l, total)?;
        let q = q
            .reshape((n, c.heads, c.head_dim))?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((c.kv_heads, group * n, c.head_dim))?;
        let mut att = (q.matmul(&k_all.t()?)? / f64::from(self.scoring.divisor))?;
        if let Some(cap) = self.scoring.softcap {
            att = ((att / f64::from(cap))?.tanh()? * f64::from(cap))?;
        }
        let att = match mask {
            Some(m) => att
                .reshape((c.kv_heads, group, n, total))?
                .broadcast_add(m)?
                .reshape((c.kv_heads, group * n, total))?,
            None => att,
        };
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        Ok(att
            .matmul(&v_all.contiguous()?)?
            .reshape((c.heads, n, c.head_dim))?
            .transpose(0, 1)?
            .reshape((n, c.heads * c.head_dim))?)
    }
}

/// RoPE on the first `rot` dimensions of each head of `x` (all of them unless the family
/// rotates part of the head, as phi3 does); the rest pass through.
fn rope(c: &Dims, x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
    let rotate = |x: &Tensor| match c.interleaved {
        true => candle_nn::rotary_emb::rope_i(x, cos, sin),
        false => candle_nn::rotary_emb::rope(x, cos, sin),
    };
    if c.rot == c.head_dim {
        return rotate(x);
    }
    let last = x.rank() - 1;
    let turned = rotate(&x.narrow(last, 0, c.rot)?.contiguous()?)?;
    Tensor::cat(
        &[
            turned,
            x.narrow(last, c.rot, c.head_dim - c.rot)?.contiguous()?,
        ],
        last,
    )
}

impl StepPlan {
    /// The step's RoPE angles from the tables `[positions, rot / 2]`: `[T, 1, rot / 2]`.
    pub(crate) fn angles(
        &self,
        (cos, sin): (&Tensor, &Tensor),
    ) -> candle_core::Result<[Tensor; 2]> {
        let pos = Tensor::new(self.positions.as_slice(), cos.device())?;
        let t = self.tokens.len();
        Ok([
            cos.index_select(&pos, 0)?.reshape((t, 1, ()))?,
            sin.index_select(&pos, 0)?.reshape((t, 1, ()))?,
        ])
    }

    /// Per segment, the additive mask `[n, pos + n]` (0 or -inf) hiding later keys and, with a
    /// `window`, keys more than `window - 1` before the query; none where nothing is hidden.
    pub(crate) fn masks(
        &self,
        window: Option<usize>,
        dev: &Device,
    ) -> candle_core::Result<Vec<Option<Tensor>>> {
        self.segments
            .iter()
            .map(|s| {
                let first = |i: usize| window.map_or(0, |w| (s.pos + i + 1).saturating_sub(w));
                if s.len == 1 && first(0) == 0 {
                    return Ok(None);
                }
                let total = s.pos + s.len;
                let data: Vec<f32> = (0..s.len)
                    .flat_map(|i| {
                        (0..total).map(move |j| match j > s.pos + i || j < first(i) {
                            true => f32::NEG_INFINITY,
                            false => 0.0,
                        })
                    })
                    .collect();
                Tensor::from_vec(data, (s.len, total), dev).map(Some)
            })
            .collect()
    }
}
