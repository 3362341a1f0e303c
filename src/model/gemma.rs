//! Gemma 3 on the llama family's varlen batched step ([`super::llama`]): the same step plan, KV
//! caches, fused projections and CPU attention block, with what Gemma changes. Embeddings are
//! scaled by sqrt(hidden); every RMSNorm multiplies by `1 + w` (GGUF converters store `1 + w`
//! already, so only the safetensors path adds 1 at load); each layer has four norms (input,
//! post-attention, pre- and post-feed-forward) and per-head RMSNorms on q and k before RoPE;
//! the MLP is GELU (tanh) gated; scores are divided by sqrt(`query_pre_attn_scalar`); local
//! layers see only the last `sliding_window` keys and use their own RoPE base; the head is tied
//! to the embedding; final logits are soft-capped when the model says so.
//!
//! KV cache: every layer keeps all its keys, the sliding-window layers too; their attention
//! reads only the last `window` of them. A ring buffer would bound the local layers' memory,
//! but the cache is one layout for every layer and family, rollback (`truncate`, speculative
//! decoding) needs the keys a ring would already have overwritten, and at this size a token
//! costs 2 KiB per layer. On candle's ops (another device, `--kernels candle`) attention runs
//! through [`super::llama::ops`], windows and soft-caps included.

use candle_core::{Device, Tensor};

use super::arch::GemmaConfig;
use super::attention::{Dims, Scoring};
use super::embedding::Embedding;
use super::families::gemma3::layer_name;
use super::kv::{KvCache, KvShape};
use super::linear::Linear;
use super::llama::ops::OpsAttention;
use super::llama::{rope_tables_scaled, CpuAttention, SeqInput, StepPlan, MAX_ROPE_POSITIONS};
use super::projections::{qk_norm, qk_norm_ops, Act, GateUp, Qkv};
use super::residual;
use super::weights::{Names, WeightSource};
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};

struct Layer {
    attn_norm: Tensor,
    qkv: Qkv,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    o: Linear,
    post_attn_norm: Tensor,
    ffn_norm: Tensor,
    gate_up: GateUp,
    down: Linear,
    post_ffn_norm: Tensor,
}

/// A loaded Gemma 3 model.
pub struct Gemma {
    pub cfg: GemmaConfig,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Tensor,
    head: Linear,
    /// RoPE tables of the global layers (`rope_theta`) and of the local ones.
    global_rope: (Tensor, Tensor),
    local_rope: (Tensor, Tensor),
    device: Device,
    /// Our kernels and the CPU attention on slices (else candle ops: the device-generic path).
    ours: bool,
}

