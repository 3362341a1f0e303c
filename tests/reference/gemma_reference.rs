//! Our Gemma 3 against candle-transformers' stock (non-quantized) `gemma3` on the same tiny
//! synthetic weights, written by the test as safetensors and as GGUF (norms stored as `1 + w`):
//! every prompt position and 20 greedy decode steps, with a prompt longer than the tiny sliding
//! window so the local layers' masking is exercised. Also batched-vs-alone on the synthetic model.
//!
//! The stock model is fed one token at a time: its multi-token mask lets a local query see
//! `window + 1` keys (`j + window < i` is masked) while its decode path (a rotating cache of
//! `window` entries) and transformers and llama.cpp see `window`; token by token it is the
//! reference semantics. It also scales scores by 1/sqrt(head_dim) whatever
//! `query_pre_attn_scalar` says, so the synthetic config sets the two equal.

use crate::common;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::gemma3 as stock;
use common::*;
use tokfire::config::WeightDType;
use tokfire::engine::sampler::argmax;
use tokfire::model::llama::{LogitRows, SeqInput};
use tokfire::model::synthetic_gemma::{write_gemma_gguf, write_gemma_safetensors_dir, GemmaSpec};
use tokfire::model::Loaded;

/// Eleven tokens: more than twice the window of 4.
const PROMPT: [u32; 11] = [2, 270, 40, 275, 90, 268, 7, 150, 271, 33, 200];
const STEPS: usize = 20;
/// Logits are O(1-10); both sides are f32 with the same weights, differing only in the order
/// of float operations (fused projections, attention sums, the 1/sqrt scale).
const TOL: f32 = 2e-3;

/// Every prompt position's logits, then `steps` greedy decode steps' logits.
fn ours(m: &Loaded, steps: usize) -> Vec<Vec<f32>> {
    let mut cache = m.model.new_cache(PROMPT.len() + steps).unwrap();
    let input = SeqInput {
        tokens: &PROMPT,
        logits: LogitRows::All,
    };
    let mut rows: Vec<Vec<f32>> = m
        .model
        .forward(&[input], &mut [&mut cache])
        .unwrap()
        .to_vec2()
        .unwrap();
    for _ in 0..steps {
        let next = [argmax(rows.last().unwrap())];
        let input = SeqInput {
            tokens: &next,
            logits: LogitRows::Last,
        };
        let row = m.model.forward(&[input], &mut [&mut cache]).unwrap();
        rows.push(row.to_vec2::<f32>().unwrap().remove(0));
    }
    rows
}

fn stock_rows(dir: &std::path::Path, steps: usize) -> Vec<Vec<f32>> {
    let cfg: stock::Config =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let files = [dir.join("model.safetensors")];
    let vb = unsafe {
        candle_nn::VarBuilder::from_mmaped_safetensors(&files, DType::F32, &Device::Cpu).unwrap()
    };
    let mut m = stock::Model::new(false, &cfg, vb).unwrap();
    let mut rows = Vec::new();
    let mut feed = |tok: u32, pos: usize, rows: &mut Vec<Vec<f32>>| {
        let x = Tensor::new(&[[tok]], &Device::Cpu).unwrap();
        let y = m.forward(&x, pos).unwrap();
        rows.push(y.flatten_all().unwrap().to_vec1::<f32>().unwrap());
    };
    for (pos, &t) in PROMPT.iter().enumerate() {
        feed(t, pos, &mut rows);
    }
    for i in 0..steps {
        let next = argmax(rows.last().unwrap());
        feed(next, PROMPT.len() + i, &mut rows);
    }
    rows
}

fn assert_close(ours: &[Vec<f32>], stock: &[Vec<f32>], what: &str) {
    assert_eq!(ours.len(), stock.len());
    for (i, (a, b)) in ours.iter().zip(stock).enumerate() {
        assert_eq!(argmax(a), argmax(b), "{what}: row {i} greedy pick differs");
        let d = max_diff(a, b);
        assert!(d <= TOL, "{what}: row {i} logits differ by {d} > {TOL}");
    }
}

#[test]
fn safetensors_and_gguf_match_stock_gemma3() {
    let dir = tempfile::tempdir().unwrap();
    let spec = GemmaSpec::default();
    let st = dir.path().join("st");
    write_gemma_safetensors_dir(&st, &spec).unwrap();
    let gguf = dir.path().join("tiny-gemma.gguf");
    write_gemma_gguf(&gguf, &spec).unwrap();
    let stock = stock_rows(&st, STEPS);
    // The logits must not be flat: soft-capping at 30 still leaves a spread.
    let spread = stock[0].iter().cloned().fold(f32::MIN, f32::max)
        - stock[0].iter().cloned().fold(f32::MAX, f32::min);
    assert!(spread > 1.0, "synthetic logits too flat ({spread})");

    let from_st = load(&st, WeightDType::Q);
    assert!(from_st.model.as_gemma().is_some());
    assert_close(&ours(&from_st, STEPS), &stock, "safetensors");
    let from_gguf = load(&gguf, WeightDType::Q);
    assert_close(&ours(&from_gguf, STEPS), &stock, "gguf");
}

