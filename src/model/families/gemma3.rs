//! The `gemma3` family: Gemma 3 text on its own engine ([`crate::model::gemma`]). Its tensor
//! table (the loader, validator and synthetic writer read it), its GGUF keys and tensors as the
//! validation pass reads them, and its `config.json`.

use std::path::Path;

use serde::Deserialize;

use super::super::arch::{gemma_pattern, GemmaConfig, LlamaConfig, RopeScaling};
use super::super::validate::{Meta, MAX_CONTEXT, MAX_LAYERS};
use super::super::weights::Names;
use super::{Engine, Family};
use crate::error::ModelError;

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "gemma3",
    hf: &["gemma3_text", "gemma3"],
    engine: Engine::Gemma,
    qkv_bias: false,
    qk_norm: true,
    rope_interleaved: false,
    rope_freqs: false,
    nope_every: 0,
    fused: false,
    partial_rotary: false,
    long_rope: false,
    config_json_refused: None,
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
};

/// Every tensor of a Gemma 3 layer: our part name, its GGUF name and its Hugging Face name
/// (the one table the loader, the validator and the synthetic writer read).
pub(crate) const PARTS: [(&str, &str, &str); 13] = [
    ("q", "attn_q", "self_attn.q_proj"),
    ("k", "attn_k", "self_attn.k_proj"),
    ("v", "attn_v", "self_attn.v_proj"),
    ("o", "attn_output", "self_attn.o_proj"),
    ("q_norm", "attn_q_norm", "self_attn.q_norm"),
    ("k_norm", "attn_k_norm", "self_attn.k_norm"),
    ("gate", "ffn_gate", "mlp.gate_proj"),
    ("up", "ffn_up", "mlp.up_proj"),
    ("down", "ffn_down", "mlp.down_proj"),
    ("attn_norm", "attn_norm", "input_layernorm"),
    (
        "post_attn_norm",
        "post_attention_norm",
        "post_attention_layernorm",
    ),
    ("ffn_norm", "ffn_norm", "pre_feedforward_layernorm"),
    (
        "post_ffn_norm",
        "post_ffw_norm",
        "post_feedforward_layernorm",
    ),
];

/// The file name of a layer's `part` in each format.
pub(crate) fn layer_name(names: &Names, i: usize, part: &str) -> String {
    let (_, gguf, hf) = PARTS
        .iter()
        .find(|p| p.0 == part)
        .unwrap_or_else(|| unreachable!("unknown Gemma layer part {part}; this is a bug"));
    match names {
        Names::Gguf => format!("blk.{i}.{gguf}.weight"),
        Names::Hf => format!("model.layers.{i}.{hf}.weight"),
    }
}

/// The shape each part of a layer has for `cfg` (q, k, v, o, norms, MLP).
pub(crate) fn layer_shape(cfg: &LlamaConfig, part: &str) -> Vec<usize> {
    let (h, f, d) = (cfg.hidden, cfg.ffn, cfg.head_dim);
    let (q, kv) = (cfg.heads * d, cfg.kv_heads * d);
    match part {
        "q" => vec![q, h],
        "k" | "v" => vec![kv, h],
        "o" => vec![h, q],
        "q_norm" | "k_norm" => vec![d],
        "gate" | "up" => vec![f, h],
        "down" => vec![h, f],
        _ => vec![h],
    }
}

impl Meta<'_> {
    /// Gemma's additions to the llama-family metadata. llama.cpp writes no key for the layer
    /// pattern, the local RoPE base or the score scale and uses 6, 10 000 and
    /// [`gemma_score_scalar`]; so do we when the keys are absent.
    pub(in crate::model) fn gemma(&mut self, base: LlamaConfig) -> Option<GemmaConfig> {
        let window = self.int(&self.key("attention.sliding_window"), 1..=MAX_CONTEXT, None);
        let pattern = self.int(
            &self.key("attention.sliding_window_pattern"),
            1..=MAX_LAYERS,
            Some(6),
        );
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let local = self.float(
            &self.key("rope.freq_base_swa"),
            10_000.0,
            positive,
            "a finite number above 0, such as 10000",
        );
        let scalar = self.float(
            &self.key("attention.query_pre_attn_scalar"),
            gemma_score_scalar(&base),
            positive,
            "a finite number above 0, such as 256",
        );
        let cap = |m: &mut Self, k: &str| {
            let key = m.key(k);
            m.g.get(&key)?;
            m.float(&key, 0.0, positive, "a finite number above 0, such as 30")
        };
        let final_softcap = cap(self, "final_logit_softcapping");
        let attn_softcap = cap(self, "attn_logit_softcapping");
        Some(GemmaConfig {
            sliding_window: window? as usize,
            global: gemma_pattern(base.layers, pattern? as usize),
            rope_local_theta: local?,
            query_pre_attn_scalar: scalar?,
            final_softcap,
            attn_softcap,
            base,
        })
    }

    /// Every tensor a Gemma 3 layer needs, with its exact shape (13 per layer, tied head).
    pub(in crate::model) fn gemma_tensors(&mut self, cfg: &LlamaConfig) {
        let present = self.highest_layer().map_or(0, |l| l + 1);
        if present > cfg.layers || cfg.layers > self.g.content.tensor_infos.len() / 13 {
            let key = self.key("block_count");
            self.problem(
                format!("metadata key {key}"),
                cfg.layers,
                &format!("{present}, the layers whose tensors the file holds"),
            );
            return;
        }
        let (h, v) = (cfg.hidden, cfg.vocab);
        let n = Names::Gguf;
        self.shape(n.embed(), &[v, h], true);
        self.shape(n.head(), &[v, h], false);
        self.shape(n.norm(), &[h], true);
        for i in 0..cfg.layers {
            for (part, _, _) in PARTS {
                let name = layer_name(&n, i, part);
                self.shape(&name, &layer_shape(cfg, part), true);
            }
        }
    }
}

/// Gemma 3's score scale when the file has no `attention.query_pre_attn_scalar`: llama.cpp's
/// rule, hidden / heads for the 62-layer (27B) model and the head size otherwise.
fn gemma_score_scalar(base: &LlamaConfig) -> f64 {
    match base.layers {
        62 => (base.hidden / base.heads) as f64,
        _ => base.head_dim as f64,
    }
}

impl GemmaConfig {
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
        let context = hf.max_position_embeddings.unwrap_or(32_768);
        let null = serde_json::Value::Null;
        let rope_scaling = RopeScaling::from_hf(hf.rope_scaling.as_ref().unwrap_or(&null), context)
            .map_err(bad)?;
        if !matches!(rope_scaling, RopeScaling::None | RopeScaling::Linear { .. }) {
            return Err(bad(format!(
                "rope_scaling {rope_scaling:?} is not supported for Gemma 3 (linear is, on its \
                 global layers)"
            )));
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
            arch: "gemma3".into(),
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
            context_length: context,
            qkv_bias: false,
            qk_norm: true,
            rope_scaling,
            nope_every: 0,
            rope_dims: 0,
            fused: false,
            long_rope: None,
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
