//! Architecture hyper-parameters of the llama family (llama, SmolLM2, mistral-style, qwen2 with QKV
//! bias), read from GGUF metadata or a Hugging Face `config.json`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::gguf::Gguf;
use crate::error::ModelError;

/// Architectures this engine runs.
pub(crate) const SUPPORTED: &[&str] = &["llama", "qwen2", "gemma3"];

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
    /// Multi-token-prediction (`nextn`) blocks stored after the `layers` regular ones (GGUF key
    /// `ARCH.nextn_predict_layers`; `block_count` counts both, as llama.cpp writes it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nextn: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl LlamaConfig {
    /// Reads `{arch}.*` metadata; rejects architectures outside [`SUPPORTED`] and files the
    /// validation pass ([`super::validate`]) finds problems in.
    pub(crate) fn from_gguf(g: &Gguf) -> Result<Self, ModelError> {
        let arch = g.architecture()?;
        check_arch(&g.path, &arch)?;
        super::validate::llama_config(g, &arch).map_err(|problems| ModelError::Rejected {
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
        let arch = hf.model_type.clone().unwrap_or_else(|| "llama".into());
        check_arch(path, &arch)?;
        let heads = hf.num_attention_heads;
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
            context_length: hf.max_position_embeddings.unwrap_or(4096),
            qkv_bias: arch == "qwen2",
            arch,
            nextn: 0,
        };
        if hf.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(ModelError::Invalid {
                path: path.to_path_buf(),
                detail: "rope_scaling is not supported yet".into(),
            });
        }
        cfg.validate(path)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path) -> Result<(), ModelError> {
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
        if self.head_dim * self.heads != self.hidden && self.arch == "llama" {
            return bad(format!(
                "head_dim {} × {} heads != hidden {}",
                self.head_dim, self.heads, self.hidden
            ));
        }
        if !self.head_dim.is_multiple_of(2) || self.vocab == 0 || self.layers == 0 {
            return bad(format!(
                "implausible shape: head_dim {}, vocab {}, layers {}",
                self.head_dim, self.vocab, self.layers
            ));
        }
        Ok(())
    }
}

fn check_arch(path: &Path, arch: &str) -> Result<(), ModelError> {
    if SUPPORTED.contains(&arch) {
        Ok(())
    } else {
        Err(ModelError::UnsupportedArch {
            path: path.to_path_buf(),
            arch: arch.into(),
            supported: SUPPORTED.join(", "),
        })
    }
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
}

/// Gemma 3's architecture names: `gemma3` in GGUF, `gemma3_text` (or `gemma3`) in `config.json`.
pub const GEMMA3: &str = "gemma3";

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
    pub fn from_gguf(g: &Gguf) -> Result<Self, ModelError> {
        super::validate::gemma_config(g).map_err(|problems| ModelError::Rejected {
            path: g.path.clone(),
            problems: super::validate::Problems(problems),
        })
    }

    /// Reads a Hugging Face Gemma 3 `config.json` (`model_type` `gemma3_text`).
    pub fn from_hf_json(path: &Path) -> Result<Self, ModelError> {
        let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES)
            .map_err(ModelError::io(path))?;
        let bad = |detail: String| ModelError::Invalid {
            path: path.to_path_buf(),
            detail,
        };
        let hf: HfGemma = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a Gemma 3 config.json: {e}")))?;
        if hf
            .hidden_activation
            .as_deref()
            .is_some_and(|a| a != "gelu_pytorch_tanh")
        {
            return Err(bad(format!(
                "hidden_activation {:?} is not supported (Gemma 3 uses gelu_pytorch_tanh)",
                hf.hidden_activation
            )));
        }
        if hf.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(bad("rope_scaling is not supported yet".into()));
        }
        let layers = hf.num_hidden_layers;
        let global = match &hf.layer_types {
            Some(types) if types.len() == layers => {
                types.iter().map(|t| t == "full_attention").collect()
            }
            Some(types) => {
                return Err(bad(format!(
                    "layer_types has {} entries for {layers} layers",
                    types.len()
                )))
            }
            None => gemma_pattern(layers, hf.sliding_window_pattern.unwrap_or(6)),
        };
        let base = LlamaConfig {
            arch: GEMMA3.into(),
            hidden: hf.hidden_size,
            ffn: hf.intermediate_size,
            layers,
            heads: hf.num_attention_heads,
            kv_heads: hf.num_key_value_heads,
            head_dim: hf.head_dim,
            vocab: hf.vocab_size,
            rms_eps: hf.rms_norm_eps.unwrap_or(1e-6),
            rope_theta: hf.rope_theta.unwrap_or(1_000_000.0),
            rope_interleaved: false,
            context_length: hf.max_position_embeddings.unwrap_or(32_768),
            qkv_bias: false,
            nextn: 0,
        };
        base.validate(path)?;
        let cfg = Self {
            sliding_window: hf.sliding_window.unwrap_or(512).max(1),
            global,
            rope_local_theta: hf.rope_local_base_freq.unwrap_or(10_000.0),
            query_pre_attn_scalar: hf.query_pre_attn_scalar.unwrap_or(hf.head_dim as f64),
            final_softcap: hf.final_logit_softcapping,
            attn_softcap: hf.attn_logit_softcapping,
            base,
        };
        Ok(cfg)
    }

    /// Whether layer `l` is a sliding-window layer.
    pub fn is_local(&self, l: usize) -> bool {
        !self.global.get(l).copied().unwrap_or(true)
    }
}

/// The fields of a Gemma 3 `config.json` that matter here.
#[derive(Debug, Deserialize)]
struct HfGemma {
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: usize,
    head_dim: usize,
    vocab_size: usize,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    rope_local_base_freq: Option<f64>,
    max_position_embeddings: Option<usize>,
    sliding_window: Option<usize>,
    sliding_window_pattern: Option<usize>,
    layer_types: Option<Vec<String>>,
    query_pre_attn_scalar: Option<f64>,
    final_logit_softcapping: Option<f64>,
    attn_logit_softcapping: Option<f64>,
    hidden_activation: Option<String>,
    rope_scaling: Option<serde_json::Value>,
}

/// The `model_type` of a `config.json`, if it has one.
pub fn hf_model_type(path: &Path) -> Option<String> {
    let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["model_type"].as_str().map(str::to_string)
}
