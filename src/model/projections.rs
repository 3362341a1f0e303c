//! The stacked projections of a llama layer: q/k/v and gate/up as one matmul each when our
//! kernels hold the weights (one weight pass and one activation quantization instead of three
//! or two), `act(gate) * up` in one pass over the stacked output (rows in parallel), and
//! helpers to read a CPU tensor's f32 data in place.

use std::mem::MaybeUninit;

use candle_core::{CpuStorage, Storage, Tensor};

use super::linear::Linear;
use super::vmath;
use crate::kernels::matmul::filled;

/// The q, k and v projections: one stacked matmul (`[T, q + k + v]`) when our kernels allow.
pub(crate) enum Qkv {
    Fused(Linear),
    Split(Linear, Linear, Linear),
}

impl Qkv {
    /// Stacks the three when [`Linear::fuse`] can.
    pub(crate) fn new(q: Linear, k: Linear, v: Linear) -> candle_core::Result<Self> {
        Ok(match Linear::fuse(&[&q, &k, &v])? {
            Some(f) => Self::Fused(f),
            None => Self::Split(q, k, v),
        })
    }

    /// The three outputs side by side, `[T, q + k + v]`.
    pub(crate) fn forward(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Fused(f) => f.forward(h),
            Self::Split(q, k, v) => Tensor::cat(&[q.forward(h)?, k.forward(h)?, v.forward(h)?], 1),
        }
    }

    /// The storage of the q projection, for reports.
    pub(crate) fn q_storage(&self) -> String {
        match self {
            Self::Fused(f) | Self::Split(f, _, _) => f.storage(),
        }
    }
}

/// The gate's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// `x · sigmoid(x)` (llama).
    Silu,
    /// GELU, tanh approximation (`gelu_pytorch_tanh`, Gemma).
    GeluTanh,
}

impl Act {
    /// `out[i] = act(g[i]) * u[i]` (every element of `out` written), one loop per activation
    /// ([`vmath`]: both vectorise).
    fn gate(self, g: &[f32], u: &[f32], out: &mut [MaybeUninit<f32>]) {
        assert!(
            g.len() == out.len() && u.len() == out.len(),
            "gate: lengths differ"
        );
        let it = out.iter_mut().zip(g.iter().zip(u));
        match self {
            Self::Silu => it.for_each(|(o, (&g, &u))| _ = o.write(vmath::silu(g) * u)),
            Self::GeluTanh => it.for_each(|(o, (&g, &u))| _ = o.write(vmath::gelu_tanh(g) * u)),
        }
    }

    /// `act(gate) * up` of every row of `gu` (`[T, 2 ff]`, each row's gate then its up) into
    /// `out` (`[T, ff]`, every element written), in pieces across the pool when more than one.
    fn gate_rows(self, gu: &[f32], ff: usize, out: &mut [MaybeUninit<f32>]) {
        assert_eq!(
            gu.len(),
            2 * out.len(),
            "gate: gate/up is not twice the output"
        );
        let parallel = out.len() > GATE_CHUNK;
        let rows = out.chunks_exact_mut(ff).zip(gu.chunks_exact(2 * ff));
        // Every row's (piece of output, gate, up) pieces.
        let pieces = rows.flat_map(|(o, gu)| {
            let (g, u) = gu.split_at(ff);
            let gu = g.chunks(GATE_CHUNK).zip(u.chunks(GATE_CHUNK));
            o.chunks_mut(GATE_CHUNK).zip(gu)
        });
        if parallel {
            let pieces: Vec<_> = pieces.collect();
            crate::kernels::team::for_each_item(pieces, |(o, (g, u))| self.gate(g, u, o));
        } else {
            pieces.for_each(|(o, (g, u))| self.gate(g, u, o));
        }
    }
}

/// Gate elements per parallel piece of a step's activation, and below how many elements in all
/// it runs on one thread. A decode step's rows are split too (SiLU's then scalar exponential was
/// no small share of a step of 1-3 rows; it ran on one thread below 32 768 elements before).
/// Engine bench `--decode-only 3 --decode 128` (default model, 2 threads, Zen 3), 3 alternated
/// pairs, best of 3 rounds: 262.9 / 268.3 / 255.2 -> 304.0 / 274.3 / 266.5 tok/s; one sequence
/// 137.3 / 115.3 / 123.4 -> 122.8 / 114.3 / 124.5 (within this machine's noise).
const GATE_CHUNK: usize = 512;

/// The MLP's gate and up projections: one stacked matmul when our kernels allow, then
/// `act(gate) * up` in one pass over its output.
pub(crate) enum GateUp {
    Fused(Linear),
    Split(Linear, Linear),
}

impl GateUp {
    /// Stacks the two when [`Linear::fuse`] can.
    pub(crate) fn new(gate: Linear, up: Linear) -> candle_core::Result<Self> {
        Ok(match Linear::fuse(&[&gate, &up])? {
            Some(f) => Self::Fused(f),
            None => Self::Split(gate, up),
        })
    }

