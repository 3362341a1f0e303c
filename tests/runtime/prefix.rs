//! The prefix cache against no prefix cache: greedy output is the same token for token, alone
//! and at 3 concurrent sequences with chunked prefill, on a synthetic model and on the default
//! model; a second prompt with the same long system prompt reuses at least 90 % of its tokens;
//! the cache stays within its budget while it evicts.

use crate::common;

use std::sync::OnceLock;

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, EventKind, Request};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::model::family::Model;
use tokfire::model::prefix::BLOCK_TOKENS;
use tokfire::model::Kernels;
use tokfire::model::Loaded;

fn cfg(max_seqs: usize, prefill_chunk: usize, prefix: usize) -> SchedulerConfig {
    SchedulerConfig {
        max_seqs,
        max_batch_tokens: 512,
        prefill_chunk,
        kv_budget_tokens: 20_000,
        schedule: Default::default(),
        prefix_cache_tokens: prefix,
    }
}

/// Outputs and prompt tokens reused per request, requests submitted in `waves` (each wave
/// once the previous one has run `gap` steps; `usize::MAX`: once it finished).
struct Outcome {
    outputs: Vec<Vec<u32>>,
    reused: Vec<usize>,
    peak_blocks: u64,
}

fn run(
    model: &Model,
    cfg: SchedulerConfig,
    waves: &[Vec<Vec<u32>>],
    gap: usize,
    n: usize,
    stop: &[u32],
) -> Outcome {
    let mut e = Engine::new(model, cfg, SamplingConfig::default());
    let mut id = 0u64;
    for wave in waves {
        for p in wave {
            e.submit(Request {
                id,
                prompt: p.clone(),
                max_new: n,
                stop: stop.to_vec(),
            })
            .unwrap();
            id += 1;
        }
        if gap == usize::MAX {
            e.run_to_completion().unwrap();
        } else {
            for _ in 0..gap {
                e.step().unwrap();
            }
        }
    }
    e.run_to_completion().unwrap();
    let mut reused = vec![0; id as usize];
    for ev in e.events() {
        if let (Some(i), EventKind::PrefixReused { tokens }) = (ev.id, &ev.kind) {
            reused[i as usize] += tokens;
        }
    }
    Outcome {
        outputs: (0..id).map(|i| e.output(i).unwrap().to_vec()).collect(),
        reused,
        peak_blocks: e.prefix_stats().map_or(0, |s| s.peak_blocks),
    }
}

/// Prompts that share a 40-token prefix, each with its own tail.
fn shared_prompts(tails: std::ops::Range<u32>) -> Vec<Vec<u32>> {
    let prefix: Vec<u32> = (0..40).map(|i| 100 + (i * 7) % 150).collect();
    tails
        .map(|t| {
            let mut p = prefix.clone();
            p.extend((0..3 + t % 5).map(|j| 3 + (t * 37 + j) % 250));
            p
        })
        .collect()
}

#[test]
fn synthetic_outputs_are_the_same_with_and_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    same_with_and_without_the_cache(&load_with(&path, WeightDType::Q, Kernels::Ours).model);
}

/// The same on candle's path (the code a GPU runs), on `TOKFIRE_TEST_DEVICE` (default: the CPU).
#[test]
fn cached_and_uncached_outputs_are_the_same_on_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    let device = test_device();
    same_with_and_without_the_cache(&load_on(&path, WeightDType::Q, Kernels::Candle, device).model);
}

/// On Qwen3.5, where a cached prefix restores the recurrent state copied at its block end.
#[test]
fn qwen35_outputs_are_the_same_with_and_without_the_cache() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qwen35.gguf");
    write_qwen35_gguf(&path, &Qwen35Spec::default()).unwrap();
    let loaded = load(&path, WeightDType::Q);
    let m = &loaded.model;
    assert!(
        m.state_bytes_per_seq() > 0,
        "the tiny qwen35 has recurrent state"
    );
    same_with_and_without_the_cache(m);

    // A state copy takes its bytes from the budget: a cache that holds the prompt's blocks but
    // not their state reuses nothing (its blocks cannot be resumed from) and changes nothing.
    let block = m.kv_shape().bytes_per_token() * BLOCK_TOKENS;
    let state_blocks = m.state_bytes_per_seq().div_ceil(block);
    let waves = vec![shared_prompts(0..1), shared_prompts(1..3)];
    let plain = run(m, cfg(1, 512, 0), &waves, usize::MAX, 8, &[]);
    let tight = run(m, cfg(1, 512, 2 * BLOCK_TOKENS), &waves, usize::MAX, 8, &[]);
    assert_eq!(tight.outputs, plain.outputs);
    assert!(tight.reused.iter().all(|&r| r == 0), "{:?}", tight.reused);
    let room = (2 + state_blocks) * BLOCK_TOKENS;
    let enough = run(m, cfg(1, 512, room), &waves, usize::MAX, 8, &[]);
    assert_eq!(enough.outputs, plain.outputs);
    assert_eq!(enough.reused, [0, 2 * BLOCK_TOKENS, 2 * BLOCK_TOKENS]);
}

