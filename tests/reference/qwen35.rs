//! Qwen3.5 (Gated DeltaNet + gated attention) against llama.cpp's fixture beyond the one-chunk
//! prefill `oracle` checks: a prompt prefilled in several chunks (the conv window and state
//! matrices carried between steps) and three sequences sharing every step (each with its own
//! state) give llama.cpp's greedy ids and our one-sequence logits; the recurrent state after a
//! chunked prefill equals the one-chunk state. A one-chunk prefill of 32 tokens or more runs the
//! delta rule's chunked form, shorter chunks its recurrent form: the fixture's 34-token prompt
//! checks both against llama.cpp.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokfire::config::WeightDType;
use tokfire::model::llama::{LogitRows, SeqInput};
use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};

use crate::common::{batched, load, max_diff, solo, Plan};

#[derive(Deserialize)]
struct Fixture {
    prompt_ids: Vec<u32>,
    greedy: Vec<u32>,
}

fn fixture() -> Fixture {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oracle/family-qwen35.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn model(dir: &Path) -> PathBuf {
    let path = dir.join("qwen35.gguf");
    write_qwen35_gguf(&path, &Qwen35Spec::default()).unwrap();
    path
}

/// Same bound as the one-chunk oracle check: only the order of f32 operations differs.
const TOL: f32 = 2e-5;

#[test]
fn a_prompt_in_chunks_gives_llama_cpps_greedy_ids_and_the_one_chunk_logits() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&model(dir.path()), WeightDType::Q);
    let want = fixture();
    let n = want.greedy.len();
    let whole = solo(&loaded.model, &want.prompt_ids, n);
    assert_eq!(whole.tokens, want.greedy, "one chunk");
    for chunk in [1, 5, 13] {
        let plan = Plan {
            prompt: want.prompt_ids.clone(),
            start: 0,
            chunk,
        };
        let got = batched(&loaded.model, &[plan], n).pop().unwrap();
        assert_eq!(got.tokens, want.greedy, "chunks of {chunk}");
        for (a, b) in got.logits.iter().zip(&whole.logits) {
            let d = max_diff(a, b);
            assert!(d < TOL, "chunks of {chunk}: logits differ by {d}");
        }
    }
}

/// A prompt longer than one 64-token chunk of the delta rule's chunked form (taken by a
/// one-chunk prefill) against the recurrent form (taken by chunks of 7): the same greedy ids,
/// logits within the bound.
#[test]
fn a_long_prompt_gives_the_same_logits_in_the_chunked_and_the_recurrent_form() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&model(dir.path()), WeightDType::Q);
    let ids = fixture().prompt_ids;
    let prompt: Vec<u32> = ids.iter().cycle().take(3 * ids.len()).copied().collect();
    assert!(prompt.len() > 64);
    let n = 8;
    let whole = solo(&loaded.model, &prompt, n);
    let plan = Plan {
        prompt,
        start: 0,
        chunk: 7,
    };
    let by_7 = batched(&loaded.model, &[plan], n).pop().unwrap();
    assert_eq!(by_7.tokens, whole.tokens);
    for (a, b) in by_7.logits.iter().zip(&whole.logits) {
        let d = max_diff(a, b);
        assert!(d < TOL, "logits differ by {d}");
    }
}

#[test]
fn three_sequences_in_one_batch_each_give_their_solo_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&model(dir.path()), WeightDType::Q);
    let ids = fixture().prompt_ids;
    let prompts = [ids.clone(), ids[..20].to_vec(), ids[7..].to_vec()];
    let plans: Vec<Plan> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| Plan {
            prompt: p.clone(),
            start: i,
            chunk: 6 + i,
        })
        .collect();
    let n = 12;
    let together = batched(&loaded.model, &plans, n);
    for (i, p) in prompts.iter().enumerate() {
        let alone = solo(&loaded.model, p, n);
        assert_eq!(together[i].tokens, alone.tokens, "sequence {i}");
        for (a, b) in together[i].logits.iter().zip(&alone.logits) {
            let d = max_diff(a, b);
            assert!(d < TOL, "sequence {i}: logits differ by {d}");
        }
    }
}

#[test]
fn the_state_after_a_chunked_prefill_equals_the_one_chunk_state() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&model(dir.path()), WeightDType::Q);
    let ids = fixture().prompt_ids;
    let m = &loaded.model;
    let run = |chunks: &[usize]| {
        let mut cache = m.new_cache(ids.len()).unwrap();
        let mut at = 0;
        for &c in chunks {
            let input = SeqInput {
                tokens: &ids[at..at + c],
                logits: LogitRows::None,
            };
            m.forward(&[input], &mut [&mut cache]).unwrap();
            at += c;
        }
        assert_eq!(at, ids.len());
        cache
    };
    let one = run(&[ids.len()]);
    let split = run(&[3, 1, 17, ids.len() - 21]);
    let d = one
        .recurrent()
        .unwrap()
        .max_diff(split.recurrent().unwrap())
        .unwrap();
    assert!(d < 1e-5, "states differ by {d}");
    assert_eq!(
        m.state_bytes_per_seq(),
        one.recurrent().unwrap().shape().bytes()
    );
}

/// Writes a Qwen3.5 model of the shape asked for (`TOKFIRE_QWEN35_SHAPE`: `tiny`, the oracle's
/// `qwen35-mtp` model with a 4096-token context; `0.8b`, Qwen3.5-0.8B's shape with this
/// tokenizer's vocabulary, Q8_0; `mirror`, whose MTP block always predicts the target;
/// `mirror-noise-A`, the same with noise of amplitude A on `eh_proj`), each with an MTP block, to `$TOKFIRE_QWEN35_OUT`, for the CLI
/// and the engine bench.
#[test]
#[ignore = "writes a model for manual runs; set TOKFIRE_QWEN35_OUT"]
fn write_qwen35_model() {
    use candle_core::quantized::GgmlDType;
    let out = std::env::var_os("TOKFIRE_QWEN35_OUT").expect("TOKFIRE_QWEN35_OUT");
    let spec = match std::env::var("TOKFIRE_QWEN35_SHAPE").as_deref() {
        Ok("0.8b") => Qwen35Spec {
            hidden: 1024,
            ffn: 3584,
            layers: 24,
            interval: 4,
            heads: 8,
            kv_heads: 2,
            head_dim: 256,
            rot: 64,
            sections: [11, 11, 10, 0],
            conv_kernel: 4,
            state: 128,
            k_heads: 16,
            v_heads: 16,
            context: 32_768,
            quant: GgmlDType::Q8_0,
            seed: 8,
            mtp: true,
            mirror: false,
            mirror_noise: 0.0,
        },
        Ok("mirror") => Qwen35Spec {
            context: 4096,
            mtp: true,
            mirror: true,
            seed: 38,
            ..Qwen35Spec::default()
        },
        Ok(s) if s.starts_with("mirror-noise-") => Qwen35Spec {
            context: 4096,
            mtp: true,
            mirror: true,
            mirror_noise: s["mirror-noise-".len()..]
                .parse()
                .expect("mirror-noise-AMPLITUDE"),
            seed: 39,
            ..Qwen35Spec::default()
        },
        _ => Qwen35Spec {
            context: 4096,
            mtp: true,
            seed: 37,
            ..Qwen35Spec::default()
        },
    };
    write_qwen35_gguf(Path::new(&out), &spec).unwrap();
}
