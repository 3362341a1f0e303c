//! Unit tests of `crate::bench::samples`.

use std::time::Duration;

use super::*;
use crate::engine::batching::FinishReason;
use crate::workload::Outcome;

/// A passed single-turn task of job 0 that hit its token limit.
fn done(requests: Vec<RequestId>, text: &str) -> TaskDone {
    TaskDone {
        job: 0,
        task: "t".into(),
        requests,
        result: TaskResult {
            outcome: Outcome::Pass,
            turns: 1,
            tool_calls: vec![],
            final_text: text.into(),
        },
        hit_limit: true,
    }
}

fn ev(start: Instant, ms: u64, id: Option<RequestId>, kind: EventKind) -> Event {
    Event {
        at: start + Duration::from_millis(ms),
        id,
        kind,
    }
}

#[test]
fn task_timings_come_from_events() {
    let s = Instant::now();
    let step = |seqs, p, d| EventKind::StepStart {
        seqs,
        prefill_tokens: p,
        decode_tokens: d,
    };
    let events = vec![
        ev(s, 0, Some(7), EventKind::Submitted { prompt_tokens: 10 }),
        ev(s, 5, Some(7), EventKind::Admitted),
        ev(s, 5, None, step(1, 10, 0)),
        ev(s, 25, Some(7), EventKind::Token { token: 1 }),
        ev(s, 25, None, EventKind::StepEnd { forward_us: 19_000 }),
        ev(s, 25, None, step(1, 0, 1)),
        ev(s, 35, Some(7), EventKind::Token { token: 2 }),
        ev(s, 35, None, EventKind::StepEnd { forward_us: 9_000 }),
        ev(s, 35, None, step(1, 0, 1)),
        ev(s, 55, Some(7), EventKind::Token { token: 3 }),
        ev(
            s,
            55,
            Some(7),
            EventKind::Finished {
                reason: FinishReason::Length,
                output_tokens: 3,
            },
        ),
        ev(s, 56, None, EventKind::StepEnd { forward_us: 19_000 }),
    ];
    let done = done(vec![7], "abc");
    let r = round_record(&events, s, &[done]);
    let t = &r.tasks[0];
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(t.queue_wait_s, 0.005));
    assert!(close(t.ttft_s.unwrap(), 0.025));
    assert!(close(t.completion_s, 0.055));
    assert!(close(t.tpot_s.unwrap(), 0.015), "(55 - 25) / 2 ms");
    assert!(close(t.prompt_tok_s.unwrap(), 10.0 / 0.020));
    assert_eq!(t.gaps_ms.len(), 2);
    assert!(close(t.gaps_ms[1], 20.0));
    assert_eq!(r.steps.len(), 3);
    assert!(close(r.forward_s, 0.047));
    assert!(close(r.wall_s, 0.056));
    assert_eq!(
        (r.steps[0].prefill_tokens, r.steps[1].decode_tokens),
        (10, 1)
    );
}

#[test]
fn a_reused_prefix_is_counted_and_left_out_of_the_prefill_speed() {
    let s = Instant::now();
    let events = vec![
        ev(s, 0, Some(3), EventKind::Submitted { prompt_tokens: 40 }),
        ev(s, 0, Some(3), EventKind::Admitted),
        ev(s, 0, Some(3), EventKind::PrefixReused { tokens: 32 }),
        ev(s, 10, Some(3), EventKind::Token { token: 1 }),
        ev(
            s,
            10,
            Some(3),
            EventKind::Finished {
                reason: FinishReason::Length,
                output_tokens: 1,
            },
        ),
    ];
    let done = done(vec![3], "x");
    let t = &round_record(&events, s, &[done]).tasks[0];
    assert_eq!((t.reused_tokens, t.first_turn_reused), (32, 32));
    assert!(
        (t.prompt_tok_s.unwrap() - 8.0 / 0.010).abs() < 1e-6,
        "8 computed tokens in 10 ms"
    );
}
