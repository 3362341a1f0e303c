//! The `phi3` family: Phi-3 and Phi-4-mini. Fused `attn_qkv` and gate/up tensors, partial
//! rotary, and LongRoPE: its factor tensors and how llama.cpp picks the set, read here.

use super::super::arch::{LongRope, LongRopeSet};
use super::super::llama::MAX_ROPE_POSITIONS;
use super::super::validate::{Meta, MAX_CONTEXT};
use super::{Engine, Family};

/// LongRoPE's divisors for contexts past the original one, and within it.
pub(crate) const ROPE_LONG: &str = "rope_factors_long.weight";
pub(crate) const ROPE_SHORT: &str = "rope_factors_short.weight";

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "phi3",
    hf: &["phi3"],
    engine: Engine::Llama,
    qkv_bias: false,
    qk_norm: false,
    rope_interleaved: false,
    rope_freqs: false,
    nope_every: 0,
    fused: true,
    partial_rotary: true,
    long_rope: true,
    config_json_refused: Some(
        "phi3 loads from GGUF only for now (its config.json layout is not read); convert it \
         with llama.cpp's convert_hf_to_gguf.py",
    ),
    keys: &["attention.sliding_window"],
    // llama.cpp 0c1e57098 disables Phi's sliding window, so its outputs are the reference:
    // `attention.sliding_window` is read and not applied.
    about: "Phi-3, Phi-4-mini: fused qkv and gate/up, partial rotary, LongRoPE; sliding \
            window not applied (as llama.cpp)",
};

impl Meta<'_> {
    /// phi3's LongRoPE: the factor tensors (both or neither), `rope.scaling.attn_factor` and
    /// `rope.scaling.original_context_length`; long factors when the engine's RoPE tables
    /// (the context, at most [`MAX_ROPE_POSITIONS`]) reach past the original context.
    pub(in crate::model) fn long_rope(&mut self, context: usize) -> Option<Option<LongRope>> {
        if !self.family.long_rope {
            return Some(None);
        }
        let has = |n: &str| self.g.content.tensor_infos.contains_key(n);
        let (long, short) = (has(ROPE_LONG), has(ROPE_SHORT));
        if long != short {
            let missing = if long { ROPE_SHORT } else { ROPE_LONG };
            self.problem(
                format!("tensor {missing}"),
                "nothing (it is missing)",
                "both LongRoPE factor tensors or neither",
            );
            return None;
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let attn = self.key("rope.scaling.attn_factor");
        let attn_factor = self.float(&attn, 1.0, positive, "a finite number above 0")?;
        if !long {
            return Some((attn_factor != 1.0).then_some(LongRope {
                original_context: context,
                factors: LongRopeSet::Short,
                attn_factor,
            }));
        }
        let key = self.key("rope.scaling.original_context_length");
        let original = self.int(&key, 1..=MAX_CONTEXT, Some(context as u64))? as usize;
        let tables = context.clamp(1, MAX_ROPE_POSITIONS);
        Some(Some(LongRope {
            original_context: original,
            factors: if tables > original {
                LongRopeSet::Long
            } else {
                LongRopeSet::Short
            },
            attn_factor,
        }))
    }
}
