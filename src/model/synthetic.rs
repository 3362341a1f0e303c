//! Tiny synthetic llama models, written to disk as GGUF or as a safetensors directory
//! (`config.json`, `tokenizer.json`, `model.safetensors`), with seeded random weights and a small
//! byte-level BPE tokenizer and ChatML template. Tests use them to check the engine against
//! candle-transformers on the same weights, fast and exactly; `tokfire` can run them like any model.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::families;
use super::tokenizer::build_bpe;
use super::weights::Names;

/// The ChatML template the synthetic models carry.
pub(crate) const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const SPECIAL: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const MERGES: [(&str, &str); 6] = [
    ("Ġ", "t"),
    ("h", "e"),
    ("Ġt", "he"),
    ("i", "n"),
    ("Ġ", "a"),
    ("o", "n"),
];

/// Shape and storage of a synthetic model.
#[derive(Debug, Clone)]
pub struct Spec {
    pub hidden: usize,
    pub ffn: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub context: usize,
    /// Storage of the matrices in GGUF (e.g. Q8_0, Q4_0, F32); norms are always f32.
    pub quant: GgmlDType,
    /// No separate output matrix: the head reuses the embedding.
    pub tied: bool,
    pub seed: u64,
    /// `general.architecture` written to GGUF (anything, to test unsupported ones).
    pub arch: String,
    /// Write the `tokenizer.ggml.*` metadata (off to test models without a tokenizer).
    pub tokenizer: bool,
    /// Llama 3's `rope_freqs.weight` (GGUF only): one divisor per rotated pair.
    pub rope_freqs: Option<Vec<f32>>,
    /// `tokenizer.ggml.pre` written to GGUF.
    pub pre: String,
    /// Merges after the built-in ones, in rank order (byte-level pieces); each adds its token.
    pub merges: Vec<(String, String)>,
    /// Pieces added to the vocabulary without a merge that makes them.
    pub words: Vec<String>,
    /// `tokenizer.ggml.add_bos_token`; absent when `None` (the pre-tokenizer's default).
    pub add_bos: Option<bool>,
    /// `rope.dimension_count` when it is less than the head size (partial rotary, phi3).
    pub rope_dims: Option<usize>,
    /// phi3's LongRoPE (GGUF only): long and short factors, `attn_factor`, original context.
    pub long_rope: Option<(Vec<f32>, Vec<f32>, f32, usize)>,
    /// `rope.scaling.type = linear` with this `rope.scaling.factor` (GGUF only).
    pub rope_linear: Option<f32>,
    /// `rope.scaling.type = yarn` (GGUF only): factor, original context, and
    /// `rope.scaling.attn_factor` when set.
    pub rope_yarn: Option<(f32, usize, Option<f32>)>,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            hidden: 64,
            ffn: 128,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            context: 256,
            quant: GgmlDType::Q8_0,
            tied: false,
            seed: 1,
            arch: "llama".into(),
            tokenizer: true,
            rope_freqs: None,
            pre: "smollm".into(),
            merges: Vec::new(),
            words: Vec::new(),
            add_bos: Some(false),
            rope_dims: None,
            long_rope: None,
            rope_linear: None,
            rope_yarn: None,
        }
    }
}

/// The tokenizer vocabulary: 3 special tokens, 256 byte tokens, then the merged pieces.
pub(crate) fn vocab() -> (Vec<String>, Vec<String>, Vec<i64>) {
    vocab_for(&Spec::default())
}

/// [`vocab`] with `spec`'s extra merges (and their tokens) and words.
pub(crate) fn vocab_for(spec: &Spec) -> (Vec<String>, Vec<String>, Vec<i64>) {
    let mut tokens: Vec<String> = SPECIAL.iter().map(|s| s.to_string()).collect();
    let mut types = vec![3i64; SPECIAL.len()];
    let map = byte_chars();
    tokens.extend((0..256).map(|b| map[b].to_string()));
    types.extend(std::iter::repeat_n(1, 256));
    let builtin = MERGES.iter().map(|(a, b)| (a.to_string(), b.to_string()));
    let all: Vec<(String, String)> = builtin.chain(spec.merges.iter().cloned()).collect();
    let mut seen: std::collections::HashSet<String> = tokens.iter().cloned().collect();
    for piece in all
        .iter()
        .map(|(a, b)| format!("{a}{b}"))
        .chain(spec.words.clone())
    {
        if seen.insert(piece.clone()) {
            tokens.push(piece);
            types.push(1);
        }
    }
    let merges = all.iter().map(|(a, b)| format!("{a} {b}")).collect();
    (tokens, merges, types)
}

