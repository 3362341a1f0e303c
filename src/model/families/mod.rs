//! The registry of model families: one entry per family with its names (GGUF
//! `general.architecture`, `config.json` `model_type`), the engine that runs it, what it adds to
//! the llama block, and the GGUF hyper-parameter keys it reads. The loader, the validator,
//! `inspect` and the manifest's download check ask here, never compare architecture strings of
//! their own. A key under `ARCH.` that the family does not read is refused by name: it may
//! change the computation (see [`Family::keys`]).
//!
//! One file per family holds its entry and what only it reads (phi3's LongRoPE, SmolLM3's NoPE
//! layers in a `config.json`, Gemma 3's keys, tensors and `config.json`); adding a family that
//! the llama engine's options cover is a new file and one line in [`FAMILIES`].

pub(crate) mod gemma3;
pub(crate) mod llama;
pub(crate) mod phi3;
mod qwen2;
mod qwen3;
pub(crate) mod qwen35;
pub(crate) mod smollm3;

use serde::Serialize;

/// The forward that runs a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// [`super::llama::Llama`]: pre-norm attention + SwiGLU blocks, options below.
    Llama,
    /// [`super::gemma::Gemma`]: four norms a layer, GELU, sliding-window layers, soft-caps.
    Gemma,
    /// [`super::qwen35::Qwen35`]: Gated DeltaNet layers beside gated attention layers.
    Qwen35,
}

/// One supported family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Family {
    /// `general.architecture` in GGUF, the key prefix of its metadata.
    pub gguf: &'static str,
    /// `model_type` values of a Hugging Face `config.json`.
    #[serde(rename = "config_json")]
    pub hf: &'static [&'static str],
    pub engine: Engine,
    /// Q, K and V projections carry a bias.
    pub qkv_bias: bool,
    /// Per-head RMSNorm of q and k before RoPE (`attn_q_norm`, `attn_k_norm`).
    pub qk_norm: bool,
    /// GGUF rotates interleaved pairs (2i, 2i+1), llama.cpp's `LLAMA_ROPE_TYPE_NORM`; else halves
    /// (i, i + d/2), `NEOX`. `config.json` weights are always halves.
    pub rope_interleaved: bool,
    /// A Llama-3 `rope_freqs.weight` (per-frequency divisors) is applied.
    pub rope_freqs: bool,
    /// Every `n`-th layer has no RoPE (llama.cpp's `n_no_rope_layer_step`, fixed per family);
    /// 0: none.
    pub nope_every: usize,
    /// q/k/v stored as one `attn_qkv` matrix and gate/up as one `ffn_up` (Phi-3's layout).
    pub fused: bool,
    /// `rope.dimension_count` may be less than the head size (partial rotary).
    pub partial_rotary: bool,
    /// LongRoPE: `rope_factors_long`/`_short.weight` and `rope.scaling.attn_factor`, read in
    /// [`phi3`]; YaRN is refused beside it.
    pub long_rope: bool,
    /// Why a `config.json` of this family is refused, when it is (the family loads from GGUF
    /// only).
    pub config_json_refused: Option<&'static str>,
    /// `ARCH.*` keys read beyond [`COMMON_KEYS`].
    pub keys: &'static [&'static str],
    /// What the family is, for `inspect --families`.
    pub about: &'static str,
}

/// `ARCH.*` keys every family reads.
pub const COMMON_KEYS: &[&str] = &[
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "vocab_size",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.layer_norm_rms_epsilon",
    "attention.key_length",
    "attention.value_length",
    "rope.freq_base",
    "rope.dimension_count",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.attn_factor",
    "rope.scaling.original_context_length",
    "nextn_predict_layers",
];

/// Every family this engine runs, one file each.
pub const FAMILIES: &[Family] = &[
    llama::FAMILY,
    qwen2::FAMILY,
    qwen3::FAMILY,
    phi3::FAMILY,
    smollm3::FAMILY,
    gemma3::FAMILY,
    qwen35::FAMILY,
];

/// The family of a GGUF `general.architecture`.
pub fn by_gguf(arch: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.gguf == arch)
}

/// The family of a `config.json` `model_type` (`llama` when the file has none).
pub fn by_hf(model_type: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.hf.contains(&model_type))
}

/// The GGUF names, comma-separated, for messages.
pub fn names() -> String {
    FAMILIES
        .iter()
        .map(|f| f.gguf)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Family {
    /// Whether the family reads `ARCH.key` (`key` without the prefix).
    pub fn reads(&self, key: &str) -> bool {
        COMMON_KEYS.contains(&key) || self.keys.contains(&key)
    }
}
