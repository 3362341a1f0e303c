//! Speculative decoding against plain decoding: with prompt lookup drafting, greedy output is
//! the same token for token as without speculation, at 1 and 3 concurrent sequences, with
//! chunked prefill mixed into verify steps, on a synthetic model and on the default model; the
//! engine's events count what was proposed and accepted; sampled decoding verifies by
//! rejection sampling; bad settings are refused.

use crate::common;

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, EventKind, Request};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::model::family::Model;
use tokfire::model::Kernels;
use tokfire::spec::{lookup::Lookup, model_drafter::ModelDrafter, SpecConfig, SpecMethod};

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

/// Runs `prompts` to completion; returns each output and (proposed, accepted, verify steps,
/// steps that verified while another sequence prefilled).
fn run(
    model: &Model,
    cfg: SchedulerConfig,
    prompts: &[Vec<u32>],
    n: usize,
    stop: &[u32],
    k: Option<usize>,
) -> (Vec<Vec<u32>>, [usize; 4]) {
    let mut e = Engine::new(model, cfg, SamplingConfig::default());
    if let Some(k) = k {
        e.set_speculation(Box::new(Lookup::new(1, 3)), k).unwrap();
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
    let mut c = [0; 4];
    let mut prefill_in_step = false;
    let mut mixed_counted = false;
    for ev in e.events() {
        match ev.kind {
            EventKind::StepStart { prefill_tokens, .. } => {
                prefill_in_step = prefill_tokens > 0;
                mixed_counted = false;
            }
            EventKind::Verified { proposed, accepted } => {
                c[0] += proposed;
                c[1] += accepted;
                c[2] += 1;
                if prefill_in_step && !mixed_counted {
                    c[3] += 1;
                    mixed_counted = true;
                }
            }
            _ => {}
        }
    }
    let outs = (0..prompts.len())
        .map(|i| e.output(i as u64).unwrap().to_vec())
        .collect();
    (outs, c)
}

fn synthetic_prompts() -> Vec<Vec<u32>> {
    vec![
        vec![40, 71, 3, 200, 17, 40, 71, 3, 200, 17, 40, 71],
        vec![5, 6, 7, 5, 6, 7, 5, 6],
        (10..40).chain(10..30).collect(),
        vec![99; 12],
    ]
}

#[test]
fn lookup_greedy_equals_plain_greedy_on_a_synthetic_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    lookup_greedy_equals_plain_greedy(&load_with(&path, WeightDType::Q, Kernels::Ours).model);
}

/// The same on candle's path (the code a GPU runs), on `TOKFIRE_TEST_DEVICE` (default: the CPU).
#[test]
fn lookup_greedy_equals_plain_greedy_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    let device = test_device();
    lookup_greedy_equals_plain_greedy(
        &load_on(&path, WeightDType::Q, Kernels::Candle, device).model,
    );
}

/// On Qwen3.5, whose recurrent state rolls back through its snapshots.
#[test]
fn lookup_greedy_equals_plain_greedy_on_qwen35() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen35.gguf");
    write_qwen35_gguf(&path, &Qwen35Spec::default()).unwrap();
    lookup_greedy_equals_plain_greedy(&load(&path, WeightDType::Q).model);
}

fn lookup_greedy_equals_plain_greedy(m: &Model) {
    let prompts = synthetic_prompts();
    let n = 24;
    for (name, c) in [
        ("1 seq", cfg(1, 512, 512)),
        ("3 seqs", cfg(3, 512, 512)),
        ("3 seqs, chunked", cfg(3, 16, 5)),
    ] {
        let (plain, _) = run(m, c, &prompts, n, &[], None);
        for k in [1, 4] {
            let (spec, counts) = run(m, c, &prompts, n, &[], Some(k));
            assert_eq!(spec, plain, "{name}, k={k}: speculative output differs");
            assert!(counts[0] > 0, "{name}, k={k}: nothing was proposed");
            assert!(counts[1] > 0, "{name}, k={k}: nothing was accepted");
            assert!(counts[1] <= counts[0]);
        }
    }
    // Chunked prefill of later requests shares steps with verification of earlier ones.
    let (_, counts) = run(m, cfg(3, 16, 5), &prompts, n, &[], Some(4));
    assert!(counts[3] > 0, "no verify step carried a prefill chunk");
}

