//! The model's one linear layer: quantized GGUF blocks on the CPU through our kernels
//! ([`crate::kernels`]: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K), other quantized types and other
//! devices through candle's `QMatMul`, dense f16/bf16 matrices on the CPU through our dense
//! kernels ([`crate::kernels::dense`]), other dense matrices (f32; any on a GPU) through
//! candle's gemm; activations are f32 on every path; optional bias.

use std::mem::MaybeUninit;
use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, Module, Storage, Tensor};

use crate::config::WeightDType;
use crate::kernels::dense::{HalfMatrix, HalfType};
use crate::kernels::matmul::filled;
use crate::kernels::{QMatrix, QType};

/// How a matrix is stored.
#[derive(Debug, Clone)]
pub(crate) enum Weight {
    /// GGUF quantized blocks on the CPU, run by our kernels.
    Kernel(Arc<QMatrix>),
    /// GGUF quantized blocks (or a small f32/f16 tensor candle keeps dense).
    Quant(QMatMul),
    /// Dense f16/bf16 on the CPU, run by our kernels.
    Half(Arc<HalfMatrix>),
    /// Dense `[out, in]` in its storage dtype.
    Dense(Tensor),
}

/// `y = x W^T (+ b)` for `x` of shape `[T, in]`, f32.
#[derive(Debug, Clone)]
pub struct Linear {
    weight: Weight,
    bias: Option<Tensor>,
}

impl Linear {
    /// From a GGUF tensor, kept quantized (`Q`: by our kernels when `ours` and they run its
    /// block type, else candle's `QMatMul`) or dequantized to the dense dtype asked for.
    pub(crate) fn from_qtensor(
        q: QTensor,
        dtype: WeightDType,
        ours: bool,
    ) -> candle_core::Result<Self> {
        let device = q.device();
        let weight = match dense_dtype(dtype) {
            None => match kernel_matrix(&q, ours)? {
                Some(m) => Weight::Kernel(Arc::new(m)),
                None => Weight::Quant(QMatMul::from_qtensor(q)?),
            },
            Some(dt) => dense_weight(q.dequantize(&device)?, dt, ours)?,
        };
        Ok(Self { weight, bias: None })
    }

    /// A matrix already in our kernels' block layout (borrowed from a mapped file or owned).
    pub(crate) fn from_kernel(m: QMatrix) -> Self {
        Self {
            weight: Weight::Kernel(Arc::new(m)),
            bias: None,
        }
    }

    /// From a dense tensor `[out, in]`; `Q` keeps the file's dtype. f16/bf16 run on our
    /// kernels when `ours`.
    pub(crate) fn from_dense(
        w: Tensor,
        dtype: WeightDType,
        ours: bool,
    ) -> candle_core::Result<Self> {
        let dt = dense_dtype(dtype).unwrap_or(w.dtype());
        Ok(Self {
            weight: dense_weight(w, dt, ours)?,
            bias: None,
        })
    }

    /// Adds a bias `[out]` (kept f32).
    pub(crate) fn with_bias(mut self, bias: Option<Tensor>) -> candle_core::Result<Self> {
        self.bias = bias.map(|b| b.to_dtype(DType::F32)).transpose()?;
        Ok(self)
    }

    /// Applies the layer to `x` `[T, in]`.
    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = match &self.weight {
            Weight::Kernel(m) => {
                cpu_forward(x, m.k(), m.n(), |xs, t, o| m.matmul_uninit(xs, t, o))?
            }
            Weight::Half(m) => cpu_forward(x, m.k(), m.n(), |xs, t, o| m.matmul_uninit(xs, t, o))?,
            Weight::Quant(q) => q.forward(x)?,
            Weight::Dense(w) if w.dtype() == DType::F32 => x.matmul(&w.t()?)?,
            Weight::Dense(w) => x
                .to_dtype(w.dtype())?
                .matmul(&w.t()?)?
                .to_dtype(DType::F32)?,
        };
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }

    /// The layers stacked along the output axis (one matmul computing all their outputs side
    /// by side), when all use our kernels with one block (or element) type and input width; `None`
    /// otherwise. Biases are stacked too (a missing one as zeros).
    pub(crate) fn fuse(parts: &[&Linear]) -> candle_core::Result<Option<Linear>> {
        let Some(weight) = fused_weight(parts) else {
            return Ok(None);
        };
        let bias = if parts.iter().any(|p| p.bias.is_some()) {
            let b: Vec<Tensor> = parts
                .iter()
                .map(|p| match &p.bias {
                    Some(b) => Ok(b.clone()),
                    None => Tensor::zeros(p.out_features(), DType::F32, &Device::Cpu),
                })
                .collect::<candle_core::Result<_>>()?;
            Some(Tensor::cat(&b, 0)?)
        } else {
            None
        };
        Ok(Some(Linear { weight, bias }))
    }

    /// Output features.
    pub(crate) fn out_features(&self) -> usize {
        match &self.weight {
            Weight::Kernel(m) => m.n(),
            Weight::Half(m) => m.n(),
            Weight::Quant(QMatMul::QTensor(q)) => q.shape().dims()[0],
            Weight::Quant(QMatMul::Tensor(t))
            | Weight::Quant(QMatMul::TensorF16(t))
            | Weight::Dense(t) => t.dims()[0],
        }
    }

    /// Whether our CPU kernels run the matrix (quantized blocks or dense f16/bf16): its output
    /// is then a contiguous f32 CPU tensor.
    pub(crate) fn is_ours(&self) -> bool {
        matches!(self.weight, Weight::Kernel(_) | Weight::Half(_))
    }

    /// The quantized blocks our kernels run, when that is how the matrix is stored.
    pub fn kernel_matrix(&self) -> Option<&Arc<QMatrix>> {
        match &self.weight {
            Weight::Kernel(m) => Some(m),
            _ => None,
        }
    }

    /// Short description of the storage, e.g. `q4_1` or `dense f32`.
    pub(crate) fn storage(&self) -> String {
        match &self.weight {
            Weight::Kernel(m) => format!("{:?}", m.qtype()).to_lowercase(),
            Weight::Half(m) => match m.half_type() {
                HalfType::F16 => "dense f16".into(),
                HalfType::Bf16 => "dense bf16".into(),
            },
            // No kernel of ours for this type: candle's quantized matmul runs it.
            Weight::Quant(QMatMul::QTensor(q)) => {
                format!("{:?} (candle)", q.dtype()).to_lowercase()
            }
            Weight::Quant(QMatMul::Tensor(t))
            | Weight::Quant(QMatMul::TensorF16(t))
            | Weight::Dense(t) => format!("dense {:?}", t.dtype()).to_lowercase(),
        }
    }
}

