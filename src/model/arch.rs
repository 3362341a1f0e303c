//! Architecture hyper-parameters of the llama-engine families (llama, SmolLM2, mistral-style,
//! qwen2 with QKV bias, qwen3 with q/k norms) and of Gemma 3, read from GGUF metadata or a
//! Hugging Face `config.json`; which family a name is comes from [`super::families`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::gguf::Gguf;
use crate::error::ModelError;

use super::families::{self, Family};

/// Hyper-parameters of one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlamaConfig {
    /// `llama` or `qwen2`.
    pub arch: String,
    pub hidden: usize,
    /// Feed-forward inner size.
    pub ffn: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab: usize,
    pub rms_eps: f64,
    pub rope_theta: f64,
    /// Interleaved pairs (2i, 2i+1) as GGUF llama stores Q/K; else halves (i, i+d/2).
    pub rope_interleaved: bool,
    /// Context length the model was trained for, in tokens.
    pub context_length: usize,
    /// Q, K, V projections carry a bias (qwen2).
    pub qkv_bias: bool,
    /// Per-head RMSNorm of q and k before RoPE (qwen3).
    #[serde(default, skip_serializing_if = "is_false")]
    pub qk_norm: bool,
    /// RoPE scaling applied to every frequency.
    #[serde(default, skip_serializing_if = "RopeScaling::is_none")]
    pub rope_scaling: RopeScaling,
    /// Every `n`-th layer (layer i when (i + 1) % n == 0) has no RoPE (SmolLM3's NoPE layers);
    /// 0: every layer rotates.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nope_every: usize,
    /// Dimensions of a head that RoPE rotates when fewer than `head_dim` (partial rotary,
    /// Phi-4-mini); 0: all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rope_dims: usize,
    /// q/k/v stored as one `attn_qkv` matrix and gate/up as one `ffn_up` (phi3).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fused: bool,
    /// LongRoPE (phi3): the context the short factors are for, the factor set in use, and the
    /// scale of cos and sin (`rope.scaling.attn_factor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_rope: Option<LongRope>,
    /// Multi-token-prediction (`nextn`) blocks stored after the `layers` regular ones (GGUF key
    /// `ARCH.nextn_predict_layers`; `block_count` counts both, as llama.cpp writes it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nextn: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A phi3 file's LongRoPE: `rope_factors_long.weight` and `rope_factors_short.weight` divide
/// the frequencies; llama.cpp uses the long ones when the context exceeds
/// `original_context`, so does this engine for the context it builds RoPE tables for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LongRope {
    pub original_context: usize,
    /// `long` or `short`: the factors in use.
    pub factors: LongRopeSet,
    /// cos and sin are multiplied by this (llama.cpp's `attn_factor`).
    pub attn_factor: f64,
}

/// Which LongRoPE factors are in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LongRopeSet {
    Long,
    Short,
}

/// RoPE scaling of every frequency, beside a GGUF's per-frequency `rope_freqs.weight` (which the
/// model reads as a tensor).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RopeScaling {
    #[default]
    None,
    /// Positions divided by `factor` (llama.cpp's `freq_scale` = 1 / factor).
    Linear { factor: f64 },
    /// Llama 3.1's per-frequency rule from a `config.json` (GGUF stores its result as
    /// `rope_freqs.weight`).
    Llama3 {
        factor: f64,
        low_freq_factor: f64,
        high_freq_factor: f64,
        original_context: f64,
    },
    /// YaRN as llama.cpp's `rope_yarn` applies it: each frequency mixes its interpolated (÷
    /// `factor`) and extrapolated value by a ramp over the rotated pairs between the correction
    /// dimensions where `beta_fast` and `beta_slow` turns fit in `original_context` positions;
    /// cos and sin are multiplied by `mscale`.
    Yarn {
        factor: f64,
        original_context: f64,
        beta_fast: f64,
        beta_slow: f64,
        mscale: f64,
    },
}

/// YaRN's magnitude scale for a `factor`, as llama.cpp and `transformers` compute it.
pub fn yarn_mscale(factor: f64) -> f64 {
    if factor <= 1.0 {
        1.0
    } else {
        0.1 * factor.ln() + 1.0
    }
}

impl RopeScaling {
    fn is_none(&self) -> bool {
        *self == Self::None
    }

