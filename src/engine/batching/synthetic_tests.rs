//! Synthetic acceptance in the engine: drafting the greedy output of a reference pass, spoiled
//! at the asked rate, keeps the greedy output, and position 1 is kept at that rate (within a
//! binomial tolerance) over the real verify steps.

use crate::config::SamplingConfig;
use crate::engine::batching::{Engine, EventKind, Request};
use crate::engine::scheduler::SchedulerConfig;
use crate::model::synthetic::{load_gguf_for_test, Spec};
use crate::spec::synthetic::{Reference, Synthetic};

/// `kept / reached` lies within 4.5 standard deviations of `p`.
fn near(p: f64, (reached, kept): (u64, u64)) {
    let n = reached as f64;
    let sd = (p * (1.0 - p) / n).sqrt().max(1e-9);
    let got = kept as f64 / n;
    assert!(
        (got - p).abs() <= 4.5 * sd + 1e-12,
        "kept {got:.4} of {n} verifies; asked {p} (sd {sd:.4})"
    );
}

fn sched() -> SchedulerConfig {
    SchedulerConfig {
        max_seqs: 4,
        max_batch_tokens: 256,
        prefill_chunk: 64,
        kv_budget_tokens: 10_000,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    }
}

#[test]
fn an_engine_drafting_synthetically_keeps_the_greedy_output_at_the_asked_rate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let loaded = load_gguf_for_test(dir.path(), &Spec::default());
    let prompts: [&[u32]; 3] = [
        &[40, 71, 3, 200, 17],
        &[9, 120, 64, 5],
        &[77, 78, 79, 80, 81, 82],
    ];
    let n = 60;
    let submit = |e: &mut Engine, i: usize| {
        e.submit(Request {
            id: i as u64,
            prompt: prompts[i].to_vec(),
            max_new: n,
            stop: Vec::new(),
        })
        .expect("submit");
    };
    let mut plain = Engine::new(&loaded.model, sched(), SamplingConfig::default());
    (0..prompts.len()).for_each(|i| submit(&mut plain, i));
    plain.run_to_completion().expect("plain run");
    let outputs: Vec<Vec<u32>> = (0..prompts.len())
        .map(|i| plain.output(i as u64).expect("finished").to_vec())
        .collect();
    let reference = Reference {
        transcripts: (0..prompts.len())
            .map(|i| [prompts[i], &outputs[i][..]].concat())
            .collect(),
    };

    let mut e = Engine::new(&loaded.model, sched(), SamplingConfig::default());
    e.set_speculation(Box::new(Synthetic::new(&[0.7], 42, &reference)), 3)
        .expect("k = 3");
    (0..prompts.len()).for_each(|i| submit(&mut e, i));
    e.run_to_completion().expect("speculative run");
    for (i, want) in outputs.iter().enumerate() {
        assert_eq!(e.output(i as u64).unwrap(), &want[..], "request {i}");
    }
    // Position 1 is kept with probability 0.7 in every verify that drafted it.
    let (mut reached, mut kept) = (0, 0);
    for ev in e.events() {
        if let EventKind::Verified { proposed, accepted } = ev.kind {
            reached += u64::from(proposed > 0);
            kept += u64::from(accepted > 0);
        }
    }
    assert!(reached >= 40, "only {reached} verifies");
    near(0.7, (reached, kept));
}
