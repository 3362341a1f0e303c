//! Qwen3.5 (GGUF `qwen35`) on the varlen batched step of the llama family: the tokens of every
//! sequence in a step flattened into one `[T, hidden]` activation, each projection and MLP run
//! once per step on our kernels, logits only for the rows asked for. Each layer is pre-norm
//! (`attn_norm`), its mixer, a residual, `post_attention_norm`, a SwiGLU MLP and a residual.
//!
//! Mixers, as llama.cpp's `qwen35` graph computes them:
//! - **gated attention** (every `full_attention_interval`-th layer): q is projected twice as
//!   wide, each head's q followed by its gate; per-head RMSNorm of q and k; NEOX RoPE on the
//!   first `rope.dimension_count` dimensions, with M-RoPE's sections deciding which pairs turn
//!   (for text all of t, h, w are the token's position); causal attention over the sequence's
//!   KV cache; the output times `sigmoid(gate)`, then `attn_output`.
//! - **Gated DeltaNet** (the others): one stacked projection gives the conv channels (q, k, v),
//!   the output gate z, β and α; the sequence mixing ([`delta`]) runs per sequence on its conv
//!   window and state matrices, kept in its [`KvCache`] beside the KV rows of the attention
//!   layers (long prefill runs in the chunked form, [`chunked`], decode and short runs token by
//!   token); then the gated RMSNorm and `ssm_out`.
//!
//! CPU only: the recurrent layers and the attention work on host slices. Rolling a sequence back
//! (speculative decoding) restores the state from the snapshots its cache keeps
//! ([`super::recurrent`]); a cached prefix restores the copy of the state the prefix cache kept
//! at a block end ([`super::prefix`]).

mod chunked;
mod cost;
pub(crate) mod delta;
mod mtp;

use std::time::Instant;

use cost::{CostSplit, Part};

use candle_core::{Device, Tensor};

use super::attention::{Dims, Scoring};
use super::embedding::Embedding;
use super::families::qwen35::{name, Qwen35Config};
use super::kv::{KvCache, KvShape};
use super::linear::Linear;
use super::llama::{rope_tables_scaled, CpuAttention, SeqInput, StepPlan, MAX_ROPE_POSITIONS};
use super::projections::{qk_norm, with_f32, GateUp, Qkv};
use super::recurrent::StateShape;
use super::residual;
use super::weights::{Names, WeightSource};
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};
use delta::{DeltaDims, SeqMix};

/// A gated attention layer's weights.
struct Attention {
    /// q (with its gate, `2 · heads · head_dim`), k and v.
    qkv: Qkv,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    o: Linear,
}

/// A Gated DeltaNet layer's weights.
struct DeltaNet {
    /// `attn_qkv`, `attn_gate` (z), `ssm_beta` and `ssm_alpha`, stacked: one matmul.
    input: Qkv4,
    conv: Vec<f32>,
    dt_bias: Vec<f32>,
    a: Vec<f32>,
    norm: Vec<f32>,
    out: Linear,
}

/// Four projections of one input, stacked when our kernels allow.
enum Qkv4 {
    Fused(Linear),
    Split([Linear; 4]),
}

impl Qkv4 {
    fn new(parts: [Linear; 4]) -> candle_core::Result<Self> {
        let refs: Vec<&Linear> = parts.iter().collect();
        Ok(match Linear::fuse(&refs)? {
            Some(f) => Self::Fused(f),
            None => Self::Split(parts),
        })
    }

    fn forward(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Self::Fused(f) => f.forward(h),
            Self::Split(p) => {
                let outs: Vec<Tensor> = p.iter().map(|l| l.forward(h)).collect::<Result<_, _>>()?;
                Tensor::cat(&outs, 1)
            }
        }
    }
}

enum Mixer {
    Attention(Attention),
    DeltaNet(DeltaNet),
}

struct Layer {
    attn_norm: Tensor,
    post_norm: Tensor,
    mixer: Mixer,
    gate_up: GateUp,
    down: Linear,
}

