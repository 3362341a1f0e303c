//! llama.cpp as the oracle for every family and pre-tokenizer. The models are seeded tiny ones
//! this file writes (F32 weights, a real byte-level BPE tokenizer in their metadata); llama.cpp
//! 0c1e57098 ran on the same bytes once, through `tools/oracle/run` (which calls
//! [`write_oracle_models`] to get them), and its outputs are the committed fixtures in
//! `tests/fixtures/oracle/`. Each fixture carries the sha256 of the file it was made from, so a
//! change to the writer fails here until the fixtures are regenerated.
//!
//! Families: greedy ids for 16 tokens after the prompt and the top logits at several positions.
//! Pre-tokenizers: the ids of hard strings (Unicode, digits, code, whitespace runs,
//! contractions, case changes) on a vocabulary whose merges make every split visible.

use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use serde::Deserialize;
use tokfire::config::WeightDType;
use tokfire::engine::sampler::argmax;
use tokfire::model::llama::{LogitRows, SeqInput};
use tokfire::model::synthetic::{self, Spec};
use tokfire::model::synthetic_gemma::{write_gemma_gguf, GemmaSpec};
use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};

use crate::common::load;

/// Where the fixtures live.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle")
}

/// Writes one oracle model to a path.
type Writer = Box<dyn Fn(&Path)>;

/// The family models: name, writer.
fn family_models() -> Vec<(&'static str, Writer)> {
    let base = || Spec {
        quant: GgmlDType::F32,
        context: 128,
        ..Default::default()
    };
    let spec = |arch: &str, seed: u64| Spec {
        arch: arch.into(),
        seed,
        ..base()
    };
    let llama3 = Spec {
        rope_freqs: Some(vec![1.0, 1.0, 1.5, 2.0, 4.0, 8.0, 8.0, 8.0]),
        seed: 21,
        ..base()
    };
    let write =
        |s: Spec| -> Writer { Box::new(move |p: &Path| synthetic::write_gguf(p, &s).unwrap()) };
    vec![
        ("llama", write(spec("llama", 20))),
        ("llama-rope-freqs", write(llama3)),
        (
            "llama-linear",
            write(Spec {
                rope_linear: Some(4.0),
                ..spec("llama", 29)
            }),
        ),
        (
            "llama-yarn",
            write(Spec {
                rope_yarn: Some((4.0, 4096, None)),
                ..spec("llama", 30)
            }),
        ),
        ("qwen2", write(spec("qwen2", 22))),
        (
            "qwen2-yarn",
            write(Spec {
                rope_yarn: Some((2.0, 2048, Some(0.95))),
                ..spec("qwen2", 31)
            }),
        ),
        ("qwen3", write(spec("qwen3", 23))),
        ("phi3-plain", write(spec("phi3", 27))),
        (
            "phi3-partial",
            write(Spec {
                rope_dims: Some(12),
                ..spec("phi3", 28)
            }),
        ),
        (
            "phi3-longrope-long",
            write(Spec {
                rope_dims: Some(12),
                long_rope: Some(phi3_factors(64)),
                ..spec("phi3", 25)
            }),
        ),
        (
            "phi3-longrope-short",
            write(Spec {
                rope_dims: Some(12),
                long_rope: Some(phi3_factors(512)),
                ..spec("phi3", 26)
            }),
        ),
        (
            "smollm3",
            write(Spec {
                layers: 4,
                ..spec("smollm3", 24)
            }),
        ),
        (
            "gemma3",
            Box::new(|p: &Path| write_gemma_gguf(p, &GemmaSpec::default()).unwrap()),
        ),
        (
            "qwen35",
            Box::new(|p: &Path| write_qwen35_gguf(p, &Qwen35Spec::default()).unwrap()),
        ),
        (
            "qwen35-mtp",
            Box::new(|p: &Path| {
                let spec = Qwen35Spec {
                    mtp: true,
                    seed: 37,
                    ..Qwen35Spec::default()
                };
                write_qwen35_gguf(p, &spec).unwrap()
            }),
        ),
        (
            "gemma3-linear",
            Box::new(|p: &Path| {
                let spec = GemmaSpec {
                    rope_linear: Some(8.0),
                    seed: 32,
                    ..GemmaSpec::default()
                };
                write_gemma_gguf(p, &spec).unwrap()
            }),
        ),
    ]
}

