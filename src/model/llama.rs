//! The llama-family transformer (llama, SmolLM2, qwen2 with QKV bias; tied or separate head) and
//! its varlen batched forward: the tokens of every sequence in a step are flattened into one
//! `[T, hidden]` activation, so each projection and MLP runs once per step; RoPE uses each token's
//! own position; attention runs per sequence against that sequence's [`KvCache`]; logits are
//! computed only for the rows asked for. Weights are immutable; all state is in the caches.
//! A checkpoint's multi-token-prediction block, when the file has one, lives in [`nextn`].

use candle_core::{Device, Tensor};

use super::arch::LlamaConfig;
use super::attention::{self, Dims, KvSlices, Scoring, SegmentRows, Split};
use super::embedding::Embedding;
use super::kv::{KvCache, KvShape};
use super::linear::Linear;
use super::projections::{cpu_f32, qk_norm, qk_norm_ops, with_f32, GateUp, Qkv};
use super::residual;
use super::weights::WeightSource;
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};

mod nextn;
pub(crate) mod ops;
mod rope;
pub use nextn::NextnInput;
pub(crate) use nextn::{nextn_name, nextn_plan, nextn_tensors};
use ops::OpsAttention;
use rope::rope_freqs;
pub(crate) use rope::rope_tables_scaled;

/// Longest RoPE table built, in positions (bounds memory for models with huge contexts).
pub(crate) const MAX_ROPE_POSITIONS: usize = 32_768;

/// The candle-op attention's inputs for a step: RoPE angles `[cos, sin]` and causal masks.
type Generic = ([Tensor; 2], Vec<Option<Tensor>>);

/// Which tokens' residual stream a step's trunk returns.
#[derive(Clone, Copy)]
enum Rows {
    /// Every token's (the MTP head reads them all).
    All,
    /// The logit rows' only; the last layer computes nothing past its attention for the rest.
    Logits,
}

struct Layer {
    attn_norm: Tensor,
    qkv: Qkv,
    /// Per-head q and k RMSNorm weights (qwen3).
    qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    o: Linear,
    ffn_norm: Tensor,
    gate_up: GateUp,
    down: Linear,
}

impl Layer {
    /// Block `i`'s weights (`blk.i.*` in GGUF), matrices stored as `dtype` asks.
    fn load(
        cfg: &LlamaConfig,
        i: usize,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let names = src.names();
        let w = |part: &str| names.layer(i, part, "weight");
        let proj = |part: &str, src: &mut dyn WeightSource| -> Result<Linear, ModelError> {
            let lin = src.linear(&w(part), dtype)?;
            let bias_name = names.layer(i, part, "bias");
            let bias = if cfg.qkv_bias && src.has(&bias_name) {
                Some(src.dense(&bias_name)?)
            } else {
                None
            };
            lin.with_bias(bias).map_err(ModelError::candle(bias_name))
        };
        let fused = |e| ModelError::candle(format!("stacking layer {i}'s projections"))(e);
        let (qkv, gate_up) = if cfg.fused {
            (
                Qkv::Fused(src.linear(&w("qkv"), dtype)?),
                GateUp::Fused(src.linear(&w("gate_up"), dtype)?),
            )
        } else {
            let (q, k, v) = (proj("q", src)?, proj("k", src)?, proj("v", src)?);
            let (gate, up) = (src.linear(&w("gate"), dtype)?, src.linear(&w("up"), dtype)?);
            (
                Qkv::new(q, k, v).map_err(fused)?,
                GateUp::new(gate, up).map_err(fused)?,
            )
        };
        let mut vector = |part: &str| -> Result<Vec<f32>, ModelError> {
            let t = src.dense(&w(part))?;
            t.to_vec1::<f32>().map_err(ModelError::candle(w(part)))
        };
        let qk_norm = match cfg.qk_norm {
            true => Some((vector("q_norm")?, vector("k_norm")?)),
            false => None,
        };
        Ok(Self {
            attn_norm: src.dense(&w("attn_norm"))?,
            qkv,
            qk_norm,
            o: src.linear(&w("o"), dtype)?,
            ffn_norm: src.dense(&w("ffn_norm"))?,
            gate_up,
            down: src.linear(&w("down"), dtype)?,
        })
    }
}