/// A text's byte-level pieces (GPT-2's byte-to-character map), as the vocabulary spells them.
pub fn byte_level(text: &str) -> String {
    let map = byte_chars();
    text.bytes().map(|b| map[b as usize]).collect()
}

/// GPT-2's byte → printable character table.
fn byte_chars() -> Vec<char> {
    let mut bs: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut cs = bs.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !bs.contains(&b) {
            bs.push(b);
            cs.push(256 + n);
            n += 1;
        }
    }
    let mut table = vec!['\0'; 256];
    for (b, c) in bs.iter().zip(&cs) {
        table[*b as usize] = char::from_u32(*c).expect("valid code point");
    }
    table
}

/// A tensor to write: name, values, (rows, cols); one row is written as an f32 vector.
pub(crate) type Weights = (String, Vec<f32>, (usize, usize));

/// Seeded random weights: (name, values, (rows, cols)); norms and biases have one row.
pub(crate) fn tensors(spec: &Spec, names: &Names) -> Vec<Weights> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    // An architecture outside the registry (to test refusals) gets the plain llama layout.
    let family = families::by_gguf(&spec.arch).unwrap_or(&families::llama::FAMILY);
    let vocab = vocab_for(spec).0.len();
    let hd = spec.hidden / spec.heads;
    let (h, f, kv) = (spec.hidden, spec.ffn, spec.kv_heads * hd);
    let mut out = Vec::new();
    let mut mat = |name: String, rows: usize, cols: usize, rng: &mut StdRng| {
        let s = 1.0 / (cols as f32).sqrt();
        out.push((
            name,
            (0..rows * cols)
                .map(|_| rng.random_range(-s..s) * 1.7)
                .collect(),
            (rows, cols),
        ));
    };
    mat(names.embed().into(), vocab, h, &mut rng);
    if !spec.tied {
        mat(names.head().into(), vocab, h, &mut rng);
    }
    for i in 0..spec.layers {
        for (part, rows, cols) in [
            ("q", h, h),
            ("k", kv, h),
            ("v", kv, h),
            ("o", h, h),
            ("gate", f, h),
            ("up", f, h),
            ("down", h, f),
        ] {
            mat(names.layer(i, part, "weight"), rows, cols, &mut rng);
        }
    }
    if family.qkv_bias {
        for i in 0..spec.layers {
            for (part, n) in [("q", h), ("k", kv), ("v", kv)] {
                out.push((
                    names.layer(i, part, "bias"),
                    (0..n).map(|_| rng.random_range(-0.5..0.5)).collect(),
                    (1, n),
                ));
            }
        }
    }
    if family.qk_norm {
        for i in 0..spec.layers {
            for part in ["q_norm", "k_norm"] {
                out.push((
                    names.layer(i, part, "weight"),
                    (0..hd).map(|_| 1.0 + rng.random_range(-0.3..0.3)).collect(),
                    (1, hd),
                ));
            }
        }
    }
    if let (Some(f), Names::Gguf) = (&spec.rope_freqs, names) {
        out.push(("rope_freqs.weight".into(), f.clone(), (1, f.len())));
    }
    if let (Some((long, short, _, _)), Names::Gguf) = (&spec.long_rope, names) {
        out.push((
            "rope_factors_long.weight".into(),
            long.clone(),
            (1, long.len()),
        ));
        out.push((
            "rope_factors_short.weight".into(),
            short.clone(),
            (1, short.len()),
        ));
    }
    if family.fused {
        for i in 0..spec.layers {
            fuse(&mut out, names, i, &["q", "k", "v"], "qkv");
            fuse(&mut out, names, i, &["gate", "up"], "gate_up");
        }
    }
    let mut norms = vec![names.norm().to_string()];
    for i in 0..spec.layers {
        norms.push(names.layer(i, "attn_norm", "weight"));
        norms.push(names.layer(i, "ffn_norm", "weight"));
    }
    for name in norms {
        out.push((
            name,
            (0..h).map(|_| 1.0 + rng.random_range(-0.2..0.2)).collect(),
            (1, h),
        ));
    }
    out
}