fn same_with_and_without_the_cache(m: &Model) {
    let waves = vec![
        shared_prompts(0..1),
        shared_prompts(1..4),
        shared_prompts(4..7),
    ];
    for (name, max_seqs, chunk, gap) in [
        ("1 seq, one after another", 1, 512, usize::MAX),
        ("3 seqs, waves 2 steps apart, chunked", 3, 16, 2),
        ("3 seqs, waves 6 steps apart, chunk 5", 3, 5, 6),
    ] {
        let plain = run(m, cfg(max_seqs, chunk, 0), &waves, gap, 12, &[]);
        let cached = run(m, cfg(max_seqs, chunk, 1024), &waves, gap, 12, &[]);
        assert_eq!(cached.outputs, plain.outputs, "{name}: outputs differ");
        assert!(plain.reused.iter().all(|&r| r == 0));
        assert_eq!(cached.reused[0], 0, "{name}: the first prompt is cold");
        let hits = cached.reused.iter().filter(|&&r| r > 0).count();
        assert!(hits >= 3, "{name}: only {hits} prompts reused a prefix");
        assert!(cached.reused.iter().all(|&r| r % BLOCK_TOKENS == 0));
    }
}

#[test]
fn eviction_keeps_the_cache_within_its_budget_and_the_output_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    // Ten different 40-token prompts through a cache of three blocks.
    let waves: Vec<Vec<Vec<u32>>> = (0..10u32)
        .map(|w| vec![(0..40).map(|i| 20 + (w * 13 + i * 3) % 200).collect()])
        .collect();
    let budget = 3 * BLOCK_TOKENS;
    let plain = run(m, cfg(2, 512, 0), &waves, usize::MAX, 6, &[]);
    let cached = run(m, cfg(2, 512, budget), &waves, usize::MAX, 6, &[]);
    assert_eq!(cached.outputs, plain.outputs);
    assert_eq!(
        cached.peak_blocks, 3,
        "never more than the budget's 3 blocks"
    );
}

fn model() -> &'static Loaded {
    static M: OnceLock<Loaded> = OnceLock::new();
    M.get_or_init(|| load(&default_model_path(), WeightDType::Q))
}

const SYSTEM: &str = "You are the front desk of the Harbor Street Library. The library opens at nine in the morning and closes at six in the evening from Monday to Friday, and at four on Saturdays. It is closed on Sundays. Members may borrow up to eight books at a time for three weeks; films and music may be kept for one week. A late book costs twenty cents a day. The reading room is on the second floor, the children's corner is beside the main entrance, and the quiet study rooms on the third floor can be booked for two hours at a time. Printing costs ten cents a page in black and white and fifty cents in colour. Library cards are free for residents and cost fifteen dollars a year for everybody else. The head librarian is Ms. Ada Okafor. Answer visitors' questions briefly and politely, using only these facts.";

#[test]
fn real_weights_reuse_the_system_prompt_and_answer_the_same() {
    let m = model();
    let eos: Vec<u32> = m.tokenizer.info.eos_id.into_iter().collect();
    let questions = [
        "When does the library close on Saturday?",
        "How much is a late book per day?",
        "Who is the head librarian?",
        "Where is the reading room?",
    ];
    let prompts: Vec<Vec<u32>> = questions
        .iter()
        .map(|q| {
            m.tokenizer
                .encode(&format!("{SYSTEM}\n\nQuestion: {q}\nAnswer:"))
                .unwrap()
        })
        .collect();
    let waves = vec![prompts[..1].to_vec(), prompts[1..].to_vec()];
    for (name, max_seqs, gap) in [
        ("one after another", 1, usize::MAX),
        ("3 at once", 3, usize::MAX),
    ] {
        let plain = run(&m.model, cfg(max_seqs, 64, 0), &waves, gap, 16, &eos);
        let cached = run(&m.model, cfg(max_seqs, 64, 4096), &waves, gap, 16, &eos);
        assert_eq!(cached.outputs, plain.outputs, "{name}: outputs differ");
        for (i, p) in prompts.iter().enumerate().skip(1) {
            let share = cached.reused[i] as f64 / p.len() as f64;
            assert!(
                share >= 0.9,
                "{name}: prompt {i} reused {} of {} tokens",
                cached.reused[i],
                p.len()
            );
        }
    }
}
