//! Tiny synthetic Qwen3.5 models, written as GGUF with llama.cpp's `qwen35` names and keys
//! ([`super::families::qwen35::layer_tensors`] gives every tensor and shape) and the byte-level
//! BPE tokenizer of [`super::synthetic`], so tests and the llama.cpp oracle run the same bytes.

use std::path::Path;

use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::GgmlDType;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::arch::LlamaConfig;
use super::families::qwen35::{layer_tensors, mtp_tensors, Qwen35Config};
use super::synthetic::{self, Spec, Weights};
use super::weights::Names;

/// Shape of a synthetic Qwen3.5 model.
#[derive(Debug, Clone)]
pub struct Qwen35Spec {
    pub hidden: usize,
    pub ffn: usize,
    pub layers: usize,
    /// Every n-th layer attends (`full_attention_interval`); the others are Gated DeltaNet.
    pub interval: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Rotated dimensions of an attention head (`rope.dimension_count`).
    pub rot: usize,
    pub sections: [usize; 4],
    pub conv_kernel: usize,
    pub state: usize,
    pub k_heads: usize,
    pub v_heads: usize,
    pub context: usize,
    /// Storage of the matrices (norms and vectors are f32).
    pub quant: GgmlDType,
    pub seed: u64,
    /// A multi-token-prediction block after the layers (its head norm of its own, embedding
    /// and head shared with the model, as Qwen3.5's converter writes them).
    pub mtp: bool,
    /// Every layer's output projections (`attn_output`, `ssm_out`, `ffn_down`) zero and every
    /// norm 1, and the MTP block's `eh_proj` passing the token embedding through: the model is
    /// a bigram table (the next token depends on the last alone) and the MTP block predicts
    /// exactly what the target will, so its drafts are accepted — for acceptance checks.
    pub mirror: bool,
    /// With `mirror`: uniform noise of this amplitude on every entry of `eh_proj`, so the MTP
    /// block predicts the target only some of the time (partial acceptance, to compare with
    /// llama.cpp's); 0 draws nothing from the seed.
    pub mirror_noise: f32,
}

impl Default for Qwen35Spec {
    fn default() -> Self {
        Self {
            hidden: 64,
            ffn: 128,
            layers: 4,
            interval: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
            rot: 8,
            sections: [2, 1, 1, 0],
            conv_kernel: 4,
            state: 8,
            k_heads: 2,
            v_heads: 4,
            context: 128,
            quant: GgmlDType::F32,
            seed: 35,
            mtp: false,
            mirror: false,
            mirror_noise: 0.0,
        }
    }
}

impl Qwen35Spec {
    /// The configuration the loader should read from the file.
    pub fn config(&self) -> Qwen35Config {
        let vocab = synthetic::vocab().0.len();
        Qwen35Config {
            base: LlamaConfig {
                arch: "qwen35".into(),
                hidden: self.hidden,
                ffn: self.ffn,
                layers: self.layers,
                heads: self.heads,
                kv_heads: self.kv_heads,
                head_dim: self.head_dim,
                vocab,
                rms_eps: 1e-5,
                rope_theta: 10_000.0,
                rope_interleaved: false,
                context_length: self.context,
                qkv_bias: false,
                qk_norm: true,
                rope_scaling: Default::default(),
                nope_every: 0,
                rope_dims: if self.rot == self.head_dim {
                    0
                } else {
                    self.rot
                },
                fused: false,
                long_rope: None,
                nextn: usize::from(self.mtp),
            },
            recurrent: (0..self.layers)
                .map(|i| !(i + 1).is_multiple_of(self.interval))
                .collect(),
            conv_kernel: self.conv_kernel,
            state: self.state,
            k_heads: self.k_heads,
            v_heads: self.v_heads,
            sections: self.sections,
        }
    }

    /// The base spec [`synthetic::write_gguf_with`] writes the common metadata from.
    fn base(&self) -> Spec {
        Spec {
            hidden: self.hidden,
            ffn: self.ffn,
            layers: self.layers,
            heads: self.heads,
            kv_heads: self.kv_heads,
            context: self.context,
            quant: self.quant,
            seed: self.seed,
            arch: "qwen35".into(),
            rope_dims: Some(self.rot),
            ..Spec::default()
        }
    }
}