/// A loaded llama-family model.
pub struct Llama {
    pub cfg: LlamaConfig,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Tensor,
    head: Linear,
    cos: Tensor,
    sin: Tensor,
    /// Identity tables (cos 1, sin 0) for the layers without RoPE, when the family has any.
    nope: Option<(Tensor, Tensor)>,
    device: Device,
    /// Our kernels and the CPU attention on slices (else candle ops: the device-generic path).
    ours: bool,
    /// The first multi-token-prediction block, when the file has any (`cfg.nextn > 0`).
    nextn: Option<nextn::Nextn>,
}

/// Which logit rows a sequence wants from a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitRows {
    /// None (a prefill chunk that is not the prompt's last).
    None,
    /// The last token's row (prompt end, decode).
    Last,
    /// Every token's row (speculative verification).
    All,
}

/// One sequence's share of a step: its new tokens, placed after what its cache holds.
#[derive(Debug, Clone, Copy)]
pub struct SeqInput<'a> {
    pub tokens: &'a [u32],
    pub logits: LogitRows,
}

impl Llama {
    /// Builds the model from `src`, storing matrices as `dtype` asks.
    pub(crate) fn load(
        cfg: LlamaConfig,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let names = src.names();
        let device = src.device().clone();
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
        let norm = src.dense(names.norm())?;
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            layers.push(Layer::load(&cfg, i, src, dtype)?);
        }
        // The nextn blocks follow the regular layers; drafting runs the first.
        let nextn = match cfg.nextn {
            0 => None,
            _ => Some(nextn::Nextn::load(&cfg, src, dtype)?),
        };
        let positions = cfg.context_length.clamp(1, MAX_ROPE_POSITIONS);
        let freqs = rope_freqs(&cfg, src)?;
        let scaling = cfg.rope_scaling;
        let (rot, base) = (cfg.rot(), cfg.rope_theta);
        let divisor = |i: usize, inv: f64| {
            scaling.divisor(i, inv, rot, base) * freqs.as_ref().map_or(1.0, |f| f64::from(f[i]))
        };
        let mscale = scaling.mscale() * cfg.long_rope.map_or(1.0, |l| l.attn_factor);
        let (cos, sin) = rope_tables_scaled(rot, base, positions, divisor, &device)
            .and_then(|(c, s)| match mscale {
                1.0 => Ok((c, s)),
                m => Ok(((c * m)?, (s * m)?)),
            })
            .map_err(ModelError::candle("building RoPE tables"))?;
        let nope = match cfg.nope_every {
            0 => None,
            _ => Some(
                (cos.ones_like().and_then(|c| Ok((c, sin.zeros_like()?))))
                    .map_err(ModelError::candle("building the NoPE tables"))?,
            ),
        };
        Ok(Self {
            cfg,
            embed,
            layers,
            norm,
            head,
            cos,
            sin,
            nope,
            device,
            ours: src.ours(),
            nextn,
        })
    }

    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// The shape of a KV cache for this model.
    pub(crate) fn kv_shape(&self) -> KvShape {
        KvShape {
            layers: self.cfg.layers,
            kv_heads: self.cfg.kv_heads,
            head_dim: self.cfg.head_dim,
            max_positions: self.cos.dim(0).expect("cos table is 2-D; this is a bug"),
        }
    }

    /// A fresh cache with room for `capacity` tokens.
    pub fn new_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        let mut cache = KvCache::new(self.kv_shape(), capacity, &self.device)?;
        if self.ours {
            cache.keep_key_blocks(attention::key_block(self.cfg.head_dim));
        }
        Ok(cache)
    }

    /// Storage of the first layer's Q projection and of the head, for reports.
    pub(crate) fn storage(&self) -> (String, String) {
        let first = self
            .layers
            .first()
            .map(|l| l.qkv.q_storage())
            .unwrap_or_default();
        (first, self.head.storage())
    }

    /// One step over several sequences. `inputs[i]` continues `caches[i]` from its length.
    /// Returns the requested logit rows, `[rows, vocab]` f32, in input order.
    pub fn forward(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        crate::kernels::pool::install(|| self.forward_here(inputs, caches, self.layers.len()))
    }

    /// [`Llama::forward`] through the first `layers` layers only, then the final norm and head
    /// (layer-skip drafting). The caches need only those layers ([`Llama::new_cache_layers`]).
    pub fn forward_first(
        &self,
        layers: usize,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let layers = layers.min(self.layers.len());
        crate::kernels::pool::install(|| self.forward_here(inputs, caches, layers))
    }

    /// A fresh cache for the first `layers` layers only, with room for `capacity` tokens.
    pub fn new_cache_layers(&self, capacity: usize, layers: usize) -> Result<KvCache, EngineError> {
        let shape = KvShape {
            layers: layers.min(self.cfg.layers),
            ..self.kv_shape()
        };
        KvCache::new(shape, capacity, &self.device)
    }

    /// [`Llama::forward`] on the calling thread, through the first `n_layers` layers.
    fn forward_here(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
        n_layers: usize,
    ) -> Result<Tensor, EngineError> {
        let (x, _) = self.trunk(inputs, caches, n_layers, Rows::Logits)?;
        let x = candle_nn::ops::rms_norm(&x, &self.norm, self.cfg.rms_eps as f32)?;
        Ok(self.head.forward(&x)?)
    }

    /// The step through the first `n_layers` layers: the residual stream before the final norm
    /// of the tokens `rows` asks for, and the step's layout. Advances the caches.
    fn trunk(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
        n_layers: usize,
        rows: Rows,
    ) -> Result<(Tensor, StepPlan), EngineError> {
        let _span = tracing::trace_span!("forward", seqs = inputs.len()).entered();
        let plan = StepPlan::new(inputs, caches)?;
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.reserve(input.tokens.len())?;
        }
        let dev = &self.device;
        let mut x = self.embed.lookup(&plan.tokens, dev)?;
        let generic = self.generic(&plan)?;
        let keep = match rows {
            Rows::All => None,
            Rows::Logits => plan.logit_selection(dev)?,
        };
        if n_layers == 0 {
            if let Some(keep) = &keep {
                x = x.index_select(keep, 0)?;
            }
        }
        for (l, layer) in self.layers.iter().enumerate().take(n_layers) {
            let keep = keep.as_ref().filter(|_| l + 1 == n_layers);
            x = self.block(layer, l, x, &plan, generic.as_ref(), caches, keep)?;
        }
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.advance(input.tokens.len());
        }
        Ok((x, plan))
    }

    /// The candle-op attention's inputs (none on the CPU, whose attention works on slices).
    fn generic(&self, plan: &StepPlan) -> Result<Option<Generic>, EngineError> {
        Ok(match self.ours {
            true => None,
            false => Some(self.generic_inputs(plan)?),
        })
    }

    /// One transformer block on the residual stream `x`, its K/V in layer `l` of the caches;
    /// past the attention only the rows `keep` when given (the last layer of a step whose
    /// other rows' outputs nobody reads: their K/V are in the cache).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        layer: &Layer,
        l: usize,
        x: Tensor,
        plan: &StepPlan,
        generic: Option<&Generic>,
        caches: &[&mut KvCache],
        keep: Option<&Tensor>,
    ) -> Result<Tensor, EngineError> {
        let c = &self.cfg;
        let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, c.rms_eps as f32)?;
        let qkv = layer.qkv.forward(&h)?;
        let qkv = match &layer.qk_norm {
            None => qkv,
            Some((q, k)) => {
                let heads = (c.heads, c.kv_heads, c.head_dim);
                match self.ours {
                    true => qk_norm(&qkv, heads, (q, k), c.rms_eps as f32, &self.device)?,
                    false => qk_norm_ops(&qkv, heads, (q, k), c.rms_eps as f32)?,
                }
            }
        };
        let attn = match generic {
            None => self.attention_cpu(l, &qkv, plan, caches)?,
            Some(([cos, sin], masks)) => OpsAttention {
                dims: self.dims(),
                scoring: Scoring::causal(c.head_dim),
                rope: c.ropes(l).then_some((cos, sin)),
                masks,
            }
            .run(l, &qkv, plan, caches)?,
        };
        let (x, attn) = match keep {
            Some(rows) => (x.index_select(rows, 0)?, attn.index_select(rows, 0)?),
            None => (x, attn),
        };
        let x = residual::add(&x, &layer.o.forward(&attn)?)?;
        let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, self.cfg.rms_eps as f32)?;
        Ok(residual::add(
            &x,
            &layer.down.forward(&layer.gate_up.forward(&h)?)?,
        )?)
    }

    /// The RoPE angles of the step's tokens and the causal masks, for the candle-op attention.
    fn generic_inputs(&self, plan: &StepPlan) -> candle_core::Result<Generic> {
        let angles = plan.angles((&self.cos, &self.sin))?;
        Ok((angles, plan.masks(None, &self.device)?))
    }

    /// The attention's dimensions.
    fn dims(&self) -> Dims {
        let c = &self.cfg;
        Dims {
            heads: c.heads,
            kv_heads: c.kv_heads,
            head_dim: c.head_dim,
            interleaved: c.rope_interleaved,
            rot: c.rot(),
        }
    }

    /// Attention on the CPU straight on slices ([`attention`]): RoPE, cache write, causal
    /// attention of each token over exactly its own keys.
    fn attention_cpu(
        &self,
        l: usize,
        qkv: &Tensor,
        plan: &StepPlan,
        caches: &[&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let c = &self.cfg;
        let dims = Dims {
            heads: c.heads,
            kv_heads: c.kv_heads,
            head_dim: c.head_dim,
            interleaved: c.rope_interleaved,
            rot: c.rot(),
        };
        let (cos, sin) = self.tables(l);
        let step = CpuAttention {
            dims,
            scoring: Scoring::causal(c.head_dim),
            cos,
            sin,
            device: &self.device,
        };
        step.run(l, qkv, plan, caches)
    }

    /// Layer `l`'s RoPE tables: the model's, or the identity for a layer without RoPE.
    fn tables(&self, l: usize) -> (&Tensor, &Tensor) {
        match &self.nope {
            Some((c, s)) if !self.cfg.ropes(l) => (c, s),
            _ => (&self.cos, &self.sin),
        }
    }
}

