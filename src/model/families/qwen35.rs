//! The `qwen35` family: Qwen3.5 dense, a hybrid of Gated DeltaNet layers (a causal conv1d and a
//! recurrent state per head, no KV cache) and gated full-attention layers (every
//! `full_attention_interval`-th), on its own engine ([`crate::model::qwen35`]). Its keys and
//! tensors as llama.cpp's `qwen35` loader reads them (llama.cpp 0c1e57098,
//! `src/models/qwen35.cpp`), checked by the validation pass.

use serde::{Deserialize, Serialize};

use super::super::arch::LlamaConfig;
use super::super::validate::{Meta, MAX_HIDDEN, MAX_LAYERS};
use super::super::weights::Names;
use super::{Engine, Family};

/// The registry entry.
pub(crate) const FAMILY: Family = Family {
    gguf: "qwen35",
    hf: &["qwen3_5", "qwen3_5_text"],
    engine: Engine::Qwen35,
    qkv_bias: false,
    qk_norm: true,
    rope_interleaved: false,
    rope_freqs: false,
    nope_every: 0,
    fused: false,
    partial_rotary: true,
    long_rope: false,
    config_json_refused: Some(
        "a Qwen3.5 config.json is not read (the family loads from GGUF only); convert it with \
         llama.cpp's convert_hf_to_gguf.py",
    ),
    keys: &[
        "rope.dimension_sections",
        "ssm.conv_kernel",
        "ssm.inner_size",
        "ssm.state_size",
        "ssm.time_step_rank",
        "ssm.group_count",
        "full_attention_interval",
        "attention.recurrent_layers",
    ],
    about: "Qwen3.5 dense hybrid: Gated DeltaNet layers (conv1d + recurrent state) and gated \
            attention layers with q/k norm and partial interleaved M-RoPE",
};

/// Hyper-parameters of a Qwen3.5 model: the attention layers' shape in `base`, and the Gated
/// DeltaNet layers' own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Qwen35Config {
    /// Shape, norms' epsilon, RoPE base and rotated dimensions of the attention layers.
    pub base: LlamaConfig,
    /// `recurrent[i]`: layer i is a Gated DeltaNet layer (else full attention).
    pub recurrent: Vec<bool>,
    /// Width of the causal conv1d (`ssm.conv_kernel`).
    pub conv_kernel: usize,
    /// Size of a key and of a value head (`ssm.state_size`).
    pub state: usize,
    /// Key heads (`ssm.group_count`).
    pub k_heads: usize,
    /// Value heads (`ssm.time_step_rank`); value head h reads key head h mod `k_heads`.
    pub v_heads: usize,
    /// M-RoPE sections (`rope.dimension_sections`): which position each rotated pair takes.
    pub sections: [usize; 4],
}

impl Qwen35Config {
    /// Channels through the conv1d: q and k of every key head, v of every value head.
    pub fn conv_channels(&self) -> usize {
        2 * self.k_heads * self.state + self.v_heads * self.state
    }

    /// Width of the values (and of the output gate `z`).
    pub fn value_dim(&self) -> usize {
        self.v_heads * self.state
    }

    /// Attention layers (each with a KV cache).
    pub fn attention_layers(&self) -> usize {
        self.recurrent.iter().filter(|r| !**r).count()
    }

    /// f32 values a sequence keeps per recurrent layer: the conv window (kernel − 1 rows of
    /// every channel) and the state (a `state × state` matrix per value head).
    pub fn state_floats_per_layer(&self) -> (usize, usize) {
        (
            (self.conv_kernel - 1) * self.conv_channels(),
            self.v_heads * self.state * self.state,
        )
    }

    /// Bytes of recurrent state one sequence holds, every recurrent layer: fixed, whatever
    /// its length.
    pub fn state_bytes(&self) -> usize {
        let (conv, ssm) = self.state_floats_per_layer();
        let layers = self.recurrent.iter().filter(|r| **r).count();
        layers * (conv + ssm) * 4
    }

    /// Whether rotated pair `k` turns with the token's position: interleaved M-RoPE as
    /// llama.cpp's `ggml_mrope_cache_init` applies it to text, whose t, h and w positions are
    /// the token's and whose fourth is 0 (a pair that takes the fourth does not turn).
    pub fn pair_turns(&self, k: usize) -> bool {
        let s = self.sections;
        let total: usize = s.iter().sum();
        let sector = k % total.max(1);
        (sector.is_multiple_of(3) && sector < 3 * s[0])
            || (sector % 3 == 1 && sector < 3 * s[1])
            || (sector % 3 == 2 && sector < 3 * s[2])
    }
}

/// The GGUF name of a tensor of layer `i`.
pub(crate) fn name(i: usize, part: &str) -> String {
    format!("blk.{i}.{part}")
}

