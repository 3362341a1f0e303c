//! The multi-token-prediction ("nextn") block of DeepSeek-V3 and GLM-4.5 style checkpoints, as
//! llama.cpp stores it in GGUF: `ARCH.nextn_predict_layers` blocks after the regular layers
//! (`block_count` counts both), each a regular transformer block (`blk.N.attn_*`, `blk.N.ffn_*`)
//! plus `blk.N.nextn.{eh_proj, enorm, hnorm, shared_head_norm}` and, when the checkpoint does not
//! share them with the main model, `blk.N.nextn.{embed_tokens, shared_head_head}`.
//!
//! Its forward at position i: `x = eh_proj([enorm(embed(t₍ᵢ₊₁₎)); hnorm(hᵢ)])`, the block (with its
//! own KV cache, one layer), then `shared_head_norm` and the head; it predicts t₍ᵢ₊₂₎. `hᵢ` is the
//! main model's hidden state after its final norm (the row its head read to predict t₍ᵢ₊₁₎), or,
//! chained, the nextn block's own state after `shared_head_norm`: the convention of vLLM's
//! DeepSeek MTP, where both states handed on are the ones a head reads. The block's weights are
//! loaded with the model (one block's worth) so that `--spec mtp` shares them without a reload.

use candle_core::Tensor;

use super::{Layer, Llama, LogitRows, Rows, SeqInput, StepPlan};
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};
use crate::model::arch::LlamaConfig;
use crate::model::embedding::Embedding;
use crate::model::kv::KvCache;
use crate::model::linear::Linear;
use crate::model::weights::WeightSource;

/// The GGUF name of nextn part `part` of block `i`.
pub(crate) fn nextn_name(i: usize, part: &str) -> String {
    format!("blk.{i}.nextn.{part}.weight")
}

/// The nextn parts of a block beyond the regular ones: (part, shape, required), shapes as
/// candle reads GGUF (rows first) for `hidden` and `vocab`.
pub(crate) fn nextn_tensors(hidden: usize, vocab: usize) -> [(&'static str, Vec<usize>, bool); 6] {
    [
        ("eh_proj", vec![hidden, 2 * hidden], true),
        ("enorm", vec![hidden], true),
        ("hnorm", vec![hidden], true),
        ("shared_head_norm", vec![hidden], true),
        ("embed_tokens", vec![vocab, hidden], false),
        ("shared_head_head", vec![vocab, hidden], false),
    ]
}

/// The first nextn block's weights.
pub(crate) struct Nextn {
    block: Layer,
    eh_proj: Linear,
    enorm: Tensor,
    hnorm: Tensor,
    head_norm: Tensor,
    /// Its own token embedding, when the checkpoint has one (else the main model's).
    embed: Option<Embedding>,
    /// Its own head, when the checkpoint has one (else the main model's).
    head: Option<Linear>,
}

impl Nextn {
    /// Block `cfg.layers` (the first after the regular layers); the validation pass has checked
    /// every nextn block's tensors and shapes against the metadata.
    pub(super) fn load(
        cfg: &LlamaConfig,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let i = cfg.layers;
        let name = |part: &str| nextn_name(i, part);
        let embed = match src.has(&name("embed_tokens")) {
            true => Some(Embedding::Dense(src.dense(&name("embed_tokens"))?)),
            false => None,
        };
        let head = match src.has(&name("shared_head_head")) {
            true => Some(src.linear(&name("shared_head_head"), dtype)?),
            false => None,
        };
        Ok(Self {
            block: Layer::load(cfg, i, src, dtype)?,
            eh_proj: src.linear(&name("eh_proj"), dtype)?,
            enorm: src.dense(&name("enorm"))?,
            hnorm: src.dense(&name("hnorm"))?,
            head_norm: src.dense(&name("shared_head_norm"))?,
            embed,
            head,
        })
    }
}

/// The layout of a nextn step (each input's last row asked for), after checking that every
/// input brings one hidden row of width `hidden` per token and making room in its cache.
pub(crate) fn nextn_plan(
    inputs: &[NextnInput],
    caches: &mut [&mut KvCache],
    hidden: usize,
) -> Result<StepPlan, EngineError> {
    let seqs: Vec<SeqInput> = inputs
        .iter()
        .map(|i| SeqInput {
            tokens: i.tokens,
            logits: LogitRows::Last,
        })
        .collect();
    let plan = StepPlan::new(&seqs, caches)?;
    for (cache, input) in caches.iter_mut().zip(inputs) {
        if input.hidden.dims() != [input.tokens.len(), hidden] {
            return Err(EngineError::Bug(format!(
                "nextn input: hidden rows {:?} for {} tokens",
                input.hidden.dims(),
                input.tokens.len()
            )));
        }
        cache.reserve(input.tokens.len())?;
    }
    Ok(plan)
}

/// One sequence's share of a nextn step: tokens t₍ᵢ₊₁₎… and, row for row, the hidden states hᵢ…
/// that precede them (`[tokens, hidden]`), placed after what its nextn cache holds.
#[derive(Debug, Clone, Copy)]
pub struct NextnInput<'a> {
    pub tokens: &'a [u32],
    pub hidden: &'a Tensor,
}

