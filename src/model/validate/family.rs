//! The family half of the validation pass: what a family reads and refuses. The head size and
//! the rotated dimensions, RoPE scaling (none, linear and YaRN applied, anything else refused),
//! and the refusal of every `ARCH.*` key and every tensor the family does not read,
//! each named with what it would mean.

use candle_core::quantized::gguf_file::Value;

use super::super::arch::{yarn_mscale, RopeScaling};
use super::super::families::Engine;
use super::{show, Meta, MAX_CONTEXT, MAX_HIDDEN};

impl Meta<'_> {
    /// The head size: `attention.key_length` (hidden / heads when absent), which
    /// `attention.value_length` must equal, and the rotated dimensions (0: all):
    /// `rope.dimension_count` must equal the head size unless the family has partial rotary (a
    /// value width of its own or an unsupported partial rotary is refused, not ignored).
    pub(super) fn head_dim(&mut self, hidden: u64, heads: u64) -> Option<(u64, usize)> {
        let key = self.key("attention.key_length");
        let d = self.int(&key, 2..=MAX_HIDDEN, Some(hidden / heads))?;
        if d % 2 != 0 {
            self.problem(format!("metadata key {key}"), d, "an even head size");
            return None;
        }
        let key = self.key("attention.value_length");
        if let Some(n) = self.int(&key, 1..=MAX_HIDDEN, Some(d)) {
            if n != d {
                self.problem(
                    format!("metadata key {key}"),
                    n,
                    &format!("{d}, the head size (a value width of its own is not implemented)"),
                );
            }
        }
        let key = self.key("rope.dimension_count");
        let rot = self.int(&key, 2..=d, Some(d))?;
        let partial = self.family.partial_rotary && rot % 2 == 0;
        if rot != d && !partial {
            self.problem(
                format!("metadata key {key}"),
                rot,
                &format!("{d}, the head size (partial rotary is not implemented for this family)"),
            );
            return None;
        }
        Some((d, if rot == d { 0 } else { rot as usize }))
    }

    /// `rope.scaling.type` (or the older `rope.scale_linear`): none, linear and YaRN (llama
    /// engine, not with phi3's LongRoPE) are applied, anything else refused by name.
    /// `rope.scaling.attn_factor` scales cos and sin under YaRN and LongRoPE; elsewhere a value
    /// other than 1 is refused, not ignored.
    pub(super) fn rope_scaling(&mut self, context: usize) -> Option<RopeScaling> {
        let key = self.key("rope.scaling.type");
        let kind = match self.g.get(&key) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                self.problem(
                    format!("metadata key {key}"),
                    show(v),
                    "a string such as linear",
                );
                return None;
            }
        };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let factor_key = self.key("rope.scaling.factor");
        let yarn_here = !self.family.long_rope && self.family.engine == Engine::Llama;
        let scaling = match kind.as_deref() {
            None => {
                let legacy = self.key("rope.scale_linear");
                if self.g.get(&legacy).is_none() {
                    return self.attn_factor_unused(RopeScaling::None);
                }
                let f = self.float(&legacy, 1.0, positive, "a finite number above 0")?;
                match f == 1.0 {
                    true => RopeScaling::None,
                    false => RopeScaling::Linear { factor: f },
                }
            }
            Some("none") => RopeScaling::None,
            Some("linear") => {
                let f = self.float(&factor_key, 1.0, positive, "a finite number above 0")?;
                RopeScaling::Linear { factor: f }
            }
            Some("yarn") if yarn_here => return self.yarn(context),
            Some(other) => {
                let expected = match yarn_here {
                    true => "none, linear or yarn",
                    false => "none or linear",
                };
                self.problem(
                    format!("metadata key {key}"),
                    format!("{other:?}"),
                    &format!(
                        "{expected} (other RoPE scaling is not implemented for {}; positions \
                         would be rotated wrong)",
                        self.arch
                    ),
                );
                return None;
            }
        };
        self.attn_factor_unused(scaling)
    }

    /// YaRN as llama.cpp reads it for these families: `rope.scaling.factor`,
    /// `rope.scaling.original_context_length` (the context when absent) and
    /// `rope.scaling.attn_factor`; β 32 and 1, as llama.cpp, which reads no key for them here.
    fn yarn(&mut self, context: usize) -> Option<RopeScaling> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let factor_key = self.key("rope.scaling.factor");
        let factor = self.float(&factor_key, 1.0, positive, "a finite number above 0")?;
        let key = self.key("rope.scaling.original_context_length");
        let original = self.int(&key, 1..=MAX_CONTEXT, Some(context as u64))?;
        let key = self.key("rope.scaling.attn_factor");
        let attn = self.float(&key, 1.0, positive, "a finite number above 0")?;
        Some(RopeScaling::Yarn {
            factor,
            original_context: original as f64,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale: attn * yarn_mscale(factor),
        })
    }

    /// Outside YaRN and LongRoPE, `rope.scaling.attn_factor` must be absent or 1: the engine
    /// does not scale cos and sin there.
    fn attn_factor_unused(&mut self, scaling: RopeScaling) -> Option<RopeScaling> {
        let key = self.key("rope.scaling.attn_factor");
        if self.family.long_rope || self.g.get(&key).is_none() {
            return Some(scaling);
        }
        let f = self.float(&key, 1.0, |x| x.is_finite(), "a finite number")?;
        if f != 1.0 {
            self.problem(
                format!("metadata key {key}"),
                f,
                "1 (a cos/sin scale is applied with yarn scaling or LongRoPE only)",
            );
            return None;
        }
        Some(scaling)
    }

    /// Every `ARCH.*` key the family does not read: it may change the computation.
    pub(super) fn unknown_keys(&mut self) {
        let prefix = format!("{}.", self.arch);
        let mut unknown: Vec<String> = self
            .g
            .content
            .metadata
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|k| !self.family.reads(k))
            .map(str::to_string)
            .collect();
        unknown.sort();
        for k in unknown {
            self.problem(
                format!("metadata key {}{k}", prefix),
                "a key the family does not read",
                &format!(
                    "no such key: {} would be ignored, and it may change the computation",
                    self.arch
                ),
            );
        }
    }

    /// Every tensor the family does not read, named with what it would mean.
    pub(super) fn unused(&mut self) {
        let mut extra: Vec<&String> = self
            .g
            .content
            .tensor_infos
            .keys()
            .filter(|k| !self.used.contains(*k))
            .collect();
        extra.sort();
        let extra: Vec<String> = extra.into_iter().cloned().collect();
        for name in extra {
            let meaning = tensor_meaning(&name);
            self.problem(
                format!("tensor {name}"),
                "a tensor the family does not read",
                &format!("no such tensor for {} ({meaning})", self.arch),
            );
        }
    }
}

/// What a tensor a family does not read would mean, for the refusal.
fn tensor_meaning(name: &str) -> &'static str {
    let part = name
        .strip_prefix("blk.")
        .map_or(name, |rest| rest.split_once('.').map_or(rest, |(_, p)| p));
    match part {
        "rope_freqs.weight" => "Llama-3 RoPE scaling frequency factors",
        "attn_q_norm.weight" | "attn_k_norm.weight" => "per-head q/k RMSNorm",
        "attn_q.bias" | "attn_k.bias" | "attn_v.bias" => "Q/K/V projection bias",
        "attn_qkv.weight" => "a fused QKV projection",
        "ffn_gate_inp.weight" => "a mixture-of-experts router",
        "rope_factors_long.weight" | "rope_factors_short.weight" => "LongRoPE frequency factors",
        "attn_output.bias" | "ffn_down.bias" | "ffn_up.bias" => "a projection bias",
        _ => "unknown to this family; running without it would compute something else",
    }
}