/// LongRoPE for a head of 16 with 12 rotated dimensions (6 factors a set), trained for
/// `original` tokens: the models' 128-token context is past 64 (long factors on both sides,
/// llama.cpp's context being 256 after padding) and within 512 (short).
fn phi3_factors(original: usize) -> (Vec<f32>, Vec<f32>, f32, usize) {
    let long = vec![1.0, 1.2, 2.0, 3.5, 6.0, 9.0];
    let short = vec![1.0, 1.0, 1.1, 1.3, 1.6, 2.0];
    (long, short, 1.19, original)
}

/// The hard strings every pre-tokenizer fixture encodes.
pub const HARD: [&str; 3] = [
    "Hello World! It's 2026: x=3.14159; y  =  'don\u{2019}t' ÉCOLE café 日本語 😀 I'M here",
    "\n\n  def f(a):\n\treturn a**2  # ok\r\n AbcDEFghi camelCaseWord 12345678 benchmark   end  ",
    "<|im_start|>user\nwe'll see   you've   THEY'RE  1,000,000 (x)/[y] -> {z};;\u{a0}\u{3000}ok",
];

/// The `tokenizer.ggml.pre` names with a fixture.
pub const PRE_TYPES: [&str; 7] = [
    "default",
    "gpt-2",
    "smollm",
    "llama-bpe",
    "qwen2",
    "gpt-4o",
    "tekken",
];

/// A vocabulary on which every split shows: all substrings of up to four byte-level characters
/// of the hard strings are tokens, each made by a merge of its first characters and its last
/// (shorter first), so a piece merges whole unless a boundary cuts it. ` benchmark` is a whole
/// word without merges, for the types that look a piece up before merging.
fn pretok_spec(pre: &str) -> Spec {
    let mut merges = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let chars: Vec<Vec<char>> = HARD
        .iter()
        .map(|t| synthetic::byte_level(t).chars().collect())
        .collect();
    for len in 2..=4 {
        for c in &chars {
            for w in c.windows(len) {
                let head: String = w[..len - 1].iter().collect();
                let last = w[len - 1].to_string();
                if seen.insert((head.clone(), last.clone())) {
                    merges.push((head, last));
                }
            }
        }
    }
    Spec {
        layers: 1,
        quant: GgmlDType::F32,
        tied: true,
        pre: pre.into(),
        merges,
        words: vec![synthetic::byte_level(" benchmark")],
        add_bos: None,
        seed: 30,
        ..Default::default()
    }
}

/// Writes every oracle model into `$TOKFIRE_ORACLE_OUT` (for `tools/oracle/run`).
#[test]
#[ignore = "writes the oracle models for tools/oracle/run; set TOKFIRE_ORACLE_OUT"]
fn write_oracle_models() {
    let out = PathBuf::from(std::env::var_os("TOKFIRE_ORACLE_OUT").expect("TOKFIRE_ORACLE_OUT"));
    std::fs::create_dir_all(out.join("families")).unwrap();
    std::fs::create_dir_all(out.join("pretok")).unwrap();
    for (name, write) in family_models() {
        write(&out.join("families").join(format!("{name}.gguf")));
    }
    for pre in PRE_TYPES {
        let spec = pretok_spec(pre);
        synthetic::write_gguf(&out.join("pretok").join(format!("{pre}.gguf")), &spec).unwrap();
    }
    std::fs::write(out.join("hard.json"), serde_json::to_string(&HARD).unwrap()).unwrap();
}