/// The parts' matrices stacked, when all are our kernels' of one block (or element) type and
/// input width.
fn fused_weight(parts: &[&Linear]) -> Option<Weight> {
    let quant = every(parts, |w| match w {
        Weight::Kernel(m) => Some(m.as_ref()),
        _ => None,
    });
    if let Some(m) = quant.and_then(|m| QMatrix::concat(&m)) {
        return Some(Weight::Kernel(Arc::new(m)));
    }
    let half = every(parts, |w| match w {
        Weight::Half(m) => Some(m.as_ref()),
        _ => None,
    });
    Some(Weight::Half(Arc::new(HalfMatrix::concat(&half?)?)))
}

/// `pick` of every part's weight, when it picks one from each.
fn every<'a, T>(
    parts: &[&'a Linear],
    pick: impl Fn(&'a Weight) -> Option<&'a T>,
) -> Option<Vec<&'a T>> {
    parts.iter().map(|p| pick(&p.weight)).collect()
}

/// The dense dtype a `--dtype` asks for; `None` keeps the file's storage.
pub(crate) fn dense_dtype(dtype: WeightDType) -> Option<DType> {
    match dtype {
        WeightDType::Q => None,
        WeightDType::F32 => Some(DType::F32),
        WeightDType::F16 => Some(DType::F16),
        WeightDType::Bf16 => Some(DType::BF16),
    }
}

/// The GGUF bytes of `q` as a [`QMatrix`] when our kernels handle it: `ours` (on the CPU), a
/// 2-D `[out, in]` matrix of a supported block type.
fn kernel_matrix(q: &QTensor, ours: bool) -> candle_core::Result<Option<QMatrix>> {
    let Some(qtype) = QType::from_ggml(q.dtype()) else {
        return Ok(None);
    };
    let &[n, k] = q.shape().dims() else {
        return Ok(None);
    };
    if !ours {
        return Ok(None);
    }
    Ok(QMatrix::new(qtype, n, k, q.data()?.into_owned()))
}

/// `w` stored as `dt`: f16/bf16 2-D matrices as our [`HalfMatrix`] when `ours` (on the CPU),
/// anything else as a tensor for candle's gemm.
fn dense_weight(w: Tensor, dt: DType, ours: bool) -> candle_core::Result<Weight> {
    let ty = match dt {
        DType::F16 => Some(HalfType::F16),
        DType::BF16 => Some(HalfType::Bf16),
        _ => None,
    };
    match (ty, w.dims(), ours && w.device().is_cpu()) {
        (Some(ty), &[n, k], true) => {
            // Rounded once, to nearest even as candle's `to_dtype(dt)` rounds (f32 is exact
            // for a tensor already of `dt`).
            let v = w.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            let m = HalfMatrix::from_f32(ty, n, k, &v).expect("n × k values");
            Ok(Weight::Half(Arc::new(m)))
        }
        _ => Ok(Weight::Dense(w.to_dtype(dt)?)),
    }
}

/// `x [.., k] · Wᵀ` through one of our kernels (`run(x, T, out)`), on the contiguous f32 CPU
/// slice of `x`.
fn cpu_forward(
    x: &Tensor,
    k: usize,
    n: usize,
    run: impl FnOnce(&[f32], usize, &mut [MaybeUninit<f32>]),
) -> candle_core::Result<Tensor> {
    let x = x.to_dtype(DType::F32)?.contiguous()?;
    let mut dims = x.dims().to_vec();
    if dims.last() != Some(&k) {
        candle_core::bail!("linear: input {:?} does not end in {k} features", x.shape());
    }
    let t = x.elem_count() / k;
    let (storage, layout) = x.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        candle_core::bail!("linear: quantized kernel weights need CPU input");
    };
    let xs = &cpu.as_slice::<f32>()?[layout.start_offset()..][..t * k];
    // SAFETY: the kernels' matmuls write every element of their output.
    let out = unsafe { filled(t * n, |out| run(xs, t, out)) };
    drop(storage);
    *dims.last_mut().expect("dims end in k") = n;
    Tensor::from_vec(out, dims, x.device())
}