    /// `silu(h Gᵀ) * (h Uᵀ)`, `[T, ffn]`.
    pub(crate) fn forward(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        self.forward_act(h, Act::Silu)
    }

    /// `act(h Gᵀ) * (h Uᵀ)`, `[T, ffn]`.
    pub fn forward_act(&self, h: &Tensor, act: Act) -> candle_core::Result<Tensor> {
        match self {
            Self::Split(g, u) => {
                let g = g.forward(h)?;
                let g = match act {
                    Act::Silu => candle_nn::ops::silu(&g)?,
                    Act::GeluTanh => g.gelu()?,
                };
                g * u.forward(h)?
            }
            // A file's own fused matrix (phi3) on candle's kernels: tensor ops, any device.
            Self::Fused(f) if !f.is_ours() => {
                let gu = f.forward(h)?;
                let ff = gu.dim(1)? / 2;
                let g = gu.narrow(1, 0, ff)?;
                let g = match act {
                    Act::Silu => candle_nn::ops::silu(&g)?,
                    Act::GeluTanh => g.gelu()?,
                };
                g * gu.narrow(1, ff, ff)?
            }
            Self::Fused(f) => {
                let gu = f.forward(h)?;
                let (t, two_f) = gu.dims2()?;
                let ff = two_f / 2;
                // SAFETY: `gate_rows` writes every element of its output.
                let out = with_f32(&gu, |gu| unsafe {
                    filled(t * ff, |out| act.gate_rows(gu, ff, out))
                })?;
                Tensor::from_vec(out, (t, ff), gu.device())
            }
        }
    }
}

/// Runs `f` on the contiguous f32 CPU data of `t`.
pub(crate) fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> candle_core::Result<R> {
    let t = t.contiguous()?;
    let (storage, layout) = t.storage_and_layout();
    let data = cpu_f32(&storage)?;
    Ok(f(&data[layout.start_offset()..][..t.elem_count()]))
}

/// The f32 data of a CPU storage.
pub(crate) fn cpu_f32(s: &Storage) -> candle_core::Result<&[f32]> {
    match s {
        Storage::Cpu(CpuStorage::F32(v)) => Ok(v),
        _ => candle_core::bail!("expected f32 CPU storage"),
    }
}

/// [`qk_norm`] through candle ops (any device: the device-generic path).
pub(crate) fn qk_norm_ops(
    qkv: &Tensor,
    (heads, kv_heads, hd): (usize, usize, usize),
    (q_w, k_w): (&[f32], &[f32]),
    eps: f32,
) -> candle_core::Result<Tensor> {
    let (t, w) = qkv.dims2()?;
    let dev = qkv.device();
    let norm = |x: Tensor, n: usize, wt: &[f32]| -> candle_core::Result<Tensor> {
        let wt = Tensor::from_slice(wt, hd, dev)?;
        candle_nn::ops::rms_norm(&x.contiguous()?.reshape((t * n, hd))?, &wt, eps)?
            .reshape((t, n * hd))
    };
    let q = norm(qkv.narrow(1, 0, heads * hd)?, heads, q_w)?;
    let k = norm(qkv.narrow(1, heads * hd, kv_heads * hd)?, kv_heads, k_w)?;
    let v = qkv.narrow(1, (heads + kv_heads) * hd, w - (heads + kv_heads) * hd)?;
    Tensor::cat(&[q, k, v.contiguous()?], 1)
}

/// RMSNorm of every q and k head of a stacked `[T, q + k + v]` projection (`heads`: query heads,
/// kv heads, head size; `norms`: the q and k weights, one per head element), as Gemma 3 and
/// Qwen3 apply it before RoPE.
pub(crate) fn qk_norm(
    qkv: &Tensor,
    (heads, kv_heads, hd): (usize, usize, usize),
    (q_w, k_w): (&[f32], &[f32]),
    eps: f32,
    device: &candle_core::Device,
) -> Result<Tensor, crate::error::EngineError> {
    let (t, w) = qkv.dims2()?;
    let mut data = with_f32(qkv, <[f32]>::to_vec)?;
    for row in data.chunks_exact_mut(w) {
        let (q, rest) = row.split_at_mut(heads * hd);
        for head in q.chunks_exact_mut(hd) {
            rms_norm_in_place(head, q_w, eps);
        }
        for head in rest[..kv_heads * hd].chunks_exact_mut(hd) {
            rms_norm_in_place(head, k_w, eps);
        }
    }
    Ok(Tensor::from_vec(data, (t, w), device)?)
}

/// `x / sqrt(mean(x²) + eps) · w`, as candle's `rms_norm` computes it.
fn rms_norm_in_place(x: &mut [f32], w: &[f32], eps: f32) {
    let mean = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let inv = 1.0 / (mean + eps).sqrt();
    for (v, &w) in x.iter_mut().zip(w) {
        *v = *v * inv * w;
    }
}