impl Llama {
    /// Whether the checkpoint carries a multi-token-prediction block.
    pub fn has_nextn(&self) -> bool {
        self.nextn.is_some()
    }

    /// A fresh cache for the nextn block (one layer), with room for `capacity` positions.
    pub fn new_nextn_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        self.new_cache_layers(capacity, 1)
    }

    /// [`Llama::forward`] that also returns every fed token's hidden state after the final norm,
    /// `[tokens, hidden]` f32 in step order (for the nextn drafter); the logits are the same.
    pub fn forward_hidden(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        crate::kernels::pool::install(|| {
            let (x, plan) = self.trunk(inputs, caches, self.layers.len(), Rows::All)?;
            let normed = candle_nn::ops::rms_norm(&x, &self.norm, self.cfg.rms_eps as f32)?;
            let rows = Tensor::new(plan.logit_rows.as_slice(), &self.device)?;
            let logits = self.head.forward(&normed.index_select(&rows, 0)?)?;
            Ok((logits, normed))
        })
    }

    /// One step of the nextn block over several sequences: `inputs[i]` continues `caches[i]`.
    /// Returns each input's last row: the logits `[inputs, vocab]` and the state after
    /// `shared_head_norm` `[inputs, hidden]` that a chained step feeds on.
    pub fn forward_nextn(
        &self,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        let Some(m) = &self.nextn else {
            return Err(EngineError::Bug("the model has no nextn block".into()));
        };
        crate::kernels::pool::install(|| self.nextn_here(m, inputs, caches))
    }

    fn nextn_here(
        &self,
        m: &Nextn,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        let _span = tracing::trace_span!("forward_nextn", seqs = inputs.len()).entered();
        let plan = nextn_plan(inputs, caches, self.cfg.hidden)?;
        let eps = self.cfg.rms_eps as f32;
        let e = m
            .embed
            .as_ref()
            .unwrap_or(&self.embed)
            .lookup(&plan.tokens, &self.device)?;
        let hidden: Vec<&Tensor> = inputs.iter().map(|i| i.hidden).collect();
        let h = Tensor::cat(&hidden, 0)?;
        let e = candle_nn::ops::rms_norm(&e, &m.enorm, eps)?;
        let h = candle_nn::ops::rms_norm(&h.contiguous()?, &m.hnorm, eps)?;
        let x = m.eh_proj.forward(&Tensor::cat(&[e, h], 1)?)?;
        let generic = self.generic(&plan)?;
        let x = self.block(&m.block, 0, x, &plan, generic.as_ref(), caches, None)?;
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.advance(input.tokens.len());
        }
        let rows = Tensor::new(plan.logit_rows.as_slice(), &self.device)?;
        let normed = candle_nn::ops::rms_norm(&x.index_select(&rows, 0)?, &m.head_norm, eps)?;
        let logits = m.head.as_ref().unwrap_or(&self.head).forward(&normed)?;
        Ok((logits, normed))
    }
}
