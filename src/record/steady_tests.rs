//! Unit tests of `crate::record::steady`.

use super::*;
use crate::record::StepSample;

/// A round of one prefill step then `n` decode steps whose time grows with the context
/// (as attention does), times `slow(k)` for step k.
fn round(n: usize, slow: impl Fn(usize) -> f64) -> RoundRecord {
    let mut steps = vec![StepSample {
        at_s: 0.0,
        seqs: 1,
        prefill_tokens: 30,
        decode_tokens: 0,
        forward_s: 0.05,
        step_s: 0.05,
    }];
    steps.extend((0..n).map(|k| {
        let jitter = 1.0 + 0.01 * ((k * 7919) % 5) as f64;
        let t = (0.004 + 0.00002 * k as f64) * jitter * slow(k);
        StepSample {
            at_s: 0.0,
            seqs: 1,
            prefill_tokens: 0,
            decode_tokens: 1,
            forward_s: t,
            step_s: t,
        }
    }));
    RoundRecord {
        steps,
        ..RoundRecord::default()
    }
}

#[test]
fn steps_are_compared_with_the_same_step_of_other_rounds() {
    // The growing context alone is no change: every round grows the same way.
    let flat = [
        round(100, |_| 1.0),
        round(100, |_| 1.0),
        round(100, |_| 1.0),
    ];
    let f = SteadyFigures::of(&flat);
    assert_eq!(f.steady_shape, "flat", "{f:?}");
    assert_eq!((f.steady_steps, f.steady_per_round), (300, 100));
    assert!(f
        .describe()
        .unwrap()
        .starts_with("flat over 300 decode steps"));
    // The first 30 steps of the first round 50 % slower: a warm-up, left out.
    let warm = [
        round(100, |k| if k < 30 { 1.5 } else { 1.0 }),
        round(100, |_| 1.0),
        round(100, |_| 1.0),
    ];
    let w = SteadyFigures::of(&warm);
    assert_eq!(w.steady_shape, "warmup", "{w:?}");
    assert_eq!(w.steady_from_step, Some(30));
    let text = w.describe().unwrap();
    assert!(
        text.starts_with("warm-up until step 31 of 300 (round 1)"),
        "{text}"
    );
    // One round: nothing to pair with.
    assert_eq!(SteadyFigures::of(&flat[..1]), SteadyFigures::default());
}