impl Gemma {
    /// Builds the model from `src`, storing matrices as `dtype` asks.
    pub fn load(
        cfg: GemmaConfig,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let device = src.device().clone();
        let names = src.names();
        // Hugging Face stores w for a norm computing x·(1 + w); GGUF stores 1 + w.
        let offset = match names {
            Names::Gguf => 0.0,
            Names::Hf => 1.0,
        };
        let norm = |src: &mut dyn WeightSource, name: &str| -> Result<Tensor, ModelError> {
            let w = src.dense(name)?;
            (w + offset).map_err(ModelError::candle(format!("offsetting {name}")))
        };
        let (embed, head) = if src.has(names.head()) {
            let embed = Embedding::Dense(src.dense(names.embed())?);
            (embed, src.linear(names.head(), dtype)?)
        } else {
            let head = src.linear(names.embed(), dtype)?;
            (
                super::embedding::tied(&head, || src.dense(names.embed()))?,
                head,
            )
        };
        let final_norm = norm(src, names.norm())?;
        let mut layers = Vec::with_capacity(cfg.base.layers);
        for i in 0..cfg.base.layers {
            let n = |part: &str| layer_name(&names, i, part);
            let fused = |e| ModelError::candle(format!("stacking layer {i}'s projections"))(e);
            let (q, k, v) = (
                src.linear(&n("q"), dtype)?,
                src.linear(&n("k"), dtype)?,
                src.linear(&n("v"), dtype)?,
            );
            let (gate, up) = (src.linear(&n("gate"), dtype)?, src.linear(&n("up"), dtype)?);
            let vec = |t: Tensor, name: String| {
                t.to_vec1::<f32>()
                    .map_err(ModelError::candle(format!("reading {name}")))
            };
            let q_norm = vec(norm(src, &n("q_norm"))?, n("q_norm"))?;
            let k_norm = vec(norm(src, &n("k_norm"))?, n("k_norm"))?;
            layers.push(Layer {
                attn_norm: norm(src, &n("attn_norm"))?,
                qkv: Qkv::new(q, k, v).map_err(fused)?,
                q_norm,
                k_norm,
                o: src.linear(&n("o"), dtype)?,
                post_attn_norm: norm(src, &n("post_attn_norm"))?,
                ffn_norm: norm(src, &n("ffn_norm"))?,
                gate_up: GateUp::new(gate, up).map_err(fused)?,
                down: src.linear(&n("down"), dtype)?,
                post_ffn_norm: norm(src, &n("post_ffn_norm"))?,
            });
        }
        let b = &cfg.base;
        let positions = b.context_length.clamp(1, MAX_ROPE_POSITIONS);
        // As llama.cpp and `transformers`: linear scaling on the global layers only.
        let factor = b.rope_scaling.divisor(0, 1.0, b.head_dim, b.rope_theta);
        let rope = |theta, factor: f64| {
            rope_tables_scaled(b.head_dim, theta, positions, |_, _| factor, &device)
                .map_err(ModelError::candle("building RoPE tables"))
        };
        let global_rope = rope(b.rope_theta, factor)?;
        let local_rope = rope(cfg.rope_local_theta, 1.0)?;
        Ok(Self {
            embed,
            layers,
            norm: final_norm,
            head,
            global_rope,
            local_rope,
            device,
            ours: src.ours(),
            cfg,
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The shape of a KV cache for this model.
    pub fn kv_shape(&self) -> KvShape {
        let b = &self.cfg.base;
        KvShape {
            layers: b.layers,
            kv_heads: b.kv_heads,
            head_dim: b.head_dim,
            max_positions: self
                .global_rope
                .0
                .dim(0)
                .expect("cos table is 2-D; this is a bug"),
        }
    }

    /// A fresh cache with room for `capacity` tokens.
    pub fn new_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        let mut cache = KvCache::new(self.kv_shape(), capacity, &self.device)?;
        if self.ours {
            let hd = self.kv_shape().head_dim;
            cache.keep_key_blocks(super::attention::key_block(hd));
        }
        Ok(cache)
    }

    /// Storage of the first layer's Q projection and of the head, for reports.
    pub fn storage(&self) -> (String, String) {
        let first = self
            .layers
            .first()
            .map(|l| l.qkv.q_storage())
            .unwrap_or_default();
        (first, self.head.storage())
    }

    /// One step over several sequences, as [`super::llama::Llama::forward`].
    pub fn forward(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        crate::kernels::pool::install(|| self.forward_here(inputs, caches))
    }

    fn forward_here(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let _span = tracing::trace_span!("forward", seqs = inputs.len()).entered();
        let plan = StepPlan::new(inputs, caches)?;
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.reserve(input.tokens.len())?;
        }
        let b = &self.cfg.base;
        let eps = b.rms_eps as f32;
        let rms = |x: &Tensor, w: &Tensor| candle_nn::ops::rms_norm(x, w, eps);
        let generic = match self.ours {
            true => None,
            false => Some(self.generic_inputs(&plan)?),
        };
        let x = self.embed.lookup(&plan.tokens, &self.device)?;
        let mut x = (x * (b.hidden as f64).sqrt())?;
        let keep = plan.logit_selection(&self.device)?;
        for (l, layer) in self.layers.iter().enumerate() {
            let h = rms(&x, &layer.attn_norm)?;
            let heads = (b.heads, b.kv_heads, b.head_dim);
            let qkv = layer.qkv.forward(&h)?;
            let norms = (&layer.q_norm[..], &layer.k_norm[..]);
            let attn = match &generic {
                None => {
                    let qkv = qk_norm(&qkv, heads, norms, eps, &self.device)?;
                    self.attention(l).run(l, &qkv, &plan, caches)?
                }
                Some(g) => {
                    let qkv = qk_norm_ops(&qkv, heads, norms, eps)?;
                    self.ops_attention(l, g).run(l, &qkv, &plan, caches)?
                }
            };
            // The last layer goes past its attention for the logit rows only.
            let attn = match keep.as_ref().filter(|_| l + 1 == self.layers.len()) {
                Some(rows) => {
                    x = x.index_select(rows, 0)?;
                    attn.index_select(rows, 0)?
                }
                None => attn,
            };
            x = residual::add(&x, &rms(&layer.o.forward(&attn)?, &layer.post_attn_norm)?)?;
            let h = rms(&x, &layer.ffn_norm)?;
            let m = layer
                .down
                .forward(&layer.gate_up.forward_act(&h, Act::GeluTanh)?)?;
            x = residual::add(&x, &rms(&m, &layer.post_ffn_norm)?)?;
        }
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.advance(input.tokens.len());
        }
        if let Some(rows) = keep.as_ref().filter(|_| self.layers.is_empty()) {
            x = x.index_select(rows, 0)?;
        }
        let x = rms(&x, &self.norm)?;
        let logits = self.head.forward(&x)?;
        Ok(match self.cfg.final_softcap {
            Some(cap) => ((logits / cap)?.tanh()? * cap)?,
            None => logits,
        })
    }

