//! The `smollm3` family: the llama block with no RoPE on every 4th layer (NoPE), and the
//! check that a `config.json`'s NoPE layers follow that pattern.

use std::path::Path;

use super::{Engine, Family};
use crate::error::ModelError;

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "smollm3",
    hf: &["smollm3"],
    engine: Engine::Llama,
    qkv_bias: false,
    qk_norm: false,
    rope_interleaved: true,
    rope_freqs: false,
    nope_every: 4,
    fused: false,
    partial_rotary: false,
    long_rope: false,
    config_json_refused: None,
    keys: &[],
    about: "SmolLM3: llama block, no RoPE on every 4th layer (NoPE)",
};

/// SmolLM3's NoPE layers from a `config.json`: `no_rope_layers` (1 = rotates) must follow the
/// every-`no_rope_layer_interval`-th pattern llama.cpp applies, else the file is refused.
pub(crate) fn nope_from_hf(
    path: &Path,
    family: &Family,
    layers: usize,
    no_rope_layers: Option<&[u8]>,
    interval: Option<usize>,
) -> Result<usize, ModelError> {
    if family.nope_every == 0 {
        return Ok(0);
    }
    let n = interval.unwrap_or(family.nope_every);
    let pattern: Vec<u8> = (0..layers)
        .map(|l| u8::from(!(l + 1).is_multiple_of(n.max(1))))
        .collect();
    match no_rope_layers {
        Some(given) if given != pattern.as_slice() || n != family.nope_every => {
            Err(ModelError::Invalid {
                path: path.to_path_buf(),
                detail: format!(
                    "no_rope_layers / no_rope_layer_interval differ from every {}th layer without \
                 RoPE, the only pattern implemented (as in llama.cpp)",
                    family.nope_every
                ),
            })
        }
        _ => Ok(family.nope_every),
    }
}
