//! RoPE tables of the llama engine: cos and sin for every position, built as candle's llama
//! builds them, with each frequency divided by what the file asks (Llama 3's `rope_freqs`,
//! phi3's LongRoPE set, linear and YaRN scaling).

use candle_core::{DType, Device, Tensor};

use super::super::arch::LlamaConfig;
use super::super::weights::WeightSource;
use crate::error::ModelError;

/// A GGUF's per-frequency RoPE divisors, when it has them: Llama 3's `rope_freqs.weight`, or
/// the LongRoPE set phi3's config chose; the validation pass has checked their shapes.
pub(super) fn rope_freqs(
    cfg: &LlamaConfig,
    src: &mut dyn WeightSource,
) -> Result<Option<Vec<f32>>, ModelError> {
    use super::super::arch::LongRopeSet;
    let name = match cfg.long_rope.map(|l| l.factors) {
        Some(LongRopeSet::Long) => super::super::families::phi3::ROPE_LONG,
        Some(LongRopeSet::Short) => super::super::families::phi3::ROPE_SHORT,
        None => super::super::families::llama::ROPE_FREQS,
    };
    if !matches!(src.names(), super::super::weights::Names::Gguf) || !src.has(name) {
        return Ok(None);
    }
    let f = src
        .dense(name)?
        .to_vec1::<f32>()
        .map_err(ModelError::candle(name))?;
    if f.len() != cfg.rot() / 2 || f.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return Err(ModelError::Invalid {
            path: name.into(),
            detail: format!(
                "{} divisors, expected {} finite ones above 0",
                f.len(),
                cfg.rot() / 2
            ),
        });
    }
    Ok(Some(f))
}

/// cos/sin tables `[positions, head_dim/2]` as candle's llama builds them, with frequency `i`
/// (inverse frequency `inv`) divided by `divisor(i, inv)`.
pub(crate) fn rope_tables_scaled(
    head_dim: usize,
    theta: f64,
    positions: usize,
    divisor: impl Fn(usize, f64) -> f64,
    dev: &Device,
) -> candle_core::Result<(Tensor, Tensor)> {
    let inv: Vec<f32> = (0..head_dim)
        .step_by(2)
        .enumerate()
        .map(|(k, i)| {
            let inv = 1f32 / (theta as f32).powf(i as f32 / head_dim as f32);
            let d = divisor(k, f64::from(inv));
            if d == 1.0 {
                inv
            } else {
                (f64::from(inv) / d) as f32
            }
        })
        .collect();
    let inv = Tensor::new(inv.as_slice(), dev)?;
    let idx = Tensor::arange(0, positions as u32, dev)?
        .to_dtype(DType::F32)?
        .reshape((positions, 1))?;
    let freqs = idx.matmul(&inv.reshape((1, ()))?)?;
    Ok((freqs.cos()?, freqs.sin()?))
}