    /// The divisor of rotated pair `k`'s inverse frequency `inv` (1 when unscaled), for `rot`
    /// rotated dimensions and RoPE base `base`: as llama.cpp's converter computes Llama 3's
    /// `rope_freqs`, its `freq_scale` applies linear scaling and `rope_yarn` YaRN (in f32, as
    /// ggml computes the correction dimensions, so the ramp ends on the same pairs).
    pub fn divisor(&self, k: usize, inv: f64, rot: usize, base: f64) -> f64 {
        match *self {
            Self::None => 1.0,
            Self::Linear { factor } => factor,
            Self::Yarn {
                factor,
                original_context,
                beta_fast,
                beta_slow,
                ..
            } => {
                let dims = rot as f32;
                let corr = |beta: f64| {
                    let turns =
                        original_context as f32 / (beta as f32 * 2.0 * std::f32::consts::PI);
                    dims * turns.ln() / (2.0 * (base as f32).ln())
                };
                let low = corr(beta_fast).floor().max(0.0);
                let high = corr(beta_slow).ceil().min(dims - 1.0);
                let y = (k as f32 - low) / (high - low).max(0.001);
                let ramp = f64::from(1.0 - y.clamp(0.0, 1.0));
                1.0 / ((1.0 - ramp) / factor + ramp)
            }
            Self::Llama3 {
                factor,
                low_freq_factor: low,
                high_freq_factor: high,
                original_context: old,
            } => {
                let wavelen = 2.0 * std::f64::consts::PI / inv;
                if wavelen < old / high {
                    1.0
                } else if wavelen > old / low {
                    factor
                } else {
                    let smooth = (old / wavelen - low) / (high - low);
                    1.0 / ((1.0 - smooth) / factor + smooth)
                }
            }
        }
    }

    /// The scale of cos and sin (YaRN's `mscale`; 1 otherwise).
    pub fn mscale(&self) -> f64 {
        match *self {
            Self::Yarn { mscale, .. } => mscale,
            _ => 1.0,
        }
    }

    /// `rope_scaling` of a `config.json`: linear, llama3 and YaRN are applied, others refused.
    /// YaRN's `factor` is taken as written and its original context defaults to `context`, as
    /// llama.cpp's converter writes them; `attention_factor` defaults to [`yarn_mscale`].
    pub(super) fn from_hf(v: &serde_json::Value, context: usize) -> Result<Self, String> {
        if v.is_null() {
            return Ok(Self::None);
        }
        let kind = v["rope_type"].as_str().or(v["type"].as_str()).unwrap_or("");
        let num = |k: &str| {
            v[k].as_f64()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("rope_scaling.{k} must be a number above 0"))
        };
        match kind {
            "default" => Ok(Self::None),
            "linear" => Ok(Self::Linear {
                factor: num("factor")?,
            }),
            "llama3" => {
                let (low, high) = (num("low_freq_factor")?, num("high_freq_factor")?);
                if high <= low {
                    return Err("rope_scaling.high_freq_factor must exceed low_freq_factor".into());
                }
                Ok(Self::Llama3 {
                    factor: num("factor")?,
                    low_freq_factor: low,
                    high_freq_factor: high,
                    original_context: num("original_max_position_embeddings")?,
                })
            }
            "yarn" => Self::yarn_from_hf(v, context, num),
            other => Err(format!(
                "rope_scaling type {other:?} is not supported (linear, llama3 and yarn are); its \
                 positions would be rotated wrong"
            )),
        }
    }
}
impl RopeScaling {
    fn yarn_from_hf(
        v: &serde_json::Value,
        context: usize,
        num: impl Fn(&str) -> Result<f64, String>,
    ) -> Result<Self, String> {
        for key in ["mscale", "mscale_all_dim"] {
            if !v[key].is_null() {
                return Err(format!(
                    "rope_scaling.{key} (DeepSeek's YaRN magnitude rule) is not supported"
                ));
            }
        }
        if v["truncate"] == serde_json::Value::Bool(false) {
            return Err(
                "rope_scaling.truncate = false (an unrounded YaRN ramp) is not \
                        supported"
                    .into(),
            );
        }
        let or = |key: &str, default: f64| match v[key].is_null() {
            true => Ok(default),
            false => num(key),
        };
        let factor = num("factor")?;
        let (beta_fast, beta_slow) = (or("beta_fast", 32.0)?, or("beta_slow", 1.0)?);
        if beta_fast <= beta_slow {
            return Err("rope_scaling.beta_fast must exceed beta_slow".into());
        }
        Ok(Self::Yarn {
            factor,
            original_context: or("original_max_position_embeddings", context as f64)?,
            beta_fast,
            beta_slow,
            mscale: or("attention_factor", yarn_mscale(factor))?,
        })
    }
}