/// Replaces layer `i`'s `parts` by one matrix `into`, their rows stacked in order (phi3's
/// `attn_qkv` and `ffn_up`).
fn fuse(out: &mut Vec<Weights>, names: &Names, i: usize, parts: &[&str], into: &str) {
    let wanted: Vec<String> = parts.iter().map(|p| names.layer(i, p, "weight")).collect();
    let (mut data, mut rows, mut cols) = (Vec::new(), 0, 0);
    for name in &wanted {
        let at = out
            .iter()
            .position(|w| &w.0 == name)
            .expect("part written above");
        let (_, values, (r, c)) = out.remove(at);
        data.extend(values);
        (rows, cols) = (rows + r, c);
    }
    out.push((names.layer(i, into, "weight"), data, (rows, cols)));
}

/// Writes the model as a GGUF file with llama metadata, tokenizer and chat template.
pub fn write_gguf(path: &Path, spec: &Spec) -> candle_core::Result<()> {
    let blocks = spec.layers;
    write_gguf_with(path, spec, tensors(spec, &Names::Gguf), blocks, Vec::new())
}

/// [`write_gguf`] with these `weights`, `block_count` = `blocks` and `extra` metadata.
pub(crate) fn write_gguf_with(
    path: &Path,
    spec: &Spec,
    weights: Vec<Weights>,
    blocks: usize,
    extra: Vec<(String, Value)>,
) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut qs = Vec::new();
    for (name, data, (rows, cols)) in weights {
        let (t, dtype) = if rows == 1 {
            (Tensor::from_vec(data, cols, &dev)?, GgmlDType::F32)
        } else {
            // The conv kernels stay f32, as llama.cpp's converter keeps them (4 taps a row).
            let dtype = match name.ends_with("ssm_conv1d.weight") {
                true => GgmlDType::F32,
                false => spec.quant,
            };
            (Tensor::from_vec(data, (rows, cols), &dev)?, dtype)
        };
        qs.push((name, QTensor::quantize(&t, dtype)?));
    }
    let (tokens, merges, types) = vocab_for(spec);
    let strs = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
    let hd = spec.hidden / spec.heads;
    let a = spec.arch.as_str();
    let key = |k: &str| format!("{a}.{k}");
    let mut meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(a.into())),
        (
            "general.name".into(),
            Value::String("tokfire-synthetic".into()),
        ),
        (key("embedding_length"), Value::U32(spec.hidden as u32)),
        (key("feed_forward_length"), Value::U32(spec.ffn as u32)),
        (key("block_count"), Value::U32(blocks as u32)),
        (key("attention.head_count"), Value::U32(spec.heads as u32)),
        (
            key("attention.head_count_kv"),
            Value::U32(spec.kv_heads as u32),
        ),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        (key("rope.freq_base"), Value::F32(10_000.0)),
        (
            key("rope.dimension_count"),
            Value::U32(spec.rope_dims.unwrap_or(hd) as u32),
        ),
        (key("context_length"), Value::U32(spec.context as u32)),
    ];
    if spec.tokenizer {
        meta.extend([
            ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
            ("tokenizer.ggml.pre".into(), Value::String(spec.pre.clone())),
            ("tokenizer.ggml.tokens".into(), strs(tokens)),
            ("tokenizer.ggml.merges".into(), strs(merges)),
            (
                "tokenizer.ggml.token_type".into(),
                Value::Array(types.into_iter().map(|t| Value::I32(t as i32)).collect()),
            ),
            ("tokenizer.ggml.bos_token_id".into(), Value::U32(1)),
            ("tokenizer.ggml.eos_token_id".into(), Value::U32(2)),
            (
                "tokenizer.chat_template".into(),
                Value::String(CHATML.into()),
            ),
        ]);
    }
    if let Some((_, _, attn, original)) = &spec.long_rope {
        meta.push((key("rope.scaling.attn_factor"), Value::F32(*attn)));
        meta.push((
            key("rope.scaling.original_context_length"),
            Value::U32(*original as u32),
        ));
    }
    if let Some(f) = spec.rope_linear {
        meta.push((key("rope.scaling.type"), Value::String("linear".into())));
        meta.push((key("rope.scaling.factor"), Value::F32(f)));
    }
    if let Some((f, original, attn)) = spec.rope_yarn {
        meta.push((key("rope.scaling.type"), Value::String("yarn".into())));
        meta.push((key("rope.scaling.factor"), Value::F32(f)));
        let orig = key("rope.scaling.original_context_length");
        meta.push((orig, Value::U32(original as u32)));
        if let Some(a) = attn {
            meta.push((key("rope.scaling.attn_factor"), Value::F32(a)));
        }
    }
    if a == "qwen3" {
        // As Qwen3's converter writes them (candle's reader needs them).
        for k in ["attention.key_length", "attention.value_length"] {
            meta.push((key(k), Value::U32(hd as u32)));
        }
    }
    if let (true, Some(b)) = (spec.tokenizer, spec.add_bos) {
        meta.push(("tokenizer.ggml.add_bos_token".into(), Value::Bool(b)));
    }
    meta.extend(extra);
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    gguf_file::write(&mut f, &meta_refs, &tensor_refs)
}

