//! Batching policies and the scheduler timeline through the real engine: every policy gives
//! exactly the outputs of one-at-a-time generation (greedy), and the timeline's per-step counts
//! add up (admitted = finished + still running; tokens per step = the tokens the forward fed),
//! on a synthetic model and at 3 jobs on real weights.

use crate::common;

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::bench::round::{run_round, RoundSetup};
use tokfire::bench::timeline::timeline;
use tokfire::config::schedule::Schedule;
use tokfire::config::{SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, Event, EventKind, Request};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::record::profile::PlanRow;

const POLICIES: [Schedule; 3] = [
    Schedule::Fifo,
    Schedule::DecodeFirst,
    Schedule::PrefillFirst,
];

fn prompts() -> Vec<Vec<u32>> {
    vec![
        (10..40).collect(),
        vec![5, 6, 7],
        vec![40, 71, 3, 200, 17, 90, 150],
        vec![99; 21],
        vec![1, 2],
    ]
}

fn cfg(schedule: Schedule, kv: usize) -> SchedulerConfig {
    SchedulerConfig {
        max_seqs: 3,
        max_batch_tokens: 12,
        prefill_chunk: 8,
        kv_budget_tokens: kv,
        schedule,
        prefix_cache_tokens: 0,
    }
}

/// The timeline's counts agree with each other at every step and with the fed tokens of each
/// step (`fed[i]` = prefill and decode tokens of step i as its events tell them).
fn check_counts(timeline: &[PlanRow], fed: &[(u64, u64)], requests: u64) {
    assert_eq!(timeline.len(), fed.len(), "one row per step");
    let (mut admitted, mut preempted, mut finished) = (0, 0, 0);
    for (row, &(prefill, decode)) in timeline.iter().zip(fed) {
        admitted += row.admitted;
        preempted += row.preempted;
        assert_eq!(
            admitted - preempted,
            finished + row.running,
            "admitted = finished + running"
        );
        finished += row.finished;
        assert_eq!(
            (row.prefill_tokens, row.decode_tokens),
            (prefill, decode),
            "tokens per step"
        );
        assert!(row.tokens() >= 1 && row.kv_tokens >= row.tokens());
    }
    let last = timeline.last().expect("steps ran");
    assert_eq!(finished, requests, "every request finished once");
    assert_eq!(last.waiting, 0);
}

/// Per step: prompt tokens of its prefill chunks and its decode tokens (fed tokens minus
/// prefill), from the step's own events.
fn fed_per_step(events: &[Event]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut open: Option<(u64, u64)> = None;
    for ev in events {
        match ev.kind {
            EventKind::StepStart { decode_tokens, .. } => open = Some((0, decode_tokens as u64)),
            EventKind::PrefillChunk { tokens } => {
                if let Some(o) = open.as_mut() {
                    o.0 += tokens as u64;
                }
            }
            EventKind::StepEnd { .. } => out.extend(open.take()),
            _ => {}
        }
    }
    out
}

#[test]
fn every_policy_equals_one_at_a_time_and_its_timeline_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(
        &synthetic_gguf(dir.path(), GgmlDType::Q8_0, false),
        WeightDType::Q,
    );
    let m = &loaded.model;
    let n = 9;
    let alone: Vec<Vec<u32>> = prompts().iter().map(|p| solo(m, p, n).tokens).collect();
    for policy in POLICIES {
        for kv in [10_000, 45] {
            let mut e = Engine::new(m, cfg(policy, kv), SamplingConfig::default());
            for (i, p) in prompts().into_iter().enumerate() {
                let r = Request {
                    id: i as u64,
                    prompt: p,
                    max_new: n,
                    stop: vec![],
                };
                e.submit(r).unwrap();
            }
            e.run_to_completion().unwrap();
            for (i, want) in alone.iter().enumerate() {
                assert_eq!(
                    e.output(i as u64).unwrap(),
                    want.as_slice(),
                    "{policy} kv {kv}: request {i}"
                );
            }
            let rows = timeline(e.events());
            check_counts(&rows, &fed_per_step(e.events()), prompts().len() as u64);
            let kv_peak = rows.iter().map(|r| r.kv_tokens).max().unwrap();
            assert!(kv_peak as usize <= kv, "{policy}: KV {kv_peak} over {kv}");
            if kv == 45 {
                assert!(
                    rows.iter().any(|r| r.preempted > 0),
                    "{policy}: tight KV preempts"
                );
            }
        }
    }
}

#[test]
fn three_jobs_on_real_weights_have_a_timeline_that_adds_up_under_every_policy() {
    let loaded = load(&default_model_path(), WeightDType::Q);
    let workload = tokfire::workload::load("chat").unwrap();
    let mut outputs = Vec::new();
    for policy in POLICIES {
        let setup = RoundSetup {
            runtime: &tokfire::kernels::Runtime::new(2, tokfire::kernels::detect()).unwrap(),
            loaded: &loaded,
            workload: &workload,
            scheduler: SchedulerConfig {
                max_seqs: 8,
                max_batch_tokens: 512,
                prefill_chunk: 64,
                kv_budget_tokens: 16384,
                schedule: policy,
                prefix_cache_tokens: 0,
            },
            sampling: SamplingConfig::default(),
            max_tokens: Some(8),
            stop: None,
            spec: Default::default(),
            draft: None,
            reference: None,
            think: Default::default(),
        };
        let out = run_round(&setup, 3, |_, _| {}).unwrap();
        let requests = out.job_of.len() as u64;
        let r = &out.record;
        assert_eq!(
            r.timeline,
            timeline(&out.events),
            "the record keeps the timeline"
        );
        let fed: Vec<(u64, u64)> = r
            .steps
            .iter()
            .map(|s| (s.prefill_tokens as u64, s.decode_tokens as u64))
            .collect();
        assert_eq!(fed, fed_per_step(&out.events));
        check_counts(&r.timeline, &fed, requests);
        assert!(
            out.record.timeline.iter().any(|r| r.decode_tokens == 3),
            "{policy}: 3 decodes in a step"
        );
        let mut texts: Vec<(String, usize, String)> = out
            .record
            .tasks
            .iter()
            .map(|t| (t.task.clone(), t.job, t.output.clone()))
            .collect();
        texts.sort();
        outputs.push(texts);
    }
    assert_eq!(outputs[0], outputs[1], "decode-first changed an answer");
    assert_eq!(outputs[0], outputs[2], "prefill-first changed an answer");
}