impl LlamaConfig {
    /// Reads `{arch}.*` metadata; rejects architectures outside [`families::FAMILIES`] and files the
    /// validation pass ([`super::validate`]) finds problems in.
    pub(crate) fn from_gguf(g: &Gguf, family: &'static Family) -> Result<Self, ModelError> {
        super::validate::llama_config(g, family).map_err(|problems| ModelError::Rejected {
            path: g.path.clone(),
            problems: super::validate::Problems(problems),
        })
    }

    /// Reads a Hugging Face `config.json`.
    pub(crate) fn from_hf_json(path: &Path) -> Result<Self, ModelError> {
        let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES)
            .map_err(ModelError::io(path))?;
        let hf: HfConfig = serde_json::from_str(&text).map_err(|e| ModelError::Invalid {
            path: path.to_path_buf(),
            detail: format!("not a llama-family config.json: {e}"),
        })?;
        let model_type = hf.model_type.clone().unwrap_or_else(|| "llama".into());
        let family = check_hf(path, &model_type)?;
        if let Some(why) = family.config_json_refused {
            return Err(ModelError::Invalid {
                path: path.to_path_buf(),
                detail: why.into(),
            });
        }
        let heads = hf.num_attention_heads;
        let context = hf.max_position_embeddings.unwrap_or(4096);
        let rope_scaling = RopeScaling::from_hf(
            hf.rope_scaling.as_ref().unwrap_or(&serde_json::Value::Null),
            context,
        )
        .map_err(|detail| ModelError::Invalid {
            path: path.to_path_buf(),
            detail,
        })?;
        let cfg = Self {
            hidden: hf.hidden_size,
            ffn: hf.intermediate_size,
            layers: hf.num_hidden_layers,
            heads,
            kv_heads: hf.num_key_value_heads.unwrap_or(heads),
            head_dim: hf.head_dim.unwrap_or(hf.hidden_size / heads.max(1)),
            vocab: hf.vocab_size,
            rms_eps: hf.rms_norm_eps.unwrap_or(1e-6),
            rope_theta: hf.rope_theta.unwrap_or(10_000.0),
            rope_interleaved: false,
            context_length: context,
            qkv_bias: family.qkv_bias,
            qk_norm: family.qk_norm,
            rope_scaling,
            nope_every: super::families::smollm3::nope_from_hf(
                path,
                family,
                hf.num_hidden_layers,
                hf.no_rope_layers.as_deref(),
                hf.no_rope_layer_interval,
            )?,
            rope_dims: 0,
            fused: false,
            long_rope: None,
            arch: family.gguf.into(),
            nextn: 0,
        };
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// The rotated dimensions of a head.
    pub fn rot(&self) -> usize {
        match self.rope_dims {
            0 => self.head_dim,
            n => n,
        }
    }

    /// Whether layer `l` rotates q and k.
    pub fn ropes(&self, l: usize) -> bool {
        self.nope_every == 0 || !(l + 1).is_multiple_of(self.nope_every)
    }

