//! The registry of model families: one entry per family with its names (GGUF
//! `general.architecture`, `config.json` `model_type`), the engine that runs it, what it adds to
//! the llama block, and the GGUF hyper-parameter keys it reads. The loader, the validator,
//! `inspect` and the manifest's download check ask here, never compare architecture strings of
//! their own. A key under `ARCH.` that the family does not read is refused by name: it may
//! change the computation (see [`Family::keys`]).

/// The forward that runs a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// [`super::llama::Llama`]: pre-norm attention + SwiGLU blocks, options below.
    Llama,
    /// [`super::gemma::Gemma`]: four norms a layer, GELU, sliding-window layers, soft-caps.
    Gemma,
}

/// One supported family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// `general.architecture` in GGUF, the key prefix of its metadata.
    pub gguf: &'static str,
    /// `model_type` values of a Hugging Face `config.json`.
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
    /// Phi-3's layout and rules: fused `attn_qkv` and gate/up in `ffn_up`, partial rotary,
    /// LongRoPE factor tensors, `attention.sliding_window` read but not applied (llama.cpp
    /// 0c1e57098 disables Phi's sliding window, so its outputs are the reference).
    pub phi3: bool,
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

/// Every family this engine runs.
pub const FAMILIES: &[Family] = &[
    Family {
        gguf: "llama",
        hf: &["llama", "mistral"],
        engine: Engine::Llama,
        qkv_bias: false,
        qk_norm: false,
        rope_interleaved: true,
        rope_freqs: true,
        nope_every: 0,
        phi3: false,
        keys: &[],
        about: "Llama 2/3 (Llama-3 rope_freqs), SmolLM2, Mistral 7B; linear or YaRN RoPE scaling; \
                DeepSeek-style nextn MTP",
    },
    Family {
        gguf: "qwen2",
        hf: &["qwen2"],
        engine: Engine::Llama,
        qkv_bias: true,
        qk_norm: false,
        rope_interleaved: false,
        rope_freqs: false,
        nope_every: 0,
        phi3: false,
        keys: &[],
        about: "Qwen2, Qwen2.5: llama block with Q/K/V bias, NEOX RoPE; linear or YaRN scaling",
    },
    Family {
        gguf: "qwen3",
        hf: &["qwen3"],
        engine: Engine::Llama,
        qkv_bias: false,
        qk_norm: true,
        rope_interleaved: false,
        rope_freqs: false,
        nope_every: 0,
        phi3: false,
        keys: &[],
        about:
            "Qwen3 dense: llama block with per-head q/k RMSNorm, NEOX RoPE; linear or YaRN scaling",
    },
    Family {
        gguf: "phi3",
        hf: &["phi3"],
        engine: Engine::Llama,
        qkv_bias: false,
        qk_norm: false,
        rope_interleaved: false,
        rope_freqs: false,
        nope_every: 0,
        phi3: true,
        keys: &["attention.sliding_window"],
        about: "Phi-3, Phi-4-mini: fused qkv and gate/up, partial rotary, LongRoPE; sliding \
                window not applied (as llama.cpp)",
    },
    Family {
        gguf: "smollm3",
        hf: &["smollm3"],
        engine: Engine::Llama,
        qkv_bias: false,
        qk_norm: false,
        rope_interleaved: true,
        rope_freqs: false,
        nope_every: 4,
        phi3: false,
        keys: &[],
        about: "SmolLM3: llama block, no RoPE on every 4th layer (NoPE)",
    },
    Family {
        gguf: "gemma3",
        hf: &["gemma3_text", "gemma3"],
        engine: Engine::Gemma,
        qkv_bias: false,
        qk_norm: true,
        rope_interleaved: false,
        rope_freqs: false,
        nope_every: 0,
        phi3: false,
        keys: &[
            "attention.sliding_window",
            "attention.sliding_window_pattern",
            "rope.freq_base_swa",
            "attention.query_pre_attn_scalar",
            "final_logit_softcapping",
            "attn_logit_softcapping",
        ],
        about: "Gemma 3 text: sliding-window layers, GELU, four norms a layer, soft-caps; linear \
                scaling of the global layers",
    },
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
