//! Tiny synthetic Gemma 3 models, written as GGUF (llama.cpp names, norms stored as `1 + w`, a
//! SentencePiece-style vocabulary with scores) or as a Hugging Face directory (`config.json` in
//! the `gemma3_text` form candle-transformers' `gemma3` reads, norms stored as `w`), from the
//! same seeded weights, so tests can hold either path against the stock implementation.

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::families::gemma3::layer_name;
use super::tokenizer_spm::{build_spm, SPACE};
use super::weights::Names;

/// Shape and storage of a synthetic Gemma 3 model.
#[derive(Debug, Clone)]
pub struct GemmaSpec {
    pub hidden: usize,
    pub ffn: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    /// Wider than hidden / heads, as in the real model.
    pub head_dim: usize,
    /// Every `pattern`-th layer is global.
    pub pattern: usize,
    pub sliding_window: usize,
    pub context: usize,
    pub final_softcap: Option<f64>,
    /// Storage of the matrices in GGUF; norms are always f32.
    pub quant: GgmlDType,
    pub seed: u64,
    /// Linear RoPE scaling of the global layers (`rope.scaling.factor`; `rope_scaling` in
    /// `config.json`), as Gemma 3 4B and up ship.
    pub rope_linear: Option<f32>,
}

impl Default for GemmaSpec {
    fn default() -> Self {
        Self {
            hidden: 64,
            ffn: 128,
            layers: 3,
            heads: 4,
            kv_heads: 1,
            head_dim: 32,
            pattern: 3,
            sliding_window: 4,
            context: 128,
            final_softcap: Some(30.0),
            quant: GgmlDType::F32,
            seed: 7,
            rope_linear: None,
        }
    }
}

/// Pieces, scores and token types: `<pad> <eos> <bos> <unk>`, two control tokens, the 256 byte
/// tokens, then a few pieces whose scores make merges.
pub fn gemma_vocab() -> (Vec<String>, Vec<f32>, Vec<i64>) {
    let mut tokens: Vec<String> = ["<pad>", "<eos>", "<bos>", "<unk>"]
        .iter()
        .chain(&["<start_of_turn>", "<end_of_turn>"])
        .map(|s| s.to_string())
        .collect();
    let mut types = vec![3, 3, 3, 2, 3, 3];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6);
    }
    let pieces = [
        SPACE, "a", "b", "c", "e", "h", "t", "th", "he", "the", "▁the", "▁a", "ab", "abc",
    ];
    tokens.extend(pieces.iter().map(|s| s.to_string()));
    types.extend(std::iter::repeat_n(1, pieces.len()));
    let scores = (0..tokens.len()).map(|i| -(i as f32)).collect();
    (tokens, scores, types)
}

/// Seeded weights in Hugging Face names and convention: (name, values, shape).
fn tensors(spec: &GemmaSpec) -> Vec<(String, Vec<f32>, Vec<usize>)> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let vocab = gemma_vocab().0.len();
    let (h, f, d) = (spec.hidden, spec.ffn, spec.head_dim);
    let (q, kv) = (spec.heads * d, spec.kv_heads * d);
    let mut out = Vec::new();
    let mut mat = |name: String, rows: usize, cols: usize, rng: &mut StdRng| {
        let s = 1.7 / (cols as f32).sqrt();
        let v = (0..rows * cols).map(|_| rng.random_range(-s..s)).collect();
        out.push((name, v, vec![rows, cols]));
    };
    mat("model.embed_tokens.weight".into(), vocab, h, &mut rng);
    let hf = Names::Hf;
    for i in 0..spec.layers {
        let p = |part: &str| layer_name(&hf, i, part);
        for (part, rows, cols) in [
            ("q", q, h),
            ("k", kv, h),
            ("v", kv, h),
            ("o", h, q),
            ("gate", f, h),
            ("up", f, h),
            ("down", h, f),
        ] {
            mat(p(part), rows, cols, &mut rng);
        }
    }
    let mut norms = vec![("model.norm.weight".to_string(), h)];
    for i in 0..spec.layers {
        let p = |part: &str| layer_name(&hf, i, part);
        for part in ["attn_norm", "post_attn_norm", "ffn_norm", "post_ffn_norm"] {
            norms.push((p(part), h));
        }
        norms.push((p("q_norm"), d));
        norms.push((p("k_norm"), d));
    }
    for (name, n) in norms {
        let v = (0..n).map(|_| rng.random_range(-0.3..0.3)).collect();
        out.push((name, v, vec![n]));
    }
    out
}

/// The llama.cpp name of a Hugging Face Gemma tensor name.
fn gguf_name(hf: &str) -> String {
    match hf {
        "model.embed_tokens.weight" => return "token_embd.weight".into(),
        "model.norm.weight" => return "output_norm.weight".into(),
        _ => {}
    }
    let rest = hf.strip_prefix("model.layers.").expect("a layer tensor");
    let (i, part) = rest.split_once('.').expect("layer index");
    let part = part.strip_suffix(".weight").expect("a weight");
    let (_, g, _) = super::families::gemma3::PARTS
        .iter()
        .find(|p| p.2 == part)
        .unwrap_or_else(|| unreachable!("unknown Gemma tensor {part}"));
    format!("blk.{i}.{g}.weight")
}