/// Seeded weights of every tensor: matrices uniform in ±1.7/√cols, norms near 1, the decay's
/// `ssm_a` (−exp(A_log)) in [−2, −0.1], `ssm_dt.bias` in [0, 1].
fn weights(spec: &Qwen35Spec) -> Vec<Weights> {
    let cfg = spec.config();
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let (h, vocab) = (spec.hidden, cfg.base.vocab);
    let n = Names::Gguf;
    let mut all: Vec<(String, Vec<usize>)> = vec![
        (n.embed().into(), vec![vocab, h]),
        (n.head().into(), vec![vocab, h]),
        (n.norm().into(), vec![h]),
    ];
    for i in 0..spec.layers {
        all.extend(layer_tensors(&cfg, i));
    }
    if spec.mtp {
        let shared = ["nextn.embed_tokens.weight", "nextn.shared_head_head.weight"];
        all.extend(
            mtp_tensors(&cfg)
                .into_iter()
                .filter(|(name, _, _)| !shared.iter().any(|s| name.ends_with(s)))
                .map(|(name, dims, _)| (name, dims)),
        );
    }
    all.into_iter()
        .map(|(name, dims)| {
            let (rows, cols) = match dims[..] {
                [r, c] => (r, c),
                [c] => (1, c),
                _ => unreachable!("tensors are 1- or 2-D"),
            };
            let count = rows * cols;
            if spec.mirror {
                if let Some(v) = mirrored(&name, rows, cols, spec.mirror_noise, &mut rng) {
                    return (name, v, (rows, cols));
                }
            }
            let values: Vec<f32> = if name.ends_with("ssm_a") {
                (0..count).map(|_| rng.random_range(-2.0..-0.1)).collect()
            } else if name.ends_with("ssm_dt.bias") {
                (0..count).map(|_| rng.random_range(0.0..1.0)).collect()
            } else if rows == 1 {
                (0..count)
                    .map(|_| 1.0 + rng.random_range(-0.2..0.2))
                    .collect()
            } else {
                let s = 1.7 / (cols as f32).sqrt();
                (0..count).map(|_| rng.random_range(-s..s)).collect()
            };
            (name, values, (rows, cols))
        })
        .collect()
}

/// A [`Qwen35Spec::mirror`] model's value of tensor `name`, when it is one the mirror sets.
fn mirrored(
    name: &str,
    rows: usize,
    cols: usize,
    noise: f32,
    rng: &mut StdRng,
) -> Option<Vec<f32>> {
    let zero = ["attn_output.weight", "ssm_out.weight", "ffn_down.weight"];
    if zero.iter().any(|z| name.ends_with(z)) {
        return Some(vec![0.0; rows * cols]);
    }
    if name.ends_with("nextn.eh_proj.weight") {
        // [hidden, 2 · hidden]: the first half (the embedding's) as the identity.
        let mut v = vec![0.0; rows * cols];
        if noise > 0.0 {
            v.iter_mut()
                .for_each(|x| *x = rng.random_range(-noise..noise));
        }
        (0..rows).for_each(|r| v[r * cols + r] += 1.0);
        return Some(v);
    }
    let vector = rows == 1 && !name.ends_with("ssm_a") && !name.ends_with("ssm_dt.bias");
    (vector && name.contains("norm")).then(|| vec![1.0; cols])
}

/// Writes the model as a GGUF file with `qwen35` metadata, tokenizer and chat template.
pub fn write_qwen35_gguf(path: &Path, spec: &Qwen35Spec) -> candle_core::Result<()> {
    let key = |k: &str| format!("qwen35.{k}");
    let u = |x: usize| Value::U32(x as u32);
    let sections = spec
        .sections
        .iter()
        .map(|&s| Value::I32(s as i32))
        .collect();
    let mut extra = vec![
        (key("attention.key_length"), u(spec.head_dim)),
        (key("attention.value_length"), u(spec.head_dim)),
        (key("rope.dimension_sections"), Value::Array(sections)),
        (key("ssm.conv_kernel"), u(spec.conv_kernel)),
        (key("ssm.inner_size"), u(spec.v_heads * spec.state)),
        (key("ssm.state_size"), u(spec.state)),
        (key("ssm.time_step_rank"), u(spec.v_heads)),
        (key("ssm.group_count"), u(spec.k_heads)),
        (key("full_attention_interval"), u(spec.interval)),
    ];
    if spec.mtp {
        extra.push((key("nextn_predict_layers"), u(1)));
    }
    let base = spec.base();
    let blocks = spec.layers + usize::from(spec.mtp);
    synthetic::write_gguf_with(path, &base, weights(spec), blocks, extra)
}