/// A loaded Qwen3.5 model.
pub struct Qwen35 {
    pub cfg: Qwen35Config,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Tensor,
    head: Linear,
    cos: Tensor,
    sin: Tensor,
    /// Each layer's slot: its KV layer (attention) or its state layer (Gated DeltaNet).
    slot: Vec<usize>,
    device: Device,
    /// The multi-token-prediction block, when the file has one.
    mtp: Option<mtp::Mtp>,
    /// Where the trunk's steps spent their time (the engine bench reads it).
    cost: CostSplit,
}

impl Qwen35 {
    /// Builds the model from `src` (GGUF names), storing matrices as `dtype` asks.
    pub(crate) fn load(
        cfg: Qwen35Config,
        src: &mut dyn WeightSource,
        dtype: WeightDType,
    ) -> Result<Self, ModelError> {
        let device = src.device().clone();
        if !src.ours() || !device.is_cpu() {
            return Err(crate::error::ConfigError::Flag {
                flag: "--device/--kernels".into(),
                value: format!("{device:?}"),
                reason: "qwen35's recurrent layers run on the CPU with tokfire's kernels only; \
                         use --device cpu without --kernels candle"
                    .into(),
            }
            .into());
        }
        let names = Names::Gguf;
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
        let mut layers = Vec::with_capacity(cfg.base.layers);
        let mut slot = Vec::with_capacity(cfg.base.layers);
        let (mut kv, mut rec) = (0, 0);
        for i in 0..cfg.base.layers {
            layers.push(load_layer(&cfg, i, src, dtype)?);
            let counter = if cfg.recurrent[i] { &mut rec } else { &mut kv };
            slot.push(*counter);
            *counter += 1;
        }
        let b = &cfg.base;
        let positions = b.context_length.clamp(1, MAX_ROPE_POSITIONS);
        // A pair M-RoPE gives the fourth position (0 for text) does not turn: frequency 0.
        let divisor = |k: usize, _| {
            if cfg.pair_turns(k) {
                1.0
            } else {
                f64::INFINITY
            }
        };
        let (cos, sin) = rope_tables_scaled(b.rot(), b.rope_theta, positions, divisor, &device)
            .map_err(ModelError::candle("building RoPE tables"))?;
        let mtp = match cfg.base.nextn {
            0 => None,
            _ => Some(mtp::Mtp::load(&cfg, src, dtype)?),
        };
        Ok(Self {
            mtp,
            cost: CostSplit::default(),
            cfg,
            embed,
            layers,
            norm,
            head,
            cos,
            sin,
            slot,
            device,
        })
    }

    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// The KV cache's shape: the attention layers only.
    pub(crate) fn kv_shape(&self) -> KvShape {
        let b = &self.cfg.base;
        KvShape {
            layers: self.cfg.attention_layers(),
            kv_heads: b.kv_heads,
            head_dim: b.head_dim,
            max_positions: self.cos.dim(0).expect("cos table is 2-D; this is a bug"),
        }
    }

    /// The recurrent state a sequence holds beside its KV rows.
    pub fn state_shape(&self) -> StateShape {
        let (conv, ssm) = self.cfg.state_floats_per_layer();
        StateShape {
            layers: self.cfg.recurrent.iter().filter(|r| **r).count(),
            conv,
            ssm,
        }
    }