/// Writes the model as GGUF with `gemma3` metadata and a SentencePiece-style vocabulary; norms
/// are stored as `1 + w`, as llama.cpp's converter writes them.
pub fn write_gemma_gguf(path: &Path, spec: &GemmaSpec) -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut qs = Vec::new();
    for (name, data, shape) in tensors(spec) {
        let norm = shape.len() == 1;
        let data = if norm {
            data.into_iter().map(|w| w + 1.0).collect()
        } else {
            data
        };
        let t = Tensor::from_vec(data, shape, &dev)?;
        let dtype = if norm { GgmlDType::F32 } else { spec.quant };
        qs.push((gguf_name(&name), QTensor::quantize(&t, dtype)?));
    }
    let (tokens, scores, types) = gemma_vocab();
    let key = |k: &str| format!("gemma3.{k}");
    let u = |x: usize| Value::U32(x as u32);
    let mut meta: Vec<(String, Value)> = vec![
        (
            "general.architecture".into(),
            Value::String("gemma3".into()),
        ),
        (
            "general.name".into(),
            Value::String("tokfire-synthetic-gemma".into()),
        ),
        (key("embedding_length"), u(spec.hidden)),
        (key("feed_forward_length"), u(spec.ffn)),
        (key("block_count"), u(spec.layers)),
        (key("attention.head_count"), u(spec.heads)),
        (key("attention.head_count_kv"), u(spec.kv_heads)),
        (key("attention.key_length"), u(spec.head_dim)),
        (key("attention.value_length"), u(spec.head_dim)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (key("attention.sliding_window"), u(spec.sliding_window)),
        (key("attention.sliding_window_pattern"), u(spec.pattern)),
        (key("rope.freq_base"), Value::F32(1_000_000.0)),
        (key("context_length"), u(spec.context)),
        ("tokenizer.ggml.model".into(), Value::String("llama".into())),
        ("tokenizer.ggml.pre".into(), Value::String("default".into())),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.into_iter().map(Value::String).collect()),
        ),
        (
            "tokenizer.ggml.scores".into(),
            Value::Array(scores.into_iter().map(Value::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.into_iter().map(|t| Value::I32(t as i32)).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(2)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(1)),
        ("tokenizer.ggml.unknown_token_id".into(), Value::U32(3)),
        ("tokenizer.ggml.padding_token_id".into(), Value::U32(0)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(true)),
    ];
    if let Some(cap) = spec.final_softcap {
        meta.push((key("final_logit_softcapping"), Value::F32(cap as f32)));
    }
    if let Some(f) = spec.rope_linear {
        meta.push((key("rope.scaling.type"), Value::String("linear".into())));
        meta.push((key("rope.scaling.factor"), Value::F32(f)));
    }
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> = qs.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    gguf_file::write(&mut f, &meta_refs, &tensor_refs)
}

/// Writes the model as a Hugging Face directory: f32 safetensors, `config.json`,
/// `tokenizer.json`.
pub fn write_gemma_safetensors_dir(dir: &Path, spec: &GemmaSpec) -> candle_core::Result<()> {
    std::fs::create_dir_all(dir)?;
    let dev = Device::Cpu;
    let mut map = HashMap::new();
    for (name, data, shape) in tensors(spec) {
        map.insert(name, Tensor::from_vec(data, shape, &dev)?);
    }
    candle_core::safetensors::save(&map, dir.join("model.safetensors"))?;
    let (tokens, scores, types) = gemma_vocab();
    let config = serde_json::json!({
        "model_type": "gemma3_text",
        "attention_bias": false,
        "head_dim": spec.head_dim,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": spec.hidden,
        "intermediate_size": spec.ffn,
        "num_attention_heads": spec.heads,
        "num_hidden_layers": spec.layers,
        "num_key_value_heads": spec.kv_heads,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
        "vocab_size": tokens.len(),
        "final_logit_softcapping": spec.final_softcap,
        "attn_logit_softcapping": null,
        "query_pre_attn_scalar": spec.head_dim,
        "sliding_window": spec.sliding_window,
        "sliding_window_pattern": spec.pattern,
        "max_position_embeddings": spec.context,
        "rope_scaling": spec.rope_linear.map(|f| serde_json::json!({
            "rope_type": "linear",
            "factor": f,
        })),
        "bos_token_id": 2,
        "eos_token_id": 1,
    });
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config).expect("json value serialises"),
    )?;
    let tok =
        build_spm(&tokens, &scores, &types, Some(3), false).map_err(candle_core::Error::msg)?;
    tok.save(dir.join("tokenizer.json"), false)
        .map_err(candle_core::Error::msg)?;
    Ok(())
}
