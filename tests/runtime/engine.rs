//! The continuous-batching engine on a synthetic model: outputs equal one-at-a-time generation
//! whatever the batching, chunking or preemption, and the events prove what was batched.

use crate::common;

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, EventKind, Request};
use tokfire::engine::generate::{generate, GenerateParams};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::model::family::Model;

fn prompts() -> Vec<Vec<u32>> {
    vec![
        vec![40, 71, 3, 200, 17, 90, 150],
        vec![5, 6, 7],
        (10..40).collect(),
        vec![99; 12],
    ]
}

/// The plain reference: one sequence, the whole prompt in one forward, greedy.
fn alone(model: &Model, prompt: &[u32], n: usize) -> Vec<u32> {
    solo(model, prompt, n).tokens
}

fn through_engine(model: &Model, cfg: SchedulerConfig, n: usize) -> Engine<'_> {
    let mut e = Engine::new(model, cfg, SamplingConfig::default());
    for (i, p) in prompts().into_iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p,
            max_new: n,
            stop: vec![],
        })
        .unwrap();
    }
    e.run_to_completion().unwrap();
    e
}

#[test]
fn engine_outputs_equal_alone_under_batching_chunking_and_preemption() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    let n = 10;
    let expected: Vec<Vec<u32>> = prompts().iter().map(|p| alone(m, p, n)).collect();
    let configs = [
        (
            "3 slots",
            SchedulerConfig {
                max_seqs: 3,
                max_batch_tokens: 512,
                prefill_chunk: 512,
                kv_budget_tokens: 10_000,
                schedule: Default::default(),
                prefix_cache_tokens: 0,
            },
        ),
        (
            "chunked",
            SchedulerConfig {
                max_seqs: 4,
                max_batch_tokens: 9,
                prefill_chunk: 5,
                kv_budget_tokens: 10_000,
                schedule: Default::default(),
                prefix_cache_tokens: 0,
            },
        ),
        (
            "preempting",
            SchedulerConfig {
                max_seqs: 4,
                max_batch_tokens: 64,
                prefill_chunk: 64,
                kv_budget_tokens: 60,
                schedule: Default::default(),
                prefix_cache_tokens: 0,
            },
        ),
    ];
    for (name, cfg) in configs {
        let e = through_engine(m, cfg, n);
        for (i, want) in expected.iter().enumerate() {
            assert_eq!(
                e.output(i as u64).unwrap(),
                want.as_slice(),
                "{name}: request {i}"
            );
        }
        let max_seqs = e
            .events()
            .iter()
            .filter_map(|ev| match ev.kind {
                EventKind::StepStart { seqs, .. } => Some(seqs),
                _ => None,
            })
            .max()
            .unwrap();
        assert!(max_seqs >= 3, "{name}: no step carried 3 sequences");
        let preempted = e.events().iter().any(|ev| ev.kind == EventKind::Preempted);
        assert_eq!(preempted, name == "preempting", "{name}: preemption");
    }
}

#[test]
fn events_are_ordered_and_complete() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let e = through_engine(
        &loaded.model,
        SchedulerConfig {
            max_seqs: 2,
            max_batch_tokens: 64,
            prefill_chunk: 64,
            kv_budget_tokens: 10_000,
            schedule: Default::default(),
            prefix_cache_tokens: 0,
        },
        4,
    );
    let ev = e.events();
    assert!(
        ev.windows(2).all(|w| w[0].at <= w[1].at),
        "timestamps go backwards"
    );
    for id in 0..4u64 {
        let kinds: Vec<&EventKind> = ev
            .iter()
            .filter(|x| x.id == Some(id))
            .map(|x| &x.kind)
            .collect();
        assert!(matches!(kinds.first(), Some(EventKind::Submitted { .. })));
        assert!(matches!(
            kinds.last(),
            Some(EventKind::Finished {
                output_tokens: 4,
                ..
            })
        ));
        assert_eq!(
            kinds
                .iter()
                .filter(|k| matches!(k, EventKind::Token { .. }))
                .count(),
            4
        );
        assert_eq!(
            kinds
                .iter()
                .filter(|k| matches!(k, EventKind::Admitted))
                .count(),
            1
        );
    }
}

#[test]
fn an_impossible_request_is_refused_with_the_flag_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let mut e = Engine::new(
        &loaded.model,
        SchedulerConfig {
            max_seqs: 1,
            max_batch_tokens: 8,
            prefill_chunk: 8,
            kv_budget_tokens: 16,
            schedule: Default::default(),
            prefix_cache_tokens: 0,
        },
        SamplingConfig::default(),
    );
    let err = e
        .submit(Request {
            id: 0,
            prompt: vec![1; 12],
            max_new: 8,
            stop: vec![],
        })
        .unwrap_err();
    assert!(err.to_string().contains("--kv-budget"), "{err}");
}

#[test]
fn generate_is_the_engine_with_one_request_and_equals_the_plain_reference() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    for p in prompts() {
        let want = alone(m, &p, 7);
        let params = GenerateParams {
            max_new: 7,
            sampling: SamplingConfig::default(),
            stop: vec![],
        };
        let mut streamed = Vec::new();
        let g = generate(m, &p, &params, |t, _| streamed.push(t)).unwrap();
        assert_eq!(g.tokens, want, "prompt {p:?}");
        assert_eq!(streamed, want);
        assert_eq!(
            (g.prompt_tokens, g.reused_tokens, g.stopped),
            (p.len(), 0, false)
        );
        // One clock for the first token, one per later token.
        assert_eq!(g.steps.len(), want.len() - 1);
        assert!(g.prefill > std::time::Duration::ZERO);
        // A stop token ends it there, not emitted, and says so.
        let stop = GenerateParams {
            stop: vec![want[3]],
            ..params.clone()
        };
        let cut = want.iter().position(|t| *t == want[3]).unwrap();
        let g = generate(m, &p, &stop, |_, _| {}).unwrap();
        assert_eq!(g.tokens, want[..cut], "prompt {p:?}");
        assert!(g.stopped);
    }
    let none = GenerateParams {
        max_new: 3,
        sampling: SamplingConfig::default(),
        stop: vec![],
    };
    let err = generate(m, &[], &none, |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("no tokens"), "{err}");
}