    /// A fresh cache (KV rows and zero state) with room for `capacity` tokens.
    pub fn new_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        let mut cache =
            KvCache::with_state(self.kv_shape(), capacity, &self.device, self.state_shape())?;
        cache.keep_key_blocks(super::attention::key_block(self.kv_shape().head_dim));
        Ok(cache)
    }

    /// Storage of the first attention layer's q projection and of the head, for reports.
    pub(crate) fn storage(&self) -> (String, String) {
        let first = self
            .layers
            .iter()
            .find_map(|l| match &l.mixer {
                Mixer::Attention(a) => Some(a.qkv.q_storage()),
                Mixer::DeltaNet(_) => None,
            })
            .unwrap_or_default();
        (first, self.head.storage())
    }

    /// One step over several sequences: `inputs[i]` continues `caches[i]` (its KV rows and its
    /// recurrent state). Returns the requested logit rows, `[rows, vocab]` f32, in input order.
    pub fn forward(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        crate::kernels::pool::install(|| self.forward_here(inputs, caches))
    }

    /// [`Qwen35::forward`] through the first `layers` layers only, then the final norm and
    /// head (layer-skip drafting); the caches need only those layers
    /// ([`Qwen35::new_cache_layers`]).
    pub fn forward_first(
        &self,
        layers: usize,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let layers = layers.min(self.layers.len());
        crate::kernels::pool::install(|| self.forward_here_first(inputs, caches, layers))
    }

    /// A fresh cache for the first `layers` layers only: their KV layers and their state.
    pub fn new_cache_layers(&self, capacity: usize, layers: usize) -> Result<KvCache, EngineError> {
        let first = &self.cfg.recurrent[..layers.min(self.cfg.recurrent.len())];
        let recurrent = first.iter().filter(|r| **r).count();
        let kv = KvShape {
            layers: first.len() - recurrent,
            ..self.kv_shape()
        };
        let state = StateShape {
            layers: recurrent,
            ..self.state_shape()
        };
        KvCache::with_state(kv, capacity, &self.device, state)
    }

    fn forward_here(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        self.forward_here_first(inputs, caches, self.layers.len())
    }

    fn forward_here_first(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
        layers: usize,
    ) -> Result<Tensor, EngineError> {
        let (x, plan) = self.trunk_first(inputs, caches, layers)?;
        let rows = Tensor::new(plan.logit_rows.as_slice(), &self.device)?;
        let eps = self.cfg.base.rms_eps as f32;
        let x = candle_nn::ops::rms_norm(&x.index_select(&rows, 0)?, &self.norm, eps)?;
        Ok(self.head.forward(&x)?)
    }

    /// [`Qwen35::forward`] that also returns every fed token's hidden state after the final
    /// norm, `[tokens, hidden]` in step order (what the MTP block reads); the logits are the same.
    pub fn forward_hidden(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        crate::kernels::pool::install(|| {
            let (x, plan) = self.trunk_first(inputs, caches, self.layers.len())?;
            let eps = self.cfg.base.rms_eps as f32;
            let normed = candle_nn::ops::rms_norm(&x, &self.norm, eps)?;
            let rows = Tensor::new(plan.logit_rows.as_slice(), &self.device)?;
            let logits = self.head.forward(&normed.index_select(&rows, 0)?)?;
            Ok((logits, normed))
        })
    }

    /// The step through the first `n_layers` layers: the residual stream `[T, hidden]` before
    /// the final norm, and the step's layout. Advances the caches.
    fn trunk_first(
        &self,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
        n_layers: usize,
    ) -> Result<(Tensor, StepPlan), EngineError> {
        let _span = tracing::trace_span!("forward", seqs = inputs.len()).entered();
        let step = Instant::now();
        let plan = StepPlan::new(inputs, caches)?;
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.reserve(input.tokens.len())?;
        }
        let eps = self.cfg.base.rms_eps as f32;
        let rms = |x: &Tensor, w: &Tensor| candle_nn::ops::rms_norm(x, w, eps);
        let mut x = self.embed.lookup(&plan.tokens, &self.device)?;
        for (l, layer) in self.layers.iter().enumerate().take(n_layers) {
            let h = rms(&x, &layer.attn_norm)?;
            let mixed = match &layer.mixer {
                Mixer::Attention(a) => self.attention(a, self.slot[l], &h, &plan, caches)?,
                Mixer::DeltaNet(d) => self.delta_net(d, self.slot[l], &h, inputs, caches)?,
            };
            x = residual::add(&x, &mixed)?;
            let h = rms(&x, &layer.post_norm)?;
            let t = Instant::now();
            let m = layer.down.forward(&layer.gate_up.forward(&h)?)?;
            self.cost.add(Part::Projections, t);
            x = residual::add(&x, &m)?;
        }
        for (cache, input) in caches.iter_mut().zip(inputs) {
            cache.advance(input.tokens.len());
        }
        self.cost.add(Part::Step, step);
        Ok((x, plan))
    }

    /// Seconds the trunk's steps spent since the last call, by part (projections, Gated
    /// DeltaNet mixing, attention core, the rest), for the engine bench; resets.
    pub fn take_cost_split(&self) -> [(&'static str, f64); 4] {
        self.cost.take()
    }

    /// A gated attention layer on the normed stream `h`, its K/V in KV layer `kv`.
    fn attention(
        &self,
        a: &Attention,
        kv: usize,
        h: &Tensor,
        plan: &StepPlan,
        caches: &[&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let b = &self.cfg.base;
        let (heads, d) = (b.heads, b.head_dim);
        let kv_width = 2 * b.kv_heads * d;
        let t = plan.tokens.len();
        let t0 = Instant::now();
        let qkv = a.qkv.forward(h)?;
        self.cost.add(Part::Projections, t0);
        let t0 = Instant::now();
        // Split each head's q from its gate: q | k | v for the attention, the gates apart.
        let (packed, gate) = with_f32(&qkv, |rows| {
            let width = 2 * heads * d + kv_width;
            let mut packed = Vec::with_capacity(t * (heads * d + kv_width));
            let mut gate = Vec::with_capacity(t * heads * d);
            for row in rows.chunks_exact(width) {
                for head in row[..2 * heads * d].chunks_exact(2 * d) {
                    packed.extend_from_slice(&head[..d]);
                    gate.extend_from_slice(&head[d..]);
                }
                packed.extend_from_slice(&row[2 * heads * d..]);
            }
            (packed, gate)
        })?;
        let packed = Tensor::from_vec(packed, (t, heads * d + kv_width), &self.device)?;
        let dims = (heads, b.kv_heads, d);
        let norms = (&a.q_norm[..], &a.k_norm[..]);
        let qkv = qk_norm(&packed, dims, norms, b.rms_eps as f32, &self.device)?;
        let step = CpuAttention {
            dims: Dims {
                heads,
                kv_heads: b.kv_heads,
                head_dim: d,
                interleaved: false,
                rot: b.rot(),
            },
            scoring: Scoring::causal(d),
            cos: &self.cos,
            sin: &self.sin,
            device: &self.device,
        };
        let out = step.run(kv, &qkv, plan, caches)?;
        let gated = with_f32(&out, |o| {
            o.iter()
                .zip(&gate)
                .map(|(x, g)| x / (1.0 + (-g).exp()))
                .collect::<Vec<f32>>()
        })?;
        let gated = Tensor::from_vec(gated, (t, heads * d), &self.device)?;
        self.cost.add(Part::Attention, t0);
        let t0 = Instant::now();
        let out = a.o.forward(&gated)?;
        self.cost.add(Part::Projections, t0);
        Ok(out)
    }

    /// A Gated DeltaNet layer on the normed stream `h`, each sequence's state in recurrent
    /// layer `r` of its cache.
    fn delta_net(
        &self,
        net: &DeltaNet,
        r: usize,
        h: &Tensor,
        inputs: &[SeqInput],
        caches: &mut [&mut KvCache],
    ) -> Result<Tensor, EngineError> {
        let c = &self.cfg;
        let d = DeltaDims {
            k_heads: c.k_heads,
            v_heads: c.v_heads,
            state: c.state,
            kernel: c.conv_kernel,
            eps: c.base.rms_eps as f32,
        };
        let (ch, vd, hv) = (d.channels(), c.value_dim(), c.v_heads);
        let width = ch + vd + 2 * hv;
        let t0 = Instant::now();
        let proj = net.input.forward(h)?;
        self.cost.add(Part::Projections, t0);
        let t0 = Instant::now();
        let proj = with_f32(&proj, <[f32]>::to_vec)?;
        let t = proj.len() / width;
        let mut out = Vec::with_capacity(t * vd);
        let mut start = 0;
        for (input, cache) in inputs.iter().zip(caches.iter_mut()) {
            let n = input.tokens.len();
            let rows = &proj[start * width..(start + n) * width];
            start += n;
            let column = |from: usize, w: usize| -> Vec<f32> {
                rows.chunks_exact(width)
                    .flat_map(|row| row[from..from + w].iter().copied())
                    .collect()
            };
            let mixed = column(0, ch);
            let z = column(ch, vd);
            let beta: Vec<f32> = column(ch + vd, hv)
                .into_iter()
                .map(|x| 1.0 / (1.0 + (-x).exp()))
                .collect();
            let mut g = column(ch + vd + hv, hv);
            delta::decay(&mut g, &net.dt_bias, &net.a);
            let base = cache.len();
            let rec = cache
                .recurrent_mut()
                .ok_or_else(|| EngineError::Bug("a qwen35 cache without recurrent state".into()))?;
            let lens = rec.lengths_wanted(base, n);
            let at: Vec<usize> = lens.iter().map(|l| l - base - 1).collect();
            let seq = SeqMix {
                mixed: &mixed,
                g: &g,
                beta: &beta,
            };
            let (mut o, snaps) = delta::mix(&seq, &net.conv, rec.layer_mut(r)?, &d, &at);
            rec.record(r, lens.into_iter().zip(snaps).collect());
            delta::gated_norm(&mut o, &z, &net.norm, d.eps);
            out.extend(o);
        }
        let o = Tensor::from_vec(out, (t, vd), &self.device)?;
        self.cost.add(Part::DeltaNet, t0);
        let t0 = Instant::now();
        let out = net.out.forward(&o)?;
        self.cost.add(Part::Projections, t0);
        Ok(out)
    }
}

/// Layer `i`'s weights.
fn load_layer(
    cfg: &Qwen35Config,
    i: usize,
    src: &mut dyn WeightSource,
    dtype: WeightDType,
) -> Result<Layer, ModelError> {
    let n = |part: &str| name(i, part);
    let stack = |e| ModelError::candle(format!("stacking layer {i}'s projections"))(e);
    let vector = |src: &mut dyn WeightSource, part: &str| -> Result<Vec<f32>, ModelError> {
        let t = src.dense(&n(part))?;
        t.flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(ModelError::candle(n(part)))
    };
    let mixer = if cfg.recurrent[i] {
        let parts = [
            src.linear(&n("attn_qkv.weight"), dtype)?,
            src.linear(&n("attn_gate.weight"), dtype)?,
            src.linear(&n("ssm_beta.weight"), dtype)?,
            src.linear(&n("ssm_alpha.weight"), dtype)?,
        ];
        Mixer::DeltaNet(DeltaNet {
            input: Qkv4::new(parts).map_err(stack)?,
            conv: vector(src, "ssm_conv1d.weight")?,
            dt_bias: vector(src, "ssm_dt.bias")?,
            a: vector(src, "ssm_a")?,
            norm: vector(src, "ssm_norm.weight")?,
            out: src.linear(&n("ssm_out.weight"), dtype)?,
        })
    } else {
        Mixer::Attention(load_attention(i, src, dtype)?)
    };
    let (gate, up) = (
        src.linear(&n("ffn_gate.weight"), dtype)?,
        src.linear(&n("ffn_up.weight"), dtype)?,
    );
    Ok(Layer {
        attn_norm: src.dense(&n("attn_norm.weight"))?,
        post_norm: src.dense(&n("post_attention_norm.weight"))?,
        mixer,
        gate_up: GateUp::new(gate, up).map_err(stack)?,
        down: src.linear(&n("ffn_down.weight"), dtype)?,
    })
}

/// Layer `i`'s gated attention weights.
fn load_attention(
    i: usize,
    src: &mut dyn WeightSource,
    dtype: WeightDType,
) -> Result<Attention, ModelError> {
    let n = |part: &str| name(i, part);
    let stack = |e| ModelError::candle(format!("stacking layer {i}'s projections"))(e);
    let mut vector = |part: &str| -> Result<Vec<f32>, ModelError> {
        let t = src.dense(&n(part))?;
        t.to_vec1::<f32>().map_err(ModelError::candle(n(part)))
    };
    let (q_norm, k_norm) = (vector("attn_q_norm.weight")?, vector("attn_k_norm.weight")?);
    let (q, k, v) = (
        src.linear(&n("attn_q.weight"), dtype)?,
        src.linear(&n("attn_k.weight"), dtype)?,
        src.linear(&n("attn_v.weight"), dtype)?,
    );
    Ok(Attention {
        qkv: Qkv::new(q, k, v).map_err(stack)?,
        q_norm,
        k_norm,
        o: src.linear(&n("attn_output.weight"), dtype)?,
    })
}
