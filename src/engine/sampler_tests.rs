//! Unit tests of `crate::engine::sampler`.

use super::*;

fn cfg(temperature: f64, top_k: usize, top_p: f64) -> SamplingConfig {
    SamplingConfig {
        temperature,
        top_k,
        top_p,
        seed: 7,
    }
}

#[test]
fn greedy_is_argmax_lowest_on_ties_and_skips_nan() {
    assert_eq!(sample(&[0.1, 3.0, 3.0, -1.0], &cfg(0.0, 0, 1.0), 0.99), 1);
    assert_eq!(argmax(&[f32::NAN, -5.0, -4.0]), 2);
}

/// The chunked argmax is the plain first-strictly-larger loop: ties across and within chunks,
/// NaNs, infinities, signed zeros, tails shorter than a chunk, nothing above minus infinity.
#[test]
fn argmax_equals_the_plain_loop() {
    let plain = |xs: &[f32]| {
        let mut best = (0, f32::NEG_INFINITY);
        for (i, &v) in xs.iter().enumerate() {
            if v > best.1 {
                best = (i, v);
            }
        }
        best.0 as u32
    };
    let mut state = 12345u32;
    let mut next = || {
        state = state.wrapping_mul(1664525).wrapping_add(1013904223);
        state >> 8
    };
    for len in [0, 1, 5, 16, 17, 40, 333] {
        for _ in 0..50 {
            let xs: Vec<f32> = (0..len)
                .map(|_| match next() % 10 {
                    0 => f32::NAN,
                    1 => f32::NEG_INFINITY,
                    2 => -0.0,
                    3 => 0.0,
                    _ => (next() % 7) as f32 - 3.0,
                })
                .collect();
            assert_eq!(argmax(&xs), plain(&xs), "{xs:?}");
        }
    }
    assert_eq!(argmax(&[f32::NAN; 20]), 0);
    assert_eq!(
        argmax(&[f32::NEG_INFINITY, f32::INFINITY, f32::INFINITY]),
        1
    );
}

#[test]
fn top_k_one_is_greedy_whatever_the_draw() {
    for u in [0.0, 0.3, 0.999] {
        assert_eq!(sample(&[1.0, 5.0, 2.0], &cfg(1.0, 1, 1.0), u), 1);
    }
}

#[test]
fn top_p_keeps_the_smallest_covering_set() {
    // probabilities ≈ [0.665, 0.245, 0.090] at temperature 1.
    let logits = [2.0, 1.0, 0.0];
    let c = candidates(&logits, &cfg(1.0, 0, 0.8));
    assert_eq!(c.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1]);
    // Draws land in proportion: u near 1 picks the second kept token, never the third.
    assert_eq!(sample(&logits, &cfg(1.0, 0, 0.8), 0.999), 1);
    assert_eq!(sample(&logits, &cfg(1.0, 0, 0.8), 0.0), 0);
}

#[test]
fn temperature_sampling_follows_the_distribution() {
    let logits = [0.0f32, (3.0f32).ln()]; // p = [0.25, 0.75]
    let mut s = Sampler::new(&cfg(1.0, 0, 1.0));
    let ones = (0..4000).filter(|_| s.sample(&logits) == 1).count();
    assert!(
        (2800..3200).contains(&ones),
        "{ones} of 4000 draws picked p=0.75"
    );
}

#[test]
fn same_seed_same_stream() {
    let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32 * 0.3).collect();
    let run = || {
        let mut s = Sampler::new(&cfg(0.8, 20, 0.95));
        (0..30).map(|_| s.sample(&logits)).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}
