//! Speculative decoding with a draft model (`--spec draft:MODEL`): greedy output equals plain
//! greedy output token for token at 1 and 3 concurrent sequences (with chunked prefill mixed
//! into verify steps) on synthetic models and on real weights (target: the default model
//! dequantized to f32; draft: the same file's Q4_1 weights); a draft whose vocabulary differs
//! is refused naming both models.

use crate::common;

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, EventKind, Request};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::model::family::Model;
use tokfire::model::synthetic::{write_gguf, Spec};
use tokfire::spec::model_drafter::ModelDrafter;
use tokfire::spec::second_model::same_vocabulary;

fn cfg(max_seqs: usize, max_batch_tokens: usize, prefill_chunk: usize) -> SchedulerConfig {
    SchedulerConfig {
        max_seqs,
        max_batch_tokens,
        prefill_chunk,
        kv_budget_tokens: 100_000,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    }
}

/// Runs `prompts` on `target`, drafted by `draft` when given; outputs and (proposed, accepted).
fn run(
    target: &Model,
    draft: Option<&Model>,
    c: SchedulerConfig,
    prompts: &[Vec<u32>],
    n: usize,
    stop: &[u32],
) -> (Vec<Vec<u32>>, (usize, usize)) {
    let mut e = Engine::new(target, c, SamplingConfig::default());
    if let Some(d) = draft {
        e.set_speculation(Box::new(ModelDrafter::whole(d)), 4)
            .unwrap();
    }
    for (i, p) in prompts.iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p.clone(),
            max_new: n,
            stop: stop.to_vec(),
        })
        .unwrap();
    }
    e.run_to_completion().unwrap();
    let (mut p, mut a) = (0, 0);
    for ev in e.events() {
        if let EventKind::Verified { proposed, accepted } = ev.kind {
            p += proposed;
            a += accepted;
        }
    }
    let outs = (0..prompts.len())
        .map(|i| e.output(i as u64).unwrap().to_vec())
        .collect();
    (outs, (p, a))
}

#[test]
fn draft_model_greedy_equals_plain_greedy_on_synthetic_models() {
    let dir = tempfile::tempdir().unwrap();
    let file = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    let target = load(&file, WeightDType::F32);
    // The same weights quantized (close to the target) and an unrelated one-layer model.
    let close = load(&file, WeightDType::Q);
    let other_path = dir.path().join("other.gguf");
    write_gguf(
        &other_path,
        &Spec {
            layers: 1,
            seed: 9,
            ..Spec::default()
        },
    )
    .unwrap();
    let other = load(&other_path, WeightDType::Q);
    let prompts: Vec<Vec<u32>> = vec![
        vec![40, 71, 3, 200, 17, 40, 71, 3],
        (10..40).collect(),
        vec![99; 12],
    ];
    for (name, c) in [
        ("1 seq", cfg(1, 512, 512)),
        ("3 seqs", cfg(3, 512, 512)),
        ("3 seqs, chunked", cfg(3, 16, 5)),
    ] {
        let (plain, _) = run(&target.model, None, c, &prompts, 20, &[]);
        for (draft_name, d) in [("close", &close), ("other", &other)] {
            let (spec, (p, a)) = run(&target.model, Some(&d.model), c, &prompts, 20, &[]);
            assert_eq!(spec, plain, "{name}, {draft_name} draft: output differs");
            assert!(p > 0, "{name}, {draft_name}: nothing proposed");
            assert!(a <= p);
        }
        let (_, (p, a)) = run(&target.model, Some(&close.model), c, &prompts, 20, &[]);
        assert!(
            a * 2 > p,
            "{name}: the quantized twin accepted only {a} of {p}"
        );
    }
}