/// The multi-token-prediction block's tensors (block `cfg.base.layers`, after the regular
/// layers): a full-attention layer and the `nextn.*` parts, with shape and whether required
/// (the embedding, head and head norm default to the main model's).
pub(crate) fn mtp_tensors(cfg: &Qwen35Config) -> Vec<(String, Vec<usize>, bool)> {
    let b = &cfg.base;
    let (i, h, v) = (b.layers, b.hidden, b.vocab);
    let mut out: Vec<(String, Vec<usize>, bool)> = attention_layer(cfg)
        .into_iter()
        .map(|(p, s)| (name(i, p), s, true))
        .collect();
    for (part, dims, required) in [
        ("eh_proj", vec![h, 2 * h], true),
        ("enorm", vec![h], true),
        ("hnorm", vec![h], true),
        ("shared_head_norm", vec![h], false),
        ("embed_tokens", vec![v, h], false),
        ("shared_head_head", vec![v, h], false),
    ] {
        out.push((name(i, &format!("nextn.{part}.weight")), dims, required));
    }
    out
}

/// The tensors of a gated attention layer: norms, q (with its gate), k, v, output, q/k norms
/// and the MLP (part names under `blk.i.`).
fn attention_layer(cfg: &Qwen35Config) -> Vec<(&'static str, Vec<usize>)> {
    let b = &cfg.base;
    let (h, f, d) = (b.hidden, b.ffn, b.head_dim);
    let kv = b.kv_heads * d;
    vec![
        ("attn_norm.weight", vec![h]),
        ("post_attention_norm.weight", vec![h]),
        ("ffn_gate.weight", vec![f, h]),
        ("ffn_up.weight", vec![f, h]),
        ("ffn_down.weight", vec![h, f]),
        ("attn_q.weight", vec![2 * b.heads * d, h]),
        ("attn_k.weight", vec![kv, h]),
        ("attn_v.weight", vec![kv, h]),
        ("attn_output.weight", vec![h, b.heads * d]),
        ("attn_q_norm.weight", vec![d]),
        ("attn_k_norm.weight", vec![d]),
    ]
}

/// Every tensor of layer `i` with its shape (candle's order, rows first): the norms and MLP
/// every layer has, then the attention or the Gated DeltaNet tensors.
pub(crate) fn layer_tensors(cfg: &Qwen35Config, i: usize) -> Vec<(String, Vec<usize>)> {
    if !cfg.recurrent[i] {
        return attention_layer(cfg)
            .into_iter()
            .map(|(p, s)| (name(i, p), s))
            .collect();
    }
    let b = &cfg.base;
    let (h, f) = (b.hidden, b.ffn);
    let mut out: Vec<(&str, Vec<usize>)> = vec![
        ("attn_norm.weight", vec![h]),
        ("post_attention_norm.weight", vec![h]),
        ("ffn_gate.weight", vec![f, h]),
        ("ffn_up.weight", vec![f, h]),
        ("ffn_down.weight", vec![h, f]),
    ];
    {
        let (hv, s) = (cfg.v_heads, cfg.state);
        out.extend([
            ("attn_qkv.weight", vec![cfg.conv_channels(), h]),
            ("attn_gate.weight", vec![cfg.value_dim(), h]),
            (
                "ssm_conv1d.weight",
                vec![cfg.conv_channels(), cfg.conv_kernel],
            ),
            ("ssm_dt.bias", vec![hv]),
            ("ssm_a", vec![hv]),
            ("ssm_beta.weight", vec![hv, h]),
            ("ssm_alpha.weight", vec![hv, h]),
            ("ssm_norm.weight", vec![s]),
            ("ssm_out.weight", vec![h, cfg.value_dim()]),
        ]);
    }
    out.into_iter().map(|(p, s)| (name(i, p), s)).collect()
}

