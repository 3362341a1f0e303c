//! Architecture hyper-parameters of the llama family (llama, SmolLM2, mistral-style, qwen2 with QKV
//! bias), read from GGUF metadata or a Hugging Face `config.json`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::gguf::Gguf;
use crate::error::ModelError;

/// Architectures this engine runs.
pub const SUPPORTED: &[&str] = &["llama", "qwen2"];

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
}

impl LlamaConfig {
    /// Reads `{arch}.*` metadata; rejects architectures outside [`SUPPORTED`].
    pub fn from_gguf(g: &Gguf) -> Result<Self, ModelError> {
        let arch = g.architecture()?;
        check_arch(&g.path, &arch)?;
        let key = |k: &str| format!("{arch}.{k}");
        let hidden = g.u64(&key("embedding_length"))? as usize;
        let heads = g.u64(&key("attention.head_count"))? as usize;
        let head_dim = g
            .opt_u64(&key("rope.dimension_count"))
            .map(|x| x as usize)
            .unwrap_or(hidden / heads.max(1));
        let vocab = match g.opt_u64(&key("vocab_size")) {
            Some(v) => v as usize,
            None => g
                .content
                .tensor_infos
                .get("token_embd.weight")
                .map(|t| t.shape.dims()[0])
                .unwrap_or(0),
        };
        let cfg = Self {
            hidden,
            ffn: g.u64(&key("feed_forward_length"))? as usize,
            layers: g.u64(&key("block_count"))? as usize,
            heads,
            kv_heads: g
                .opt_u64(&key("attention.head_count_kv"))
                .map(|x| x as usize)
                .unwrap_or(heads),
            head_dim,
            vocab,
            rms_eps: g
                .opt_f64(&key("attention.layer_norm_rms_epsilon"))
                .unwrap_or(1e-5),
            rope_theta: g.opt_f64(&key("rope.freq_base")).unwrap_or(10_000.0),
            rope_interleaved: arch == "llama",
            context_length: g
                .opt_u64(&key("context_length"))
                .map(|x| x as usize)
                .unwrap_or(4096),
            qkv_bias: arch == "qwen2",
            arch,
        };
        cfg.validate(&g.path)?;
        Ok(cfg)
    }

    /// Reads a Hugging Face `config.json`.
    pub fn from_hf_json(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(ModelError::io(path))?;
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

    /// KV-cache bytes one token takes across all layers (f32 keys and values).
    pub fn kv_bytes_per_token(&self) -> usize {
        2 * self.layers * self.kv_heads * self.head_dim * 4
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
