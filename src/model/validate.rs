//! The second half of the validation pass, run on a GGUF whose layout [`super::layout`] has
//! checked and before anything is built from it: every hyper-parameter of a llama-family model
//! has the right type and lies in range (layers, heads dividing the shapes, epsilon and RoPE
//! base finite and positive, context length), every tensor the architecture needs is present
//! with exactly the shape its name implies, no layer beyond `block_count` hides in the file, and
//! the tokenizer's vocabulary and special ids fit the embedding. Problems are collected, not
//! stopped at, so `inspect` can list them all; each names the field or tensor, the value found
//! and what was expected.

use std::collections::HashSet;
use std::fmt;
use std::ops::RangeInclusive;

use candle_core::quantized::gguf_file::Value;

use super::arch::{GemmaConfig, LlamaConfig};
use super::families::Family;
use super::gguf::Gguf;
use super::weights::Names;

/// Largest hidden width accepted (GGUF and `config.json` alike).
pub(crate) const MAX_HIDDEN: u64 = 1 << 20;
/// Largest feed-forward width accepted.
pub(crate) const MAX_FFN: u64 = 1 << 22;
/// Most layers accepted.
pub(crate) const MAX_LAYERS: u64 = 1 << 12;
/// Longest context accepted, in tokens.
pub(crate) const MAX_CONTEXT: u64 = 1 << 24;
/// Shortest context accepted, in tokens: one prompt token and the answer's first.
pub(crate) const MIN_CONTEXT: u64 = 2;
/// Largest vocabulary accepted from a `config.json` (a GGUF's is its embedding's rows).
pub(crate) const MAX_VOCAB: u64 = 1 << 24;
/// Tensors every layer has (q, k, v, o, gate, up, down, two norms; 6 with phi3's fused ones).
const TENSORS_PER_LAYER: usize = 9;

use super::families::llama::ROPE_FREQS;
use super::families::phi3::{ROPE_LONG, ROPE_SHORT};
pub(crate) use crate::error::{Problem, Problems};

mod family;

/// The model's hyper-parameters when the file passes, else every problem found.
pub(crate) fn llama_config(g: &Gguf, family: &'static Family) -> Result<LlamaConfig, Vec<Problem>> {
    let mut m = Meta::new(g, family);
    let cfg = m.hyper_parameters();
    let Some(cfg) = cfg else {
        return Err(m.problems);
    };
    m.tensors(&cfg);
    m.unused();
    m.tokenizer(cfg.vocab as u64);
    if m.problems.is_empty() {
        Ok(cfg)
    } else {
        Err(m.problems)
    }
}

/// A Gemma 3 model's hyper-parameters when the file passes, else every problem found.
pub(crate) fn gemma_config(g: &Gguf, family: &'static Family) -> Result<GemmaConfig, Vec<Problem>> {
    let mut m = Meta::new(g, family);
    let Some(base) = m.hyper_parameters() else {
        return Err(m.problems);
    };
    let cfg = m.gemma(base);
    if let Some(cfg) = &cfg {
        m.gemma_tensors(&cfg.base);
        m.unused();
        m.tokenizer(cfg.base.vocab as u64);
    }
    match cfg {
        Some(cfg) if m.problems.is_empty() => Ok(cfg),
        _ => Err(m.problems),
    }
}

/// A Qwen3.5 model's hyper-parameters when the file passes, else every problem found.
pub(crate) fn qwen35_config(
    g: &Gguf,
    family: &'static Family,
) -> Result<super::families::qwen35::Qwen35Config, Vec<Problem>> {
    let mut m = Meta::new(g, family);
    let Some(base) = m.hyper_parameters() else {
        return Err(m.problems);
    };
    let cfg = m.qwen35(base);
    if let Some(cfg) = &cfg {
        m.qwen35_tensors(cfg);
        m.unused();
        m.tokenizer(cfg.base.vocab as u64);
    }
    match cfg {
        Some(cfg) if m.problems.is_empty() => Ok(cfg),
        _ => Err(m.problems),
    }
}

/// Reads metadata, recording a [`Problem`] for each value that is missing, mistyped or out of range.
pub(super) struct Meta<'a> {
    pub(super) g: &'a Gguf,
    pub(super) arch: &'static str,
    pub(super) family: &'static Family,
    problems: Vec<Problem>,
    /// Every tensor name the family reads, as the checks name them.
    used: HashSet<String>,
}