#[test]
fn a_stop_token_inside_an_accepted_draft_ends_the_sequence_there() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    let prompts = synthetic_prompts();
    let (free, _) = run(m, cfg(3, 512, 512), &prompts, 24, &[], None);
    // Stop on a token the first sequence generates late, so it can sit inside a draft.
    let stop = [*free[0].last().unwrap()];
    let (plain, _) = run(m, cfg(3, 512, 512), &prompts, 24, &stop, None);
    let (spec, _) = run(m, cfg(3, 512, 512), &prompts, 24, &stop, Some(4));
    assert_eq!(spec, plain);
    assert!(plain[0].len() < 24 || !plain[0].contains(&stop[0]));
}

#[test]
fn lookup_greedy_equals_plain_greedy_on_the_default_model() {
    let loaded = load(&default_model_path(), WeightDType::Q);
    let m = &loaded.model;
    let enc = |s: &str| loaded.tokenizer.encode(s).unwrap();
    let prompts = vec![
        enc("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n"),
        enc("Repeat exactly: the quick brown fox jumps over the lazy dog. The quick brown fox"),
        enc("1, 2, 3, 4, 5, 6, 7, 8,"),
    ];
    let eos: Vec<u32> = loaded.tokenizer.info.eos_id.into_iter().collect();
    for (name, c) in [
        ("1 job", cfg(1, 2048, 2048)),
        ("3 jobs", cfg(3, 2048, 2048)),
    ] {
        let (plain, _) = run(m, c, &prompts, 32, &eos, None);
        let (spec, counts) = run(m, c, &prompts, 32, &eos, Some(4));
        assert_eq!(spec, plain, "{name}: speculative output differs");
        assert!(
            counts[1] > 0,
            "{name}: lookup accepted nothing on repetitive prompts"
        );
    }
}

#[test]
fn bad_speculation_settings_are_refused_with_the_flag() {
    let e = SpecConfig {
        k: 0,
        method: SpecMethod::Lookup,
        ..SpecConfig::default()
    }
    .validate(0.0)
    .unwrap_err();
    assert!(e.to_string().contains("--spec-k"), "{e}");
    // Sampled decoding is accepted: it verifies by rejection sampling.
    assert!(SpecConfig {
        method: SpecMethod::Lookup,
        ..SpecConfig::default()
    }
    .validate(0.7)
    .is_ok());
    let e = SpecMethod::parse("medusa").unwrap_err();
    assert!(e.to_string().contains("unknown drafter"), "{e}");
    assert!(tokfire::spec::parse_ngram("3..1").is_err());
    assert_eq!(tokfire::spec::parse_ngram("2..4").unwrap(), (2, 4));
}

/// Runs `prompts` with `sampling`, prompt lookup drafting when `k` is given; the outputs and the
/// draft tokens accepted.
fn run_sampled(
    model: &Model,
    sampling: &SamplingConfig,
    prompts: &[Vec<u32>],
    k: Option<usize>,
) -> (Vec<Vec<u32>>, usize) {
    let mut e = Engine::new(model, cfg(3, 16, 5), sampling.clone());
    if let Some(k) = k {
        e.set_speculation(Box::new(Lookup::new(1, 3)), k).unwrap();
    }
    for (i, p) in prompts.iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p.clone(),
            max_new: 20,
            stop: vec![],
        })
        .unwrap();
    }
    e.run_to_completion().unwrap();
    let accepted = e
        .events()
        .iter()
        .map(|ev| match ev.kind {
            EventKind::Verified { accepted, .. } => accepted,
            _ => 0,
        })
        .sum();
    let outs = (0..prompts.len())
        .map(|i| e.output(i as u64).unwrap().to_vec())
        .collect();
    (outs, accepted)
}

/// Sampled speculation goes through the rejection rule: with top-k 1 the target's distribution
/// is a point mass, so the rule must reproduce greedy output exactly (a wrong residual or
/// acceptance would not); with a wide distribution it still runs, proposes and accepts.
#[test]
fn sampled_speculation_verifies_by_rejection_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    let prompts = synthetic_prompts();
    let (greedy, _) = run_sampled(m, &SamplingConfig::default(), &prompts, None);
    let point = SamplingConfig {
        temperature: 0.8,
        top_k: 1,
        ..SamplingConfig::default()
    };
    let (spec, accepted) = run_sampled(m, &point, &prompts, Some(4));
    assert_eq!(
        spec, greedy,
        "top-k 1 sampling with speculation is not greedy"
    );
    assert!(accepted > 0);
    let wide = SamplingConfig {
        temperature: 0.8,
        ..SamplingConfig::default()
    };
    let (outs, _) = run_sampled(m, &wide, &prompts, Some(4));
    assert!(outs.iter().all(|o| o.len() == 20));
}

