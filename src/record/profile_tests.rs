//! Profile tests: a scripted schedule with known step times gives known stalls, and the level
//! figures sum the timeline as defined.

use super::*;
use crate::record::TaskSample;
use crate::workload::Outcome;

fn step(prefill: usize, decode: usize, ms: f64) -> StepSample {
    StepSample {
        at_s: 0.0,
        seqs: decode + usize::from(prefill > 0),
        prefill_tokens: prefill,
        decode_tokens: decode,
        forward_s: ms / 1e3 * 0.9,
        step_s: ms / 1e3,
    }
}

fn row(step: &StepSample, skipped: u64) -> PlanRow {
    PlanRow {
        plan_ns: 2_000,
        running: 3,
        waiting: 1,
        prefill_tokens: step.prefill_tokens as u64,
        decode_tokens: step.decode_tokens as u64,
        skipped_decodes: skipped,
        kv_tokens: 100,
        ..PlanRow::default()
    }
}

/// Decode-only steps set the baselines (2 decodes: 12 ms, 1 decode: 8 ms); the prefill steps
/// after them stall by a known amount.
fn script() -> (Vec<StepSample>, Vec<u64>) {
    let steps = vec![
        step(0, 2, 10.0),
        step(0, 2, 12.0),
        step(0, 2, 14.0),
        step(0, 1, 8.0),
        step(100, 2, 30.0), // 18 ms over the 2-decode baseline, for 2 sequences
        step(50, 1, 20.0),  // 12 ms over the 1-decode baseline
        step(60, 0, 25.0),  // 2 ready sequences got nothing: the whole 25 ms each
        step(10, 3, 13.0),  // no 3-decode baseline: the nearest (2) gives 1 ms, 3 sequences
        step(5, 2, 11.0),   // faster than the baseline: no stall
    ];
    let skipped = vec![0, 0, 0, 0, 0, 0, 2, 0, 0];
    (steps, skipped)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn scripted_steps_give_the_known_stalls() {
    let (steps, skipped) = script();
    let timeline: Vec<PlanRow> = steps
        .iter()
        .zip(&skipped)
        .map(|(s, &k)| row(s, k))
        .collect();
    let base = DecodeBaseline::of(steps.iter());
    let mut got: Vec<f64> = stalls(&steps, &timeline, &base)
        .iter()
        .flat_map(|&(s, n)| std::iter::repeat_n(s * 1e3, n as usize))
        .collect();
    got.sort_by(f64::total_cmp);
    let want = [1.0, 1.0, 1.0, 12.0, 18.0, 18.0, 25.0, 25.0];
    assert_eq!(got.len(), want.len(), "{got:?}");
    assert!(got.iter().zip(want).all(|(g, w)| close(*g, w)), "{got:?}");
    // Without a timeline the skipped decodes are unknown and not counted.
    let counted: u64 = stalls(&steps, &[], &base).iter().map(|s| s.1).sum();
    assert_eq!(counted, 6);
}

#[test]
fn level_figures_sum_the_timeline() {
    let (steps, skipped) = script();
    let mut timeline: Vec<PlanRow> = steps
        .iter()
        .zip(&skipped)
        .map(|(s, &k)| row(s, k))
        .collect();
    timeline[4].preempted = 1;
    timeline[4].waiting = 4;
    timeline[5].kv_tokens = 300;
    timeline[5].plan_ns = 9_000;
    let task = TaskSample {
        job: 0,
        task: "t".into(),
        turns: 1,
        start_s: 0.0,
        queue_wait_s: 0.0,
        ttft_s: Some(0.01),
        completion_s: 0.5,
        prompt_tokens: 5,
        reused_tokens: 0,
        first_turn_reused: 0,
        output_tokens: 4,
        prompt_tok_s: None,
        tpot_s: None,
        gaps_ms: vec![100.0, 150.0, 51.0],
        hit_limit: false,
        outcome: Outcome::Pass,
        tool_calls: vec![],
        output: String::new(),
    };
    let round = RoundRecord {
        index: 0,
        warmup: false,
        wall_s: 0.5,
        forward_s: 0.1,
        disk_read_bytes: None,
        energy_j: None,
        peak_device_bytes: None,
        tasks: vec![task],
        steps: steps.clone(),
        spec: Default::default(),
        timeline,
        sentinel: None,
        quiet_wait: None,
    };
    let cfg = SchedulerRecord {
        max_seqs: 3,
        max_batch_tokens: 200,
        prefill_chunk: 100,
        kv_budget_tokens: 600,
        ..Default::default()
    };
    let f = figures(&[&round], &cfg);
    assert!(close(f.plan_us_median.unwrap(), 2.0));
    assert!(close(f.plan_us_max.unwrap(), 9.0));
    assert!(close(
        f.plan_fraction.unwrap(),
        (8.0 * 2.0 + 9.0) * 1e-6 / 0.5
    ));
    assert!(close(f.queue_mean.unwrap(), (8.0 + 4.0) / 9.0));
    assert!(close(f.queue_max.unwrap(), 4.0));
    assert!(close(f.kv_peak_fraction.unwrap(), 0.5));
    let tokens: usize = steps
        .iter()
        .map(|s| s.prefill_tokens + s.decode_tokens)
        .sum();
    assert!(close(f.budget_fill.unwrap(), tokens as f64 / 9.0 / 200.0));
    assert_eq!((f.preemptions, f.stalls), (1, 8));
    assert!(close(f.stall_ms_median.unwrap(), 15.0));
    assert!(close(f.stall_ms_worst.unwrap(), 25.0));
    assert_eq!(f.stall_share, None, "no longer derived");
    // 101 ms of stalls over the 3 decoded tokens (gaps) of the one answer.
    assert!(close(f.stall_ms_per_token.unwrap(), 101.0 / 3.0));
    assert!(close(f.worst_gap_ms.unwrap(), 150.0));
}

#[test]
fn a_timeline_row_is_a_compact_array_and_records_without_one_load() {
    let r = PlanRow {
        plan_ns: 1,
        kv_tokens: 11,
        ..PlanRow::default()
    };
    let json = serde_json::to_string(&r).expect("serializes");
    assert_eq!(json, "[1,0,0,0,0,0,0,0,0,0,11]");
    assert_eq!(serde_json::from_str::<PlanRow>(&json).ok(), Some(r));
    let f: ProfileFigures = serde_json::from_str("{}").expect("old summaries load");
    assert_eq!(f, ProfileFigures::default());
}