    pub(super) fn validate(&self, path: &Path) -> Result<(), ModelError> {
        let bad = |detail: String| {
            Err(ModelError::Invalid {
                path: path.to_path_buf(),
                detail,
            })
        };
        if self.heads == 0 || self.kv_heads == 0 || !self.heads.is_multiple_of(self.kv_heads) {
            return bad(format!(
                "{} attention heads cannot be grouped over {} kv heads",
                self.heads, self.kv_heads
            ));
        }
        if !self.head_dim.is_multiple_of(2) || self.vocab == 0 || self.layers == 0 {
            return bad(format!(
                "implausible shape: head_dim {}, vocab {}, layers {}",
                self.head_dim, self.vocab, self.layers
            ));
        }
        // The GGUF validator's bounds, so a config.json cannot ask for more.
        use super::validate::MIN_CONTEXT;
        use super::validate::{MAX_CONTEXT, MAX_FFN, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB};
        for (key, value, min, max) in [
            ("hidden_size", self.hidden, 1, MAX_HIDDEN),
            ("head_dim", self.head_dim, 1, MAX_HIDDEN),
            ("num_attention_heads", self.heads, 1, MAX_HIDDEN),
            ("intermediate_size", self.ffn, 1, MAX_FFN),
            ("num_hidden_layers", self.layers, 1, MAX_LAYERS),
            (
                "max_position_embeddings",
                self.context_length,
                MIN_CONTEXT,
                MAX_CONTEXT,
            ),
            ("vocab_size", self.vocab, 1, MAX_VOCAB),
        ] {
            if (value as u64) < min || value as u64 > max {
                return bad(format!("{key} = {value}: expected {min} to {max}"));
            }
        }
        if !(self.rms_eps.is_finite() && self.rms_eps > 0.0 && self.rms_eps < 1.0) {
            return bad(format!(
                "rms_norm_eps = {}: expected above 0 and below 1",
                self.rms_eps
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return bad(format!(
                "rope_theta = {}: expected a finite number above 0",
                self.rope_theta
            ));
        }
        Ok(())
    }
}

/// The family of a GGUF architecture, or the refusal naming what is supported.
pub(crate) fn check_arch(path: &Path, arch: &str) -> Result<&'static Family, ModelError> {
    families::by_gguf(arch).ok_or_else(|| ModelError::UnsupportedArch {
        path: path.to_path_buf(),
        arch: arch.into(),
        supported: families::names(),
    })
}

/// The family of a `config.json` `model_type`, or the refusal naming what is supported.
fn check_hf(path: &Path, model_type: &str) -> Result<&'static Family, ModelError> {
    families::by_hf(model_type).ok_or_else(|| ModelError::UnsupportedArch {
        path: path.to_path_buf(),
        arch: format!("{model_type} (config.json model_type)"),
        supported: families::names(),
    })
}

/// The fields of a Hugging Face `config.json` that matter here.
#[derive(Debug, Deserialize)]
struct HfConfig {
    model_type: Option<String>,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    vocab_size: usize,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    max_position_embeddings: Option<usize>,
    rope_scaling: Option<serde_json::Value>,
    no_rope_layers: Option<Vec<u8>>,
    no_rope_layer_interval: Option<usize>,
}

/// Hyper-parameters of a Gemma 3 model: the llama-family shape plus what Gemma adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmaConfig {
    /// Shape, norms' epsilon, the global layers' RoPE base (`rope_theta`), context length.
    pub base: LlamaConfig,
    /// Keys a local (sliding-window) layer's query sees, itself included.
    pub sliding_window: usize,
    /// `global[i]`: layer i attends to every earlier key (else it is a sliding-window layer).
    pub global: Vec<bool>,
    /// RoPE base of the sliding-window layers.
    pub rope_local_theta: f64,
    /// Attention scores are divided by the square root of this (head_dim when absent).
    pub query_pre_attn_scalar: f64,
    /// `cap · tanh(x / cap)` on the final logits, when set.
    pub final_softcap: Option<f64>,
    /// The same on attention scores, when set.
    pub attn_softcap: Option<f64>,
}

/// Every `pattern`-th layer global (layer i global when (i + 1) % pattern == 0), llama.cpp's and
/// transformers' rule for Gemma 3 (pattern 6).
pub fn gemma_pattern(layers: usize, pattern: usize) -> Vec<bool> {
    (0..layers)
        .map(|i| pattern > 0 && (i + 1) % pattern == 0)
        .collect()
}

impl GemmaConfig {
    /// Reads `gemma3.*` metadata through the validation pass.
    pub fn from_gguf(g: &Gguf, family: &'static Family) -> Result<Self, ModelError> {
        super::validate::gemma_config(g, family).map_err(|problems| ModelError::Rejected {
            path: g.path.clone(),
            problems: super::validate::Problems(problems),
        })
    }

    /// Whether layer `l` is a sliding-window layer.
    pub fn is_local(&self, l: usize) -> bool {
        !self.global.get(l).copied().unwrap_or(true)
    }
}

/// The `model_type` of a `config.json`, if it has one.
pub fn hf_model_type(path: &Path) -> Option<String> {
    let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["model_type"].as_str().map(str::to_string)
}