/// The CPU attention block of one layer (shared by the model families): dimensions, scoring and
/// the RoPE tables `[positions, head_dim / 2]` that layer uses.
pub(crate) struct CpuAttention<'a> {
    pub dims: Dims,
    pub scoring: Scoring,
    pub cos: &'a Tensor,
    pub sin: &'a Tensor,
    pub device: &'a Device,
}

impl CpuAttention<'_> {
    /// Runs layer `l`'s attention for the step: RoPE, cache write, then each token's attention
    /// over its own keys as `scoring` says.
    pub(crate) fn run(
        &self,
        l: usize,
        qkv: &Tensor,
        plan: &StepPlan,
        caches: &[&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let dims = self.dims;
        let c = &dims;
        let (cos, _) = self.cos.storage_and_layout();
        let (sin, _) = self.sin.storage_and_layout();
        let q = with_f32(qkv, |qkv| -> Result<Vec<f32>, EngineError> {
            let split = Split {
                dims,
                qkv,
                positions: &plan.positions,
                cos: cpu_f32(&cos)?,
                sin: cpu_f32(&sin)?,
            };
            for (seg, cache) in plan.segments.iter().zip(caches.iter()) {
                let (k, v) = split.new_kv(seg.start..seg.start + seg.len);
                let shape = (c.kv_heads, seg.len, c.head_dim);
                let k = Tensor::from_vec(k, shape, self.device)?;
                let v = Tensor::from_vec(v, shape, self.device)?;
                cache.write(l, &k, &v)?;
            }
            Ok(split.queries())
        })??;
        let guards: Vec<_> = caches
            .iter()
            .map(|cache| {
                let (k, v) = cache.layer(l);
                (
                    k.storage_and_layout().0,
                    v.storage_and_layout().0,
                    cache.capacity(),
                    cache.key_blocks(l),
                )
            })
            .collect();
        let mut segs = Vec::with_capacity(guards.len());
        for (seg, (k, v, capacity, blocks)) in plan.segments.iter().zip(&guards) {
            let rows = SegmentRows {
                start: seg.start,
                len: seg.len,
                pos: seg.pos,
            };
            let kv = KvSlices {
                k: cpu_f32(k)?,
                v: cpu_f32(v)?,
                capacity: *capacity,
                key_blocks: blocks.as_ref().map(|b| attention::KeyBlocks {
                    data: &b.data,
                    kb: b.kb,
                    blocks: b.blocks,
                }),
            };
            segs.push((rows, kv));
        }
        let t = plan.tokens.len();
        let mut out = vec![0f32; t * c.heads * c.head_dim];
        attention::attend_scored(dims, self.scoring, &q, &segs, &mut out);
        Ok(Tensor::from_vec(
            out,
            (t, c.heads * c.head_dim),
            self.device,
        )?)
    }
}