impl Meta<'_> {
    /// Qwen3.5's additions to the llama-family metadata, as llama.cpp reads them: the `ssm.*`
    /// sizes (required), the M-RoPE sections (required), and which layers are recurrent
    /// (`attention.recurrent_layers`, else every layer but each `full_attention_interval`-th,
    /// 4 when absent). One multi-token-prediction block at most, as llama.cpp runs.
    pub(in crate::model) fn qwen35(&mut self, base: LlamaConfig) -> Option<Qwen35Config> {
        let conv = self.int(&self.key("ssm.conv_kernel"), 2..=64, None);
        let inner = self.int(&self.key("ssm.inner_size"), 1..=MAX_HIDDEN, None);
        let state = self.int(&self.key("ssm.state_size"), 1..=4096, None);
        let v_heads = self.int(&self.key("ssm.time_step_rank"), 1..=MAX_HIDDEN, None);
        let k_heads = self.int(&self.key("ssm.group_count"), 1..=MAX_HIDDEN, None);
        let sections = self.sections(&base);
        let recurrent = self.recurrent_layers(base.layers);
        if base.nextn > 1 {
            let key = self.key("nextn_predict_layers");
            self.problem(
                format!("metadata key {key}"),
                base.nextn,
                "0 or 1: one multi-token-prediction block (as llama.cpp's qwen35 runs)",
            );
        }
        let (conv, inner, state, v_heads, k_heads) = (conv?, inner?, state?, v_heads?, k_heads?);
        if inner != v_heads * state {
            let key = self.key("ssm.inner_size");
            let want = format!("{}, time_step_rank × state_size", v_heads * state);
            self.problem(format!("metadata key {key}"), inner, &want);
        }
        if v_heads % k_heads != 0 {
            let key = self.key("ssm.group_count");
            let want = format!("a divisor of the {v_heads} value heads (time_step_rank)");
            self.problem(format!("metadata key {key}"), k_heads, &want);
        }
        Some(Qwen35Config {
            base,
            recurrent: recurrent?,
            conv_kernel: conv as usize,
            state: state as usize,
            k_heads: k_heads as usize,
            v_heads: v_heads as usize,
            sections: sections?,
        })
    }

    /// `rope.dimension_sections`: four counts of rotated pairs, at most the rotated pairs in
    /// all.
    fn sections(&mut self, base: &LlamaConfig) -> Option<[usize; 4]> {
        let key = self.key("rope.dimension_sections");
        let pairs = base.rot() / 2;
        let expected = format!("4 counts of rotated pairs summing to 1 to {pairs}");
        let values = match self.g.get(&key) {
            Some(candle_core::quantized::gguf_file::Value::Array(a)) => a
                .iter()
                .map(|v| super::super::validate::as_u64(v).map(|n| n as usize))
                .collect::<Option<Vec<usize>>>(),
            _ => None,
        };
        let found = self
            .g
            .get(&key)
            .map_or("nothing (the key is missing)".into(), |v| {
                super::super::validate::show(v)
            });
        match values {
            Some(v) if v.len() == 4 && (1..=pairs).contains(&v.iter().sum()) => {
                Some([v[0], v[1], v[2], v[3]])
            }
            _ => {
                self.problem(format!("metadata key {key}"), found, &expected);
                None
            }
        }
    }

    /// Which layers are Gated DeltaNet layers: `attention.recurrent_layers` (one flag a
    /// layer) or every layer but each `full_attention_interval`-th.
    fn recurrent_layers(&mut self, layers: usize) -> Option<Vec<bool>> {
        let key = self.key("attention.recurrent_layers");
        if let Some(v) = self.g.get(&key) {
            let flags = match v {
                candle_core::quantized::gguf_file::Value::Array(a) if a.len() == layers => a
                    .iter()
                    .map(|x| match x {
                        candle_core::quantized::gguf_file::Value::Bool(b) => Some(*b),
                        other => super::super::validate::as_u64(other).map(|n| n != 0),
                    })
                    .collect::<Option<Vec<bool>>>(),
                _ => None,
            };
            if flags.is_none() {
                let found = super::super::validate::show(v);
                let want = format!("{layers} flags, one a layer");
                self.problem(format!("metadata key {key}"), found, &want);
            }
            return flags;
        }
        let key = self.key("full_attention_interval");
        let n = self.int(&key, 1..=MAX_LAYERS, Some(4))? as usize;
        Some((0..layers).map(|i| !(i + 1).is_multiple_of(n)).collect())
    }

    /// Every tensor a Qwen3.5 layer needs, with its exact shape; no layer past `block_count`.
    pub(in crate::model) fn qwen35_tensors(&mut self, cfg: &Qwen35Config) {
        let b = &cfg.base;
        let present = self.highest_layer().map_or(0, |l| l + 1);
        if present > b.layers + b.nextn {
            let key = self.key("block_count");
            let want = format!("{present}, the layers whose tensors the file holds");
            self.problem(format!("metadata key {key}"), b.layers, &want);
            return;
        }
        let n = Names::Gguf;
        self.shape(n.embed(), &[b.vocab, b.hidden], true);
        self.shape(n.head(), &[b.vocab, b.hidden], false);
        self.shape(n.norm(), &[b.hidden], true);
        for i in 0..b.layers {
            for (name, dims) in layer_tensors(cfg, i) {
                self.shape(&name, &dims, true);
            }
        }
        if b.nextn > 0 {
            for (name, dims, required) in mtp_tensors(cfg) {
                self.shape(&name, &dims, required);
            }
        }
    }
}
