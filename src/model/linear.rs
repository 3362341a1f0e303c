//! The model's one linear layer: quantized GGUF blocks on the CPU through our kernels
//! ([`crate::kernels`]: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K), other quantized types and other
//! devices through candle's `QMatMul`, dense matrices (f32/f16/bf16) through candle's gemm;
//! activations are f32 on every path; optional bias.

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, Module, Storage, Tensor};

use crate::config::WeightDType;
use crate::kernels::{QMatrix, QType};

/// How a matrix is stored.
#[derive(Debug, Clone)]
pub(crate) enum Weight {
    /// GGUF quantized blocks on the CPU, run by our kernels.
    Kernel(Arc<QMatrix>),
    /// GGUF quantized blocks (or a small f32/f16 tensor candle keeps dense).
    Quant(QMatMul),
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
            Some(dt) => Weight::Dense(q.dequantize(&device)?.to_dtype(dt)?),
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

    /// From a dense tensor `[out, in]`; `Q` keeps the file's dtype.
    pub(crate) fn from_dense(w: Tensor, dtype: WeightDType) -> candle_core::Result<Self> {
        let w = match dense_dtype(dtype) {
            None => w,
            Some(dt) => w.to_dtype(dt)?,
        };
        Ok(Self {
            weight: Weight::Dense(w),
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
            Weight::Kernel(m) => kernel_forward(m, x)?,
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
    /// by side), when all use our kernels with one block type and input width; `None`
    /// otherwise. Biases are stacked too (a missing one as zeros).
    pub(crate) fn fuse(parts: &[&Linear]) -> candle_core::Result<Option<Linear>> {
        let mats: Option<Vec<&QMatrix>> = parts
            .iter()
            .map(|p| match &p.weight {
                Weight::Kernel(m) => Some(m.as_ref()),
                _ => None,
            })
            .collect();
        let Some(m) = mats.and_then(|m| QMatrix::concat(&m)) else {
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
        Ok(Some(Linear {
            weight: Weight::Kernel(Arc::new(m)),
            bias,
        }))
    }

    /// Output features.
    pub(crate) fn out_features(&self) -> usize {
        match &self.weight {
            Weight::Kernel(m) => m.n(),
            Weight::Quant(QMatMul::QTensor(q)) => q.shape().dims()[0],
            Weight::Quant(QMatMul::Tensor(t))
            | Weight::Quant(QMatMul::TensorF16(t))
            | Weight::Dense(t) => t.dims()[0],
        }
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

/// `x [.., k] · Wᵀ` through our kernels, on the contiguous f32 CPU slice of `x`.
fn kernel_forward(m: &QMatrix, x: &Tensor) -> candle_core::Result<Tensor> {
    let x = x.to_dtype(DType::F32)?.contiguous()?;
    let (k, n) = (m.k(), m.n());
    let mut dims = x.dims().to_vec();
    if dims.last() != Some(&k) {
        candle_core::bail!("linear: input {:?} does not end in {k} features", x.shape());
    }
    let t = x.elem_count() / k;
    let mut out = vec![0f32; t * n];
    {
        let (storage, layout) = x.storage_and_layout();
        let Storage::Cpu(cpu) = &*storage else {
            candle_core::bail!("linear: quantized kernel weights need CPU input");
        };
        let xs = &cpu.as_slice::<f32>()?[layout.start_offset()..][..t * k];
        m.matmul(xs, t, &mut out);
    }
    *dims.last_mut().expect("dims end in k") = n;
    Tensor::from_vec(out, dims, x.device())
}