#[test]
fn the_scheduler_budgets_draft_tokens_like_any_other() {
    use tokfire::engine::scheduler::Scheduler;
    let mut s = Scheduler::new(cfg(2, 8, 8));
    s.set_draft_tokens(4);
    s.submit(0, 3, 4).unwrap();
    s.submit(1, 3, 10).unwrap();
    let p = s.schedule();
    assert!(
        p.items.iter().all(|i| i.draft == 0),
        "prefill carries no draft"
    );
    for it in &p.items {
        s.complete(it, false);
    }
    let p = s.schedule();
    // Request 0 may gain at most 3 more tokens (limit 4, 1 sampled): 1 decode + 2 drafts.
    assert_eq!(p.items[0].draft, 2);
    // Request 1 gets what is left of the 8-token step: 1 decode + 4 drafts.
    assert_eq!(p.items[1].draft, 4);
    assert_eq!(p.tokens(), 8);
    assert!(s.complete_accepted(&p.items[0], 2, false), "limit reached");
    assert!(!s.complete_accepted(&p.items[1], 1, false));
    let p = s.schedule();
    assert_eq!(
        (p.items[0].id, p.items[0].start),
        (1, 5),
        "cache holds accepted drafts"
    );
}

/// Runs `prompts` with the model's first `layers` layers drafting; returns outputs and
/// (proposed, accepted).
fn run_layerskip(
    model: &Model,
    cfg: SchedulerConfig,
    prompts: &[Vec<u32>],
    n: usize,
    layers: usize,
) -> (Vec<Vec<u32>>, (usize, usize)) {
    let mut e = Engine::new(model, cfg, SamplingConfig::default());
    e.set_speculation(
        Box::new(ModelDrafter::new(
            model.as_llama().expect("a llama model"),
            layers,
        )),
        3,
    )
    .unwrap();
    for (i, p) in prompts.iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p.clone(),
            max_new: n,
            stop: vec![],
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
fn model_drafting_greedy_equals_plain_greedy_and_the_full_model_drafts_perfectly() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    let prompts = synthetic_prompts();
    for (name, c) in [
        ("1 seq", cfg(1, 512, 512)),
        ("3 seqs, chunked", cfg(3, 16, 5)),
    ] {
        let (plain, _) = run(m, c, &prompts, 16, &[], None);
        // The target drafting for itself: every proposal is what it then verifies.
        let (spec, (p, a)) = run_layerskip(m, c, &prompts, 16, m.as_llama().unwrap().cfg.layers);
        assert_eq!(spec, plain, "{name}: self-drafted output differs");
        assert!(p > 0 && a == p, "{name}: self-draft accepted {a} of {p}");
        // Layer-skip: first layer only.
        let (spec, (p, _)) = run_layerskip(m, c, &prompts, 16, 1);
        assert_eq!(spec, plain, "{name}: layer-skip output differs");
        assert!(p > 0, "{name}: layer-skip proposed nothing");
    }
    let all = SpecConfig {
        method: SpecMethod::LayerSkip {
            layers: m.as_llama().unwrap().cfg.layers,
        },
        ..SpecConfig::default()
    };
    let e = tokfire::spec::drafter(&all, m).err().unwrap();
    assert!(e.to_string().contains("layerskip"), "{e}");
}

#[test]
fn layer_skip_greedy_equals_plain_greedy_on_the_default_model() {
    let loaded = load(&default_model_path(), WeightDType::Q);
    let m = &loaded.model;
    let enc = |s: &str| loaded.tokenizer.encode(s).unwrap();
    let prompts = vec![
        enc("The capital of France is"),
        enc("def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
        enc("1, 2, 3, 4, 5, 6, 7, 8,"),
    ];
    let c = cfg(3, 2048, 2048);
    let (plain, _) = run(m, c, &prompts, 16, &[], None);
    let (spec, (p, a)) = run_layerskip(m, c, &prompts, 16, m.as_llama().unwrap().cfg.layers / 2);
    assert_eq!(spec, plain, "layer-skip output differs");
    assert!(p > 0 && a <= p);
}