impl<'a> Meta<'a> {
    fn new(g: &'a Gguf, family: &'static Family) -> Self {
        Self {
            g,
            arch: family.gguf,
            family,
            problems: Vec::new(),
            used: HashSet::new(),
        }
    }

    pub(super) fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.arch)
    }

    pub(super) fn problem(
        &mut self,
        subject: impl Into<String>,
        found: impl fmt::Display,
        expected: &str,
    ) {
        self.problems.push(Problem::new(subject, found, expected));
    }

    /// An unsigned integer under `key`, in `range`; `default` when absent (a problem if `None`).
    pub(super) fn int(
        &mut self,
        key: &str,
        range: RangeInclusive<u64>,
        default: Option<u64>,
    ) -> Option<u64> {
        let expected = format!("an integer from {} to {}", range.start(), range.end());
        let subject = format!("metadata key {key}");
        let Some(v) = self.g.get(key) else {
            if default.is_none() {
                self.problem(subject, "nothing (the key is missing)", &expected);
            }
            return default;
        };
        match as_u64(v) {
            Some(x) if range.contains(&x) => Some(x),
            _ => {
                self.problem(subject, show(v), &expected);
                None
            }
        }
    }

    /// A float under `key` that `ok` accepts; `default` when absent.
    pub(super) fn float(
        &mut self,
        key: &str,
        default: f64,
        ok: fn(f64) -> bool,
        expected: &str,
    ) -> Option<f64> {
        let x = match self.g.get(key) {
            None => return Some(default),
            Some(Value::F32(x)) => f64::from(*x),
            Some(Value::F64(x)) => *x,
            Some(v) => {
                self.problem(format!("metadata key {key}"), show(v), expected);
                return None;
            }
        };
        if ok(x) {
            Some(x)
        } else {
            self.problem(format!("metadata key {key}"), x, expected);
            None
        }
    }

    fn hyper_parameters(&mut self) -> Option<LlamaConfig> {
        let hidden = self.int(&self.key("embedding_length"), 1..=MAX_HIDDEN, None);
        let ffn = self.int(&self.key("feed_forward_length"), 1..=MAX_FFN, None);
        let blocks = self.int(&self.key("block_count"), 1..=MAX_LAYERS, None);
        let nextn = self.nextn(blocks);
        let heads = self.int(
            &self.key("attention.head_count"),
            1..=hidden.unwrap_or(MAX_HIDDEN),
            None,
        );
        let kv_heads = self.int(
            &self.key("attention.head_count_kv"),
            1..=heads.unwrap_or(MAX_HIDDEN),
            heads,
        );
        let context = self.int(
            &self.key("context_length"),
            MIN_CONTEXT..=MAX_CONTEXT,
            Some(4096),
        );
        // Required, as llama.cpp requires it: a default here would be a guess (config.json's
        // own default, 1e-6, differs from the 1e-5 GGUF files usually carry).
        let eps_key = self.key("attention.layer_norm_rms_epsilon");
        if self.g.get(&eps_key).is_none() {
            self.problem(
                format!("metadata key {eps_key}"),
                "nothing (the key is missing)",
                "the RMSNorm epsilon, such as 1e-5 (llama.cpp refuses the file too)",
            );
        }
        let eps = self.float(
            &eps_key,
            1e-5,
            |x| x.is_finite() && x > 0.0 && x < 1.0,
            "a finite number above 0 and below 1, such as 1e-5",
        );
        let theta = self.float(
            &self.key("rope.freq_base"),
            10_000.0,
            |x| x.is_finite() && x > 0.0,
            "a finite number above 0, such as 10000",
        );
        let (hidden, heads, kv_heads) = (hidden?, heads?, kv_heads?);
        if heads % kv_heads != 0 {
            let key = self.key("attention.head_count_kv");
            self.problem(
                format!("metadata key {key}"),
                kv_heads,
                &format!("a divisor of the {heads} attention heads"),
            );
        }
        let (head_dim, rope_dims) = self.head_dim(hidden, heads)?;
        let context_len = context.unwrap_or(4096) as usize;
        let rope_scaling = self.rope_scaling(context_len);
        let long_rope = self.long_rope(context_len);
        self.unknown_keys();
        let vocab = self.vocab(hidden)?;
        if !self.problems.is_empty() {
            return None;
        }
        Some(LlamaConfig {
            arch: self.arch.to_string(),
            hidden: hidden as usize,
            ffn: ffn? as usize,
            layers: (blocks? - nextn?) as usize,
            heads: heads as usize,
            kv_heads: kv_heads as usize,
            head_dim: head_dim as usize,
            vocab: vocab as usize,
            rms_eps: eps?,
            rope_theta: theta?,
            rope_interleaved: self.family.rope_interleaved,
            context_length: context? as usize,
            qkv_bias: self.family.qkv_bias,
            qk_norm: self.family.qk_norm,
            rope_scaling: rope_scaling?,
            nope_every: self.family.nope_every,
            rope_dims,
            fused: self.family.fused,
            long_rope: long_rope?,
            nextn: nextn? as usize,
        })
    }

    /// `ARCH.nextn_predict_layers` (0 when absent): fewer than the `blocks` of `block_count`,
    /// since the nextn blocks are its last ones.
    fn nextn(&mut self, blocks: Option<u64>) -> Option<u64> {
        let key = self.key("nextn_predict_layers");
        let n = self.int(&key, 0..=MAX_LAYERS, Some(0))?;
        let blocks = blocks?;
        if n >= blocks {
            self.problem(
                format!("metadata key {key}"),
                n,
                &format!("fewer than the {blocks} blocks of block_count (the nextn blocks are its last ones, after the regular layers)"),
            );
            return None;
        }
        Some(n)
    }

    /// The vocabulary size: the rows of `token_embd.weight`, which `vocab_size` must match.
    fn vocab(&mut self, hidden: u64) -> Option<u64> {
        let name = Names::Gguf.embed();
        let Some(info) = self.g.content.tensor_infos.get(name) else {
            if !self.g.declared(name) {
                self.problem(
                    format!("tensor {name}"),
                    "nothing (it is missing)",
                    "the token embedding",
                );
            }
            return None;
        };
        let dims = info.shape.dims();
        let &[rows, cols] = dims else {
            self.problem(
                format!("tensor {name} shape"),
                format!("{dims:?}"),
                &format!("[vocab, {hidden}]"),
            );
            return None;
        };
        if cols as u64 != hidden {
            self.problem(
                format!("tensor {name} shape"),
                format!("{dims:?}"),
                &format!("[vocab, {hidden}] (embedding_length)"),
            );
        }
        let key = self.key("vocab_size");
        if let Some(v) = self.g.get(&key) {
            if as_u64(v) != Some(rows as u64) {
                self.problem(
                    format!("metadata key {key}"),
                    show(v),
                    &format!("{rows}, the rows of {name}"),
                );
            }
        }
        Some(rows as u64)
    }

    /// Every tensor the architecture needs, with its exact shape; no layer past `block_count`.
    fn tensors(&mut self, cfg: &LlamaConfig) {
        let present = self.highest_layer().map_or(0, |l| l + 1);
        let blocks = cfg.layers + cfg.nextn;
        let per_layer = if cfg.fused { 6 } else { TENSORS_PER_LAYER };
        if blocks > self.g.content.tensor_infos.len() / per_layer || present > blocks {
            let key = self.key("block_count");
            let found = match cfg.nextn {
                0 => blocks.to_string(),
                n => format!(
                    "{blocks} ({} layers + {n} nextn blocks of {})",
                    cfg.layers,
                    self.key("nextn_predict_layers")
                ),
            };
            self.problem(
                format!("metadata key {key}"),
                found,
                &format!("{present}, the layers whose tensors the file holds"),
            );
            return;
        }
        let n = Names::Gguf;
        let (h, f, v) = (cfg.hidden, cfg.ffn, cfg.vocab);
        let (q, kv) = (cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim);
        self.shape(n.embed(), &[v, h], true);
        self.shape(n.head(), &[v, h], false);
        self.shape(n.norm(), &[h], true);
        if self.family.rope_freqs {
            self.shape(ROPE_FREQS, &[cfg.head_dim / 2], false);
        }
        if cfg.fused {
            let half = cfg.rot() / 2;
            self.shape(ROPE_LONG, &[half], false);
            self.shape(ROPE_SHORT, &[half], false);
        }
        for i in 0..blocks {
            let parts: Vec<(&str, Vec<usize>)> = if cfg.fused {
                vec![("qkv", vec![q + 2 * kv, h]), ("gate_up", vec![2 * f, h])]
            } else {
                vec![
                    ("q", vec![q, h]),
                    ("k", vec![kv, h]),
                    ("v", vec![kv, h]),
                    ("gate", vec![f, h]),
                    ("up", vec![f, h]),
                ]
            };
            for (part, dims) in parts.into_iter().chain([
                ("o", vec![h, q]),
                ("down", vec![h, f]),
                ("attn_norm", vec![h]),
                ("ffn_norm", vec![h]),
            ]) {
                self.shape(&n.layer(i, part, "weight"), &dims, true);
            }
            if cfg.qkv_bias {
                for (part, width) in [("q", q), ("k", kv), ("v", kv)] {
                    self.shape(&n.layer(i, part, "bias"), &[width], false);
                }
            }
            if cfg.qk_norm {
                for part in ["q_norm", "k_norm"] {
                    self.shape(&n.layer(i, part, "weight"), &[cfg.head_dim], true);
                }
            }
        }
        for i in cfg.layers..blocks {
            for (part, dims, required) in super::llama::nextn_tensors(h, v) {
                self.shape(&super::llama::nextn_name(i, part), &dims, required);
            }
        }
    }

    /// The highest `N` of the `blk.N.*` tensors present.
    pub(super) fn highest_layer(&self) -> Option<usize> {
        self.g
            .content
            .tensor_infos
            .keys()
            .filter_map(|k| {
                k.strip_prefix("blk.")?
                    .split('.')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .max()
    }

    pub(super) fn shape(&mut self, name: &str, want: &[usize], required: bool) {
        self.used.insert(name.to_string());
        match self.g.content.tensor_infos.get(name) {
            Some(info) if info.shape.dims() != want => self.problem(
                format!("tensor {name} shape"),
                format!("{:?}", info.shape.dims()),
                &format!("{want:?} from the metadata's dimensions"),
            ),
            None if required && !self.g.declared(name) => self.problem(
                format!("tensor {name}"),
                "nothing (it is missing)",
                "a tensor the architecture needs",
            ),
            _ => {}
        }
    }

    /// The tokenizer's vocabulary fits the embedding; special ids index the vocabulary.
    fn tokenizer(&mut self, vocab: u64) {
        let tokens = match self.g.get("tokenizer.ggml.tokens") {
            Some(Value::Array(a)) => a.len() as u64,
            _ => vocab,
        };
        if tokens > vocab {
            self.problem(
                "metadata key tokenizer.ggml.tokens",
                format!("{tokens} tokens"),
                &format!("at most {vocab}, the rows of token_embd.weight"),
            );
        }
        let limit = tokens.min(vocab).min(u64::from(u32::MAX));
        for key in ["bos_token_id", "eos_token_id", "padding_token_id"] {
            let key = format!("tokenizer.ggml.{key}");
            if let Some(v) = self.g.get(&key) {
                if as_u64(v).is_none_or(|id| id >= limit) {
                    self.problem(
                        format!("metadata key {key}"),
                        show(v),
                        &format!("a token id below {limit}"),
                    );
                }
            }
        }
    }
}

/// Any integer value that is not negative.
pub(crate) fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::U8(x) => Some(u64::from(*x)),
        Value::U16(x) => Some(u64::from(*x)),
        Value::U32(x) => Some(u64::from(*x)),
        Value::U64(x) => Some(*x),
        Value::I8(x) => u64::try_from(*x).ok(),
        Value::I16(x) => u64::try_from(*x).ok(),
        Value::I32(x) => u64::try_from(*x).ok(),
        Value::I64(x) => u64::try_from(*x).ok(),
        _ => None,
    }
}

/// A metadata value for a message: scalars as themselves, strings quoted and cut, arrays by length.
pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() > 40 => {
            format!("the string {:?}…", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(a) => format!("an array of {} values", a.len()),
        Value::F32(x) => format!("{x} (f32)"),
        Value::F64(x) => format!("{x} (f64)"),
        Value::Bool(b) => format!("{b} (bool)"),
        other => match as_u64(other) {
            Some(x) => x.to_string(),
            None => format!("{other:?}"),
        },
    }
}
