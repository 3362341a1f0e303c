//! The token embedding shared by the model families: dense f32 rows, or — when the output head
//! is tied to the embedding and runs on our kernels — the head's own quantized blocks,
//! dequantized row by row at lookup, so the table is held once (borrowed from the mapped file
//! when loading maps it). Gemma's 262 144 × 640 table is 671 MB as f32 and 178 MB as the
//! file's Q8_0; SmolLM2's 49 152 × 576 is 113 MB as f32 and 30 MB as Q8_0.

use std::sync::Arc;

use candle_core::{DType, Device, Tensor};

use super::linear::Linear;
use crate::error::{EngineError, ModelError};
use crate::kernels::QMatrix;

/// The token embedding: dense f32 rows, or (tied head on our kernels) the head's own quantized
/// blocks, dequantized row by row at lookup.
pub(crate) enum Embedding {
    Dense(Tensor),
    Rows(Arc<QMatrix>),
}

impl Embedding {
    /// Rows `ids`, `[ids, hidden]` f32.
    pub(crate) fn lookup(&self, ids: &[u32], device: &Device) -> Result<Tensor, EngineError> {
        match self {
            Self::Dense(t) => {
                let ids = Tensor::new(ids, device)?;
                Ok(t.index_select(&ids, 0)?.to_dtype(DType::F32)?)
            }
            Self::Rows(m) => {
                let (k, q) = (m.k(), m.qtype());
                let mut out = vec![0f32; ids.len() * k];
                for (&id, dst) in ids.iter().zip(out.chunks_exact_mut(k)) {
                    let id = id as usize;
                    if id >= m.n() {
                        return Err(EngineError::Refused(format!(
                            "token id {id} is outside the vocabulary of {}",
                            m.n()
                        )));
                    }
                    let row = m.row(id);
                    let row = row.as_ref();
                    crate::kernels::blocks::dequantize_row(q, row, dst);
                }
                Ok(Tensor::from_vec(out, (ids.len(), k), device)?)
            }
        }
    }
}

/// The embedding of a model whose head is `head` tied to the embedding table: the head's
/// blocks when our kernels hold them, else `dense()` (the table dequantized).
pub(crate) fn tied(
    head: &Linear,
    dense: impl FnOnce() -> Result<Tensor, ModelError>,
) -> Result<Embedding, ModelError> {
    Ok(match head.kernel_matrix() {
        Some(m) => Embedding::Rows(m.clone()),
        None => Embedding::Dense(dense()?),
    })
}