#[test]
fn the_window_matters_and_quantized_gguf_stays_close() {
    // Without the window the same weights give other logits past position 4 (the test above
    // would catch a missing mask), and Q8_0 matrices through our kernels stay near f32.
    let dir = tempfile::tempdir().unwrap();
    let f32_path = dir.path().join("f32.gguf");
    write_gemma_gguf(&f32_path, &GemmaSpec::default()).unwrap();
    let wide = dir.path().join("wide.gguf");
    let spec = GemmaSpec {
        sliding_window: 1024,
        ..GemmaSpec::default()
    };
    write_gemma_gguf(&wide, &spec).unwrap();
    let (a, b) = (
        ours(&load(&f32_path, WeightDType::Q), 0),
        ours(&load(&wide, WeightDType::Q), 0),
    );
    assert!(
        max_diff(&a[3], &b[3]) < 1e-5,
        "inside the window nothing changes"
    );
    assert!(
        max_diff(&a[10], &b[10]) > 1e-2,
        "past the window the local layers must differ"
    );

    let q8 = dir.path().join("q8.gguf");
    let spec = GemmaSpec {
        quant: candle_core::quantized::GgmlDType::Q8_0,
        ..GemmaSpec::default()
    };
    write_gemma_gguf(&q8, &spec).unwrap();
    let m = load(&q8, WeightDType::Q);
    assert!(m.model.storage().0.contains("8"), "{:?}", m.model.storage());
    let q = ours(&m, 0);
    for (i, (x, y)) in q.iter().zip(&a).enumerate() {
        let d = max_diff(x, y);
        assert!(d < 0.5, "row {i}: Q8_0 differs from f32 by {d}");
    }
}

#[test]
fn batched_and_chunked_equal_alone_on_synthetic_gemma() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q8.gguf");
    let spec = GemmaSpec {
        quant: candle_core::quantized::GgmlDType::Q8_0,
        ..GemmaSpec::default()
    };
    write_gemma_gguf(&path, &spec).unwrap();
    let m = load(&path, WeightDType::Q);
    let prompts = [PROMPT.to_vec(), PROMPT[3..].to_vec(), vec![2, 40, 41, 42]];
    let plans: Vec<Plan> = prompts
        .iter()
        .zip([(0, usize::MAX), (1, 3), (2, 1)])
        .map(|(p, (start, chunk))| Plan {
            prompt: p.clone(),
            start,
            chunk,
        })
        .collect();
    let together = batched(&m.model, &plans, 12);
    for (p, t) in prompts.iter().zip(&together) {
        let alone = solo(&m.model, p, 12);
        assert_eq!(t.tokens, alone.tokens);
        for (a, b) in t.logits.iter().zip(&alone.logits) {
            assert_eq!(max_diff(a, b), 0.0);
        }
    }
}

#[test]
fn synthetic_tokenizer_adds_bos_and_matches_specials() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.gguf");
    write_gemma_gguf(&path, &GemmaSpec::default()).unwrap();
    let m = load(&path, WeightDType::Q);
    let ids = m.tokenizer.encode("the abc<end_of_turn>").unwrap();
    // The file has no add_space_prefix key, so a "▁" goes first (llama.cpp's default for
    // SentencePiece): "▁the" is one piece; " abc" has no "▁abc" piece: "▁a" (score -273) is
    // merged before "ab" (-274), so it is "▁a" then "b", "c" ("bc" is not a piece).
    let pieces: Vec<String> = ids
        .iter()
        .map(|&i| m.tokenizer.inner().id_to_token(i).unwrap())
        .collect();
    assert_eq!(pieces, ["<bos>", "▁the", "▁a", "b", "c", "<end_of_turn>"]);
    assert_eq!(ids[0], 2);
    assert_eq!(*ids.last().unwrap(), 5);
    assert_eq!(
        m.tokenizer.decode(&ids[1..]).unwrap(),
        " the abc<end_of_turn>"
    );
    assert!(m.chat.is_none());
}

#[test]
fn linear_rope_scaling_reads_the_same_from_config_json_and_gguf() {
    // Gemma 3 4B and up scale the global layers' RoPE linearly (factor 8); the GGUF side is
    // llama.cpp-checked (fixture family-gemma3-linear), config.json must agree with it, and the
    // scaling must change the logits.
    let dir = tempfile::tempdir().unwrap();
    let spec = GemmaSpec {
        rope_linear: Some(8.0),
        ..GemmaSpec::default()
    };
    let st = dir.path().join("st");
    write_gemma_safetensors_dir(&st, &spec).unwrap();
    let gguf = dir.path().join("scaled.gguf");
    write_gemma_gguf(&gguf, &spec).unwrap();
    let plain = dir.path().join("plain.gguf");
    write_gemma_gguf(&plain, &GemmaSpec::default()).unwrap();
    let a = ours(&load(&gguf, WeightDType::Q), STEPS);
    let b = ours(&load(&st, WeightDType::Q), STEPS);
    assert_close(&a, &b, "linear scaling, config.json vs gguf");
    let c = ours(&load(&plain, WeightDType::Q), STEPS);
    assert!(
        max_diff(&a[10], &c[10]) > 1e-3,
        "the scaling changed nothing"
    );
}