/// One sequence's rows in the flattened step.
struct Segment {
    start: usize,
    len: usize,
    /// Tokens already in the cache before this step.
    pos: usize,
}

/// The flattened layout of a step, computed before any tensor work.
pub(crate) struct StepPlan {
    pub tokens: Vec<u32>,
    pub positions: Vec<u32>,
    segments: Vec<Segment>,
    pub logit_rows: Vec<u32>,
}

impl StepPlan {
    /// The logit rows as an index for `index_select`, or `None` when they are every row in
    /// order (a decode step): nothing to select.
    pub(crate) fn logit_selection(&self, dev: &Device) -> candle_core::Result<Option<Tensor>> {
        let all = self.logit_rows.len() == self.tokens.len()
            && self
                .logit_rows
                .iter()
                .enumerate()
                .all(|(i, &r)| r as usize == i);
        match all {
            true => Ok(None),
            false => Tensor::new(self.logit_rows.as_slice(), dev).map(Some),
        }
    }

    pub(crate) fn new(inputs: &[SeqInput], caches: &[&mut KvCache]) -> Result<Self, EngineError> {
        if inputs.len() != caches.len() || inputs.is_empty() {
            return Err(EngineError::Bug(format!(
                "{} inputs for {} caches; need one cache per input, at least one",
                inputs.len(),
                caches.len()
            )));
        }
        let mut plan = Self {
            tokens: Vec::new(),
            positions: Vec::new(),
            segments: Vec::new(),
            logit_rows: Vec::new(),
        };
        for (input, cache) in inputs.iter().zip(caches) {
            if input.tokens.is_empty() {
                return Err(EngineError::Bug(
                    "a sequence in the step has no tokens".into(),
                ));
            }
            let (start, pos, n) = (plan.tokens.len(), cache.len(), input.tokens.len());
            plan.tokens.extend_from_slice(input.tokens);
            plan.positions.extend((pos..pos + n).map(|p| p as u32));
            match input.logits {
                LogitRows::None => {}
                LogitRows::Last => plan.logit_rows.push((start + n - 1) as u32),
                LogitRows::All => plan.logit_rows.extend((start..start + n).map(|r| r as u32)),
            }
            plan.segments.push(Segment { start, len: n, pos });
        }
        Ok(plan)
    }
}
