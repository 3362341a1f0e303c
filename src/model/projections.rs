//! The stacked projections of a llama layer: q/k/v and gate/up as one matmul each when our
//! kernels hold the weights (one weight pass and one activation quantization instead of three
//! or two), `silu(gate) * up` in one pass over the stacked output, and helpers to read a CPU
//! tensor's f32 data in place.

use candle_core::{CpuStorage, Storage, Tensor};

use super::linear::Linear;

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
    fn apply(self, g: f32) -> f32 {
        match self {
            Self::Silu => g / (1.0 + (-g).exp()),
            Self::GeluTanh => {
                const C: f32 = 0.797_884_6; // sqrt(2 / pi)
                0.5 * g * (1.0 + (C * (g + 0.044_715 * g * g * g)).tanh())
            }
        }
    }
}

/// The MLP's gate and up projections: one stacked matmul when our kernels allow, then
/// `silu(gate) * up` in one pass over its output.
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
            Self::Fused(f) => {
                let gu = f.forward(h)?;
                let (t, two_f) = gu.dims2()?;
                let ff = two_f / 2;
                let out = with_f32(&gu, |gu| {
                    let mut out = Vec::with_capacity(t * ff);
                    for row in gu.chunks_exact(two_f) {
                        let (g, u) = row.split_at(ff);
                        out.extend(g.iter().zip(u).map(|(&g, &u)| act.apply(g) * u));
                    }
                    out
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
