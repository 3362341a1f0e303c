//! Qwen3.5's multi-token-prediction block, as llama.cpp's `qwen35` MTP graph computes it
//! (`graph_mtp` in `src/models/qwen35.cpp`): block `layers` (after the regular ones) is a gated
//! attention layer with its own KV cache, fed `eh_proj([enorm(embed(t₍ᵢ₊₁₎)); hnorm(hᵢ)])`,
//! where hᵢ is the trunk's hidden state after its final norm; its output goes through
//! `nextn.shared_head_norm` (else the model's final norm) and `nextn.shared_head_head` (else
//! the model's head) and predicts t₍ᵢ₊₂₎. Chained, the block feeds on its own state after that
//! norm (llama.cpp's `h_nextn`). The drafter that runs it is `--spec mtp` (the spec module).

use candle_core::Tensor;

use super::super::embedding::Embedding;
use super::super::families::qwen35::{name, Qwen35Config};
use super::super::kv::{KvCache, KvShape};
use super::super::linear::Linear;
use super::super::llama::{nextn_plan, NextnInput};
use super::super::projections::GateUp;
use super::super::weights::WeightSource;
use super::{load_attention, Attention, Qwen35};
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};

/// The block's weights.
pub(super) struct Mtp {
    attn_norm: Tensor,
    attn: Attention,
    post_norm: Tensor,
    gate_up: GateUp,
    down: Linear,
    eh_proj: Linear,
    enorm: Tensor,
    hnorm: Tensor,
    head_norm: Option<Tensor>,
    embed: Option<Embedding>,
    head: Option<Linear>,
}

impl Mtp {
    /// Block `cfg.base.layers`; the validation pass has checked its tensors.
    pub(super) fn load(
        cfg: &Qwen35Config,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let i = cfg.base.layers;
        let n = |part: &str| name(i, part);
        let nextn = |part: &str| name(i, &format!("nextn.{part}.weight"));
        let stack = |e| ModelError::candle(format!("stacking block {i}'s projections"))(e);
        let optional_dense = |src: &mut dyn WeightSource, part: &str| match src.has(&nextn(part)) {
            true => src.dense(&nextn(part)).map(Some),
            false => Ok(None),
        };
        let head_norm = optional_dense(src, "shared_head_norm")?;
        let embed = optional_dense(src, "embed_tokens")?.map(Embedding::Dense);
        let head = match src.has(&nextn("shared_head_head")) {
            true => Some(src.linear(&nextn("shared_head_head"), dtype)?),
            false => None,
        };
        let (gate, up) = (
            src.linear(&n("ffn_gate.weight"), dtype)?,
            src.linear(&n("ffn_up.weight"), dtype)?,
        );
        Ok(Self {
            attn_norm: src.dense(&n("attn_norm.weight"))?,
            attn: load_attention(i, src, dtype)?,
            post_norm: src.dense(&n("post_attention_norm.weight"))?,
            gate_up: GateUp::new(gate, up).map_err(stack)?,
            down: src.linear(&n("ffn_down.weight"), dtype)?,
            eh_proj: src.linear(&nextn("eh_proj"), dtype)?,
            enorm: src.dense(&nextn("enorm"))?,
            hnorm: src.dense(&nextn("hnorm"))?,
            head_norm,
            embed,
            head,
        })
    }
}

impl Qwen35 {
    /// Whether the checkpoint carries a multi-token-prediction block.
    pub fn has_mtp(&self) -> bool {
        self.mtp.is_some()
    }

    /// A fresh KV cache for the MTP block (one attention layer, no recurrent state).
    pub fn new_nextn_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        let shape = KvShape {
            layers: 1,
            ..self.kv_shape()
        };
        KvCache::new(shape, capacity, &self.device)
    }

    /// One step of the MTP block over several sequences: `inputs[i]` continues `caches[i]`.
    /// Returns each input's last row: the logits `[inputs, vocab]` and the state after the
    /// head norm `[inputs, hidden]` that a chained step feeds on.
    pub fn forward_nextn(
        &self,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        let Some(m) = &self.mtp else {
            return Err(EngineError::Bug("the model has no MTP block".into()));
        };
        crate::kernels::pool::install(|| self.mtp_here(m, inputs, caches))
    }

    fn mtp_here(
        &self,
        m: &Mtp,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        let _span = tracing::trace_span!("forward_mtp", seqs = inputs.len()).entered();
        let plan = nextn_plan(inputs, caches, self.cfg.base.hidden)?;
        let eps = self.cfg.base.rms_eps as f32;
        let rms = |x: &Tensor, w: &Tensor| candle_nn::ops::rms_norm(x, w, eps);
        let embed = m.embed.as_ref().unwrap_or(&self.embed);
        let e = rms(&embed.lookup(&plan.tokens, &self.device)?, &m.enorm)?;
        let h: Vec<&Tensor> = inputs.iter().map(|i| i.hidden).collect();
        let h = rms(&Tensor::cat(&h, 0)?.contiguous()?, &m.hnorm)?;
        let x = m.eh_proj.forward(&Tensor::cat(&[e, h], 1)?)?;
        let normed = rms(&x, &m.attn_norm)?;
        let x = (&x + self.attention(&m.attn, 0, &normed, &plan, caches)?)?;
        let normed = rms(&x, &m.post_norm)?;
        let x = (&x + m.down.forward(&m.gate_up.forward(&normed)?)?)?;
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.advance(input.tokens.len());
        }
        let rows = Tensor::new(plan.logit_rows.as_slice(), &self.device)?;
        let state = rms(
            &x.index_select(&rows, 0)?,
            m.head_norm.as_ref().unwrap_or(&self.norm),
        )?;
        let logits = m.head.as_ref().unwrap_or(&self.head).forward(&state)?;
        Ok((logits, state))
    }
}
