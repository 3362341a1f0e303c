//! Unit tests of `crate::record::summary`.

use super::*;
use crate::record::{StepSample, TaskSample};

fn task(job: usize, start: f64, completion: f64, tokens: usize, outcome: Outcome) -> TaskSample {
    TaskSample {
        job,
        task: "t".into(),
        turns: 1,
        start_s: start,
        queue_wait_s: 0.0,
        ttft_s: Some(0.1),
        completion_s: completion,
        prompt_tokens: 5,
        reused_tokens: 0,
        first_turn_reused: 0,
        output_tokens: tokens,
        prompt_tok_s: None,
        tpot_s: None,
        gaps_ms: vec![],
        hit_limit: false,
        outcome,
        tool_calls: vec![],
        output: String::new(),
    }
}

fn step(seqs: usize, decode: usize) -> StepSample {
    StepSample {
        at_s: 0.0,
        seqs,
        prefill_tokens: 0,
        decode_tokens: decode,
        forward_s: 0.01,
        step_s: 0.01,
    }
}

#[test]
fn a_fast_total_does_not_hide_a_slow_job() {
    // Two jobs over a 10 s window: one made 200 tokens, the other 40.
    let prefill = StepSample {
        prefill_tokens: 40,
        decode_tokens: 0,
        forward_s: 2.0,
        step_s: 2.0,
        ..step(1, 0)
    };
    let round = RoundRecord {
        index: 1,
        warmup: false,
        wall_s: 10.0,
        forward_s: 9.9,
        disk_read_bytes: None,
        energy_j: None,
        peak_device_bytes: Some(3 << 20),
        tasks: vec![
            task(0, 0.0, 5.0, 100, Outcome::Pass),
            task(0, 5.0, 5.0, 100, Outcome::Pass),
            task(1, 0.0, 10.0, 40, Outcome::Fail { reason: "x".into() }),
        ],
        steps: vec![step(2, 2), step(2, 2), step(1, 1), step(2, 1), prefill],
        spec: Default::default(),
        timeline: vec![],
        sentinel: None,
        quiet_wait: None,
    };
    let mut warm = round.clone();
    warm.warmup = true;
    warm.tasks.clear();
    // A warm-up's device peak (first kernel launches, workspace) is not the level's.
    warm.peak_device_bytes = Some(5 << 20);
    let level = LevelRecord {
        jobs: 2,
        peak_rss_bytes: Some(1),
        peak_kv_bytes: 2,
        peak_state_bytes: 0,
        rounds: vec![warm, round],
    };
    let s = summarize(&level);
    assert_eq!(
        (s.rounds, s.attempted, s.completed, s.passed, s.failed),
        (1, 3, 3, 2, 1)
    );
    assert_eq!(s.aggregate_tok_s, Some(24.0));
    assert_eq!(s.job_tok_s_slowest, Some(4.0));
    assert_eq!(s.job_tok_s_median, Some(12.0));
    assert_eq!(s.decode_steps_by_seqs, BTreeMap::from([(1, 1), (2, 3)]));
    assert_eq!(s.full_step_fraction, Some(0.75));
    assert!((s.harness_fraction.unwrap() - 0.01).abs() < 1e-9);
    assert_eq!(s.drafter_fraction, None, "no drafter, no figure");
    // A drafter's own time is its own, not the harness's.
    let mut drafted = level.clone();
    drafted.rounds[1].forward_s = 8.0;
    drafted.rounds[1].spec.draft_s = 1.5;
    let d = summarize(&drafted);
    assert!((d.harness_fraction.unwrap() - 0.05).abs() < 1e-9);
    assert!((d.drafter_fraction.unwrap() - 0.15).abs() < 1e-9);
    assert_eq!(s.decode_step_ms_median, Some(10.0));
    assert_eq!(s.prefill_step_fraction, Some(0.2));
    assert_eq!(s.tail_kind, "slowest");
    assert_eq!(s.completion_tail_s, Some(10.0));
    assert_eq!(s.peak_device_bytes, Some(3 << 20), "measured rounds only");
}