/// Qwen3.5 target and drafts: both roll their recurrent state back through snapshots.
#[test]
fn draft_model_greedy_equals_plain_greedy_on_qwen35() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, spec: Qwen35Spec| {
        let path = dir.path().join(name);
        write_qwen35_gguf(&path, &spec).unwrap();
        load(&path, WeightDType::Q)
    };
    let target = write("target.gguf", Qwen35Spec::default());
    let twin = write("twin.gguf", Qwen35Spec::default());
    let other = write(
        "other.gguf",
        Qwen35Spec {
            layers: 2,
            seed: 36,
            ..Qwen35Spec::default()
        },
    );
    let prompts: Vec<Vec<u32>> = vec![
        vec![40, 71, 3, 200, 17, 40, 71, 3],
        (10..40).collect(),
        vec![99; 12],
    ];
    for (name, c) in [
        ("1 seq", cfg(1, 512, 512)),
        ("3 seqs, chunked", cfg(3, 16, 5)),
    ] {
        let (plain, _) = run(&target.model, None, c, &prompts, 20, &[]);
        for (draft_name, d) in [("twin", &twin), ("other", &other)] {
            let (spec, (p, a)) = run(&target.model, Some(&d.model), c, &prompts, 20, &[]);
            assert_eq!(spec, plain, "{name}, {draft_name} draft: output differs");
            assert!(
                p > 0 && a <= p,
                "{name}, {draft_name}: proposed {p}, accepted {a}"
            );
            if draft_name == "twin" {
                assert_eq!(a, p, "{name}: the target's own weights accept every draft");
            }
        }
    }
}

/// Layer-skip on Qwen3.5: its first layers (KV and state for those only) draft for it.
#[test]
fn layer_skip_greedy_equals_plain_greedy_on_qwen35() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen35.gguf");
    write_qwen35_gguf(&path, &Qwen35Spec::default()).unwrap();
    let target = load(&path, WeightDType::Q);
    let q = target.model.as_qwen35().unwrap();
    let prompts: Vec<Vec<u32>> = vec![vec![40, 71, 3, 200, 17, 40, 71, 3], (10..40).collect()];
    let run_with = |layers: Option<usize>| {
        let mut e = Engine::new(&target.model, cfg(2, 16, 5), SamplingConfig::default());
        if let Some(l) = layers {
            e.set_speculation(Box::new(ModelDrafter::first_qwen35(q, l)), 3)
                .unwrap();
        }
        for (i, p) in prompts.iter().enumerate() {
            let r = Request {
                id: i as u64,
                prompt: p.clone(),
                max_new: 20,
                stop: Vec::new(),
            };
            e.submit(r).unwrap();
        }
        e.run_to_completion().unwrap();
        let proposed: usize = e
            .events()
            .iter()
            .map(|ev| match ev.kind {
                EventKind::Verified { proposed, .. } => proposed,
                _ => 0,
            })
            .sum();
        let outs: Vec<Vec<u32>> = (0..prompts.len())
            .map(|i| e.output(i as u64).unwrap().to_vec())
            .collect();
        (outs, proposed)
    };
    let (plain, _) = run_with(None);
    for layers in [1, 3] {
        let (spec, proposed) = run_with(Some(layers));
        assert_eq!(spec, plain, "layerskip:{layers}: output differs");
        assert!(proposed > 0, "layerskip:{layers}: nothing proposed");
    }
}

#[test]
fn draft_model_greedy_equals_plain_greedy_on_real_weights() {
    let path = default_model_path();
    let target = load(&path, WeightDType::F32);
    let draft = load(&path, WeightDType::Q);
    let enc = |s: &str| target.tokenizer.encode(s).unwrap();
    let prompts = [
        enc("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n"),
        enc("The capital of France is"),
        enc("1, 2, 3, 4, 5, 6,"),
    ];
    let eos: Vec<u32> = target.tokenizer.info.eos_id.into_iter().collect();
    for (name, c, n) in [
        ("1 job", cfg(1, 2048, 2048), 1),
        ("3 jobs", cfg(3, 64, 16), 3),
    ] {
        let ps = &prompts[..n];
        let (plain, _) = run(&target.model, None, c, ps, 24, &eos);
        let (spec, (p, a)) = run(&target.model, Some(&draft.model), c, ps, 24, &eos);
        assert_eq!(spec, plain, "{name}: speculative output differs");
        assert!(p > 0 && a > 0, "{name}: proposed {p}, accepted {a}");
    }
}

#[test]
fn a_draft_with_another_vocabulary_is_refused_naming_both_models() {
    let dir = tempfile::tempdir().unwrap();
    let llama = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let gemma_path = dir.path().join("gemma.gguf");
    tokfire::model::synthetic_gemma::write_gemma_gguf(&gemma_path, &Default::default()).unwrap();
    let gemma = load(&gemma_path, WeightDType::Q);
    let e = same_vocabulary(
        "tiny-llama",
        &llama.tokenizer,
        "tiny-gemma",
        &gemma.tokenizer,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("tiny-llama") && e.contains("tiny-gemma") && e.contains("vocabulary"),
        "{e}"
    );
    assert!(same_vocabulary("a", &llama.tokenizer, "b", &llama.tokenizer).is_ok());
}