/// Writes the model as a Hugging Face-style directory: dense f32 safetensors + config + tokenizer.
pub fn write_safetensors_dir(dir: &Path, spec: &Spec) -> candle_core::Result<()> {
    std::fs::create_dir_all(dir)?;
    let dev = Device::Cpu;
    let mut map = HashMap::new();
    for (name, data, (rows, cols)) in tensors(spec, &Names::Hf) {
        let t = if rows == 1 {
            Tensor::from_vec(data, cols, &dev)?
        } else {
            Tensor::from_vec(data, (rows, cols), &dev)?
        };
        map.insert(name, t);
    }
    candle_core::safetensors::save(&map, dir.join("model.safetensors"))?;
    let (tokens, merges, types) = vocab();
    let config = serde_json::json!({
        "model_type": spec.arch,
        "hidden_size": spec.hidden,
        "intermediate_size": spec.ffn,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "vocab_size": tokens.len(),
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "max_position_embeddings": spec.context,
        "tie_word_embeddings": spec.tied,
        "bos_token_id": 1,
        "eos_token_id": 2,
    });
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config).expect("json value serialises"),
    )?;
    std::fs::write(
        dir.join("tokenizer_config.json"),
        serde_json::json!({ "chat_template": CHATML }).to_string(),
    )?;
    let pre = super::pretok::lookup(Some("smollm")).map_err(candle_core::Error::msg)?;
    let tok = build_bpe(&tokens, &merges, &types, &pre).map_err(candle_core::Error::msg)?;
    tok.save(dir.join("tokenizer.json"), false)
        .map_err(candle_core::Error::msg)?;
    Ok(())
}

/// Writes `spec` as a GGUF in `dir` and loads it on the CPU the way `--model FILE` does.
#[cfg(test)]
pub(crate) fn load_gguf_for_test(dir: &Path, spec: &Spec) -> super::Loaded {
    let path = dir.join(format!("synthetic-{}.gguf", spec.seed));
    write_gguf(&path, spec).expect("writing a synthetic GGUF");
    load_file_for_test(dir, &path)
}

/// Loads the GGUF at `path` on the CPU the way `--model FILE` does (`dir` as its caches).
#[cfg(test)]
pub(crate) fn load_file_for_test(dir: &Path, path: &Path) -> super::Loaded {
    super::load(
        &crate::config::ModelConfig {
            model: path.to_string_lossy().into_owned(),
            cache_dir: dir.to_path_buf(),
            hf_cache_dir: dir.to_path_buf(),
            dtype: crate::config::WeightDType::Q,
            device: crate::config::DeviceSpec::Cpu,
            chat_template: None,
            load: Default::default(),
            repack: Default::default(),
        },
        super::Kernels::Ours,
    )
    .expect("loading a synthetic GGUF")
}

/// Largest absolute difference allowed between f32 values computed in one prefill and the same
/// values computed across steps of other shapes (the summation order differs).
#[cfg(test)]
pub(crate) const TOL: f32 = 1e-4;

/// A fresh cache holding `tokens`, prefilled in one forward of every layer of `model`.
#[cfg(test)]
pub(crate) fn prefilled(model: &super::family::Model, tokens: &[u32]) -> super::kv::KvCache {
    use super::llama::{LogitRows, SeqInput};
    let mut cache = model.new_cache(tokens.len() + 8).expect("cache");
    let input = SeqInput {
        tokens,
        logits: LogitRows::None,
    };
    model.forward(&[input], &mut [&mut cache]).expect("prefill");
    cache
}

/// The logits after feeding `token` to `cache` through every layer of `model`.
#[cfg(test)]
pub(crate) fn next_logits(
    model: &super::family::Model,
    cache: &mut super::kv::KvCache,
    token: u32,
) -> Vec<f32> {
    use super::llama::{LogitRows, SeqInput};
    let input = SeqInput {
        tokens: &[token],
        logits: LogitRows::Last,
    };
    let rows = model.forward(&[input], &mut [cache]).expect("forward");
    rows.to_vec2::<f32>().expect("rows").remove(0)
}

/// The largest absolute difference between two rows of the same length.
#[cfg(test)]
pub(crate) fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "rows of one vocabulary");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
