//! The `qwen2` family: Qwen2 and Qwen2.5, the llama block with Q/K/V bias and RoPE on halves.

use super::{Engine, Family};

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "qwen2",
    hf: &["qwen2"],
    engine: Engine::Llama,
    qkv_bias: true,
    qk_norm: false,
    rope_interleaved: false,
    rope_freqs: false,
    nope_every: 0,
    fused: false,
    partial_rotary: false,
    long_rope: false,
    config_json_refused: None,
    keys: &[],
    about: "Qwen2, Qwen2.5: llama block with Q/K/V bias, NEOX RoPE; linear or YaRN scaling",
};