    /// Layer `l`'s attention block: local or global scoring and RoPE table.
    fn attention(&self, l: usize) -> CpuAttention<'_> {
        let (cos, sin) = match self.cfg.is_local(l) {
            true => &self.local_rope,
            false => &self.global_rope,
        };
        CpuAttention {
            dims: self.dims(),
            scoring: self.scoring(l),
            cos,
            sin,
            device: &self.device,
        }
    }

    /// Layer `l`'s attention on candle ops, with the step's angles and masks `g`.
    fn ops_attention<'a>(&self, l: usize, g: &'a Generic) -> OpsAttention<'a> {
        let (angles, masks) = match self.cfg.is_local(l) {
            true => &g.local,
            false => &g.global,
        };
        OpsAttention {
            dims: self.dims(),
            scoring: self.scoring(l),
            rope: Some((&angles[0], &angles[1])),
            masks,
        }
    }

    /// The step's RoPE angles and masks of the global and the local layers (candle ops).
    fn generic_inputs(&self, plan: &StepPlan) -> candle_core::Result<Generic> {
        let (g, l) = (&self.global_rope, &self.local_rope);
        Ok(Generic {
            global: (plan.angles((&g.0, &g.1))?, plan.masks(None, &self.device)?),
            local: (
                plan.angles((&l.0, &l.1))?,
                plan.masks(Some(self.cfg.sliding_window), &self.device)?,
            ),
        })
    }

    fn dims(&self) -> Dims {
        let b = &self.cfg.base;
        Dims {
            heads: b.heads,
            kv_heads: b.kv_heads,
            head_dim: b.head_dim,
            interleaved: false,
            rot: b.head_dim,
        }
    }

    /// Layer `l`'s scoring: Gemma's scale, the window of a local layer, the soft-cap.
    fn scoring(&self, l: usize) -> Scoring {
        let c = &self.cfg;
        Scoring {
            divisor: c.query_pre_attn_scalar.sqrt() as f32,
            window: c.is_local(l).then_some(c.sliding_window),
            softcap: c.attn_softcap.map(|x| x as f32),
        }
    }
}

/// The candle-op attention's inputs for a step, per kind of layer: RoPE angles and masks.
struct Generic {
    global: ([Tensor; 2], Vec<Option<Tensor>>),
    local: ([Tensor; 2], Vec<Option<Tensor>>),
}
