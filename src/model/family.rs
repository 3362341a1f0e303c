//! The model families the engine drives, behind one type: the engine, benches and tests call
//! [`Model`] and never need to know which family is loaded.

use candle_core::{Device, Tensor};

use super::gemma::Gemma;
use super::kv::{KvCache, KvShape};
use super::llama::{Llama, SeqInput};
use super::qwen35::Qwen35;
use crate::error::EngineError;

/// A loaded model of one of the supported families.
// One per loaded model: the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Model {
    /// llama, SmolLM2, qwen2, qwen3.
    Llama(Llama),
    /// Gemma 3.
    Gemma(Gemma),
    /// Qwen3.5: Gated DeltaNet and gated attention layers.
    Qwen35(Qwen35),
}

impl Model {
    /// One step over several sequences ([`Llama::forward`]): `inputs[i]` continues `caches[i]`;
    /// returns the requested logit rows, `[rows, vocab]` f32, in input order.
    pub fn forward(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        match self {
            Self::Llama(m) => m.forward(inputs, caches),
            Self::Gemma(m) => m.forward(inputs, caches),
            Self::Qwen35(m) => m.forward(inputs, caches),
        }
    }

    /// [`Model::forward`] that also returns every fed token's hidden state after the final norm
    /// (`[tokens, hidden]`, step order), for drafters that read it; llama family and Qwen3.5.
    pub fn forward_hidden(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        match self {
            Self::Llama(m) => m.forward_hidden(inputs, caches),
            Self::Qwen35(m) => m.forward_hidden(inputs, caches),
            Self::Gemma(_) => Err(EngineError::Bug(
                "hidden states are handed out by llama-family and Qwen3.5 models only".into(),
            )),
        }
    }

    /// A fresh cache with room for `capacity` tokens.
    pub fn new_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        match self {
            Self::Llama(m) => m.new_cache(capacity),
            Self::Gemma(m) => m.new_cache(capacity),
            Self::Qwen35(m) => m.new_cache(capacity),
        }
    }

    /// The shape of a KV cache for this model.
    pub fn kv_shape(&self) -> KvShape {
        match self {
            Self::Llama(m) => m.kv_shape(),
            Self::Gemma(m) => m.kv_shape(),
            Self::Qwen35(m) => m.kv_shape(),
        }
    }

    /// Storage of the first layer's Q projection and of the head, for reports.
    pub fn storage(&self) -> (String, String) {
        match self {
            Self::Llama(m) => m.storage(),
            Self::Gemma(m) => m.storage(),
            Self::Qwen35(m) => m.storage(),
        }
    }

    pub fn device(&self) -> &Device {
        match self {
            Self::Llama(m) => m.device(),
            Self::Gemma(m) => m.device(),
            Self::Qwen35(m) => m.device(),
        }
    }

    /// The positions a sequence may hold: the context the model was trained for, at most the
    /// RoPE tables' length.
    pub fn context_length(&self) -> usize {
        let trained = match self {
            Self::Llama(m) => m.cfg.context_length,
            Self::Gemma(m) => m.cfg.base.context_length,
            Self::Qwen35(m) => m.cfg.base.context_length,
        };
        trained.min(super::llama::MAX_ROPE_POSITIONS)
    }

    /// The architecture name (`llama`, `qwen2`, `qwen3`, `gemma3`).
    pub fn arch(&self) -> &str {
        match self {
            Self::Llama(m) => &m.cfg.arch,
            Self::Gemma(m) => &m.cfg.base.arch,
            Self::Qwen35(m) => &m.cfg.base.arch,
        }
    }

    /// The llama-family model, when that is what is loaded.
    pub fn as_llama(&self) -> Option<&Llama> {
        match self {
            Self::Llama(m) => Some(m),
            Self::Gemma(_) | Self::Qwen35(_) => None,
        }
    }

    /// The Gemma model, when that is what is loaded.
    pub fn as_gemma(&self) -> Option<&Gemma> {
        match self {
            Self::Gemma(m) => Some(m),
            Self::Llama(_) | Self::Qwen35(_) => None,
        }
    }

    /// The Qwen3.5 model, when that is what is loaded.
    pub fn as_qwen35(&self) -> Option<&Qwen35> {
        match self {
            Self::Qwen35(m) => Some(m),
            Self::Llama(_) | Self::Gemma(_) => None,
        }
    }

    /// Bytes of recurrent state one sequence holds beside its KV rows (0 for attention-only
    /// families): fixed per sequence, whatever its length.
    pub fn state_bytes_per_seq(&self) -> usize {
        self.as_qwen35().map_or(0, |m| m.state_shape().bytes())
    }
}