#[derive(Deserialize)]
struct FamilyFixture {
    sha256: String,
    prompt: String,
    prompt_ids: Vec<u32>,
    /// Greedy continuation, 16 tokens.
    greedy: Vec<u32>,
    /// Top logits (id, value) at positions of prompt + greedy[..15].
    top: Vec<TopAt>,
}

#[derive(Deserialize)]
struct TopAt {
    pos: usize,
    logits: Vec<(u32, f32)>,
}

#[derive(Deserialize)]
struct PretokFixture {
    sha256: String,
    /// llama.cpp's ids of each hard string (BOS as the model says, special tokens parsed).
    ids: Vec<Vec<u32>>,
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (regenerate with tools/oracle/run)", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn sha256(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Logits differ only by the order of f32 operations (same F32 weights, F32 KV on both sides):
/// measured 2e-6 for the llama-engine families. ggml's GELU reads an f16 table, so Gemma's
/// logits differ by about 1e-3 (measured 1.06e-3).
fn tolerance(name: &str) -> f32 {
    match name {
        n if n.starts_with("gemma3") => 3e-3,
        _ => 2e-5,
    }
}

#[test]
fn every_family_matches_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    for (name, write) in family_models() {
        let path = dir.path().join(format!("{name}.gguf"));
        write(&path);
        let want: FamilyFixture = read(&fixtures().join(format!("family-{name}.json")));
        assert_eq!(
            sha256(&path),
            want.sha256,
            "{name}: the writer's bytes changed; regenerate with tools/oracle/run"
        );
        let loaded = load(&path, WeightDType::Q);
        let ids = loaded.tokenizer.encode(&want.prompt).unwrap();
        assert_eq!(
            ids, want.prompt_ids,
            "{name}: prompt ids differ from llama.cpp's"
        );
        let mut seq = ids.clone();
        seq.extend_from_slice(&want.greedy[..want.greedy.len() - 1]);
        let mut cache = loaded.model.new_cache(seq.len()).unwrap();
        let input = SeqInput {
            tokens: &seq,
            logits: LogitRows::All,
        };
        let logits = loaded.model.forward(&[input], &mut [&mut cache]).unwrap();
        let rows: Vec<Vec<f32>> = logits.to_vec2().unwrap();
        let ours: Vec<u32> = rows[ids.len() - 1..].iter().map(|r| argmax(r)).collect();

        assert_eq!(
            ours, want.greedy,
            "{name}: greedy ids differ from llama.cpp's"
        );
        let worst = want
            .top
            .iter()
            .flat_map(|t| {
                t.logits
                    .iter()
                    .map(|&(id, v)| (rows[t.pos][id as usize] - v).abs())
            })
            .fold(0f32, f32::max);
        eprintln!("{name}: greedy ids equal; top logits within {worst:.2e} of llama.cpp's");
        for top in &want.top {
            for &(id, value) in &top.logits {
                let got = rows[top.pos][id as usize];
                assert!(
                    (got - value).abs() <= tolerance(name) * value.abs().max(1.0),
                    "{name}: logit of {id} at position {} is {got}, llama.cpp {value}",
                    top.pos
                );
            }
        }
    }
}

#[test]
fn every_pre_tokenizer_matches_llama_cpp() {
    let dir = tempfile::tempdir().unwrap();
    for pre in PRE_TYPES {
        let path = dir.path().join(format!("{pre}.gguf"));
        synthetic::write_gguf(&path, &pretok_spec(pre)).unwrap();
        let want: PretokFixture = read(&fixtures().join(format!("pretok-{pre}.json")));
        assert_eq!(
            sha256(&path),
            want.sha256,
            "{pre}: the writer's bytes changed; regenerate with tools/oracle/run"
        );
        let loaded = load(&path, WeightDType::Q);
        for (text, ids) in HARD.iter().zip(&want.ids) {
            let ours = loaded.tokenizer.encode(text).unwrap();
            assert_eq!(
                &ours, ids,
                "pre {pre}: ids of {text:?} differ from llama.cpp's"
            );
        }
    }
}
