//! The `qwen3` family: Qwen3 dense, the llama block with per-head q/k RMSNorm before RoPE.

use super::{Engine, Family};

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "qwen3",
    hf: &["qwen3"],
    engine: Engine::Llama,
    qkv_bias: false,
    qk_norm: true,
    rope_interleaved: false,
    rope_freqs: false,
    nope_every: 0,
    fused: false,
    partial_rotary: false,
    long_rope: false,
    config_json_refused: None,
    keys: &[],
    about: "Qwen3 dense: llama block with per-head q/k RMSNorm, NEOX RoPE; linear or YaRN scaling",
};
