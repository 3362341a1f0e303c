//! The `llama` family: Llama 2 and 3, SmolLM2, Mistral 7B, on the llama engine with
//! interleaved RoPE pairs; Llama 3's `rope_freqs.weight` divides the frequencies.

use super::{Engine, Family};

/// Llama 3's per-frequency RoPE divisors in GGUF.
pub(crate) const ROPE_FREQS: &str = "rope_freqs.weight";

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "llama",
    hf: &["llama", "mistral"],
    engine: Engine::Llama,
    qkv_bias: false,
    qk_norm: false,
    rope_interleaved: true,
    rope_freqs: true,
    nope_every: 0,
    fused: false,
    partial_rotary: false,
    long_rope: false,
    config_json_refused: None,
    keys: &[],
    about: "Llama 2/3 (Llama-3 rope_freqs), SmolLM2, Mistral 7B; linear or YaRN RoPE scaling; \
            DeepSeek-style nextn MTP",
};
