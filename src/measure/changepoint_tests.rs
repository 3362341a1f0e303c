//! Unit tests of `crate::measure::changepoint`.

use super::*;

/// Seeded noise: a linear congruential generator's uniform draws, summed (about normal).
fn noise(n: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            let mut u = 0.0;
            for _ in 0..4 {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                u += (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            }
            u * scale
        })
        .collect()
}

#[test]
fn finds_a_planted_warmup_and_a_slowdown() {
    for seed in 1..20 {
        let mut x: Vec<f64> = noise(200, seed, 0.4).iter().map(|v| 10.0 + v).collect();
        for v in &mut x[..40] {
            *v += 3.0; // the first 40 steps 30 % slower
        }
        let s = analyse(&x).unwrap();
        assert_eq!(s.shape, Shape::Warmup, "seed {seed}: {s:?}");
        assert!((38..=42).contains(&s.from), "seed {seed}: {s:?}");
        assert!(s.shift.unwrap() < -0.2);
        let mut y: Vec<f64> = noise(200, seed, 0.4).iter().map(|v| 10.0 + v).collect();
        for v in &mut y[100..] {
            *v += 2.0;
        }
        let s = analyse(&y).unwrap();
        assert_eq!(s.shape, Shape::Slowdown, "seed {seed}: {s:?}");
        assert!((98..=102).contains(&s.from), "seed {seed}: {s:?}");
    }
}

#[test]
fn a_stationary_series_is_flat() {
    let mut false_alarms = 0;
    for seed in 1..200 {
        let x: Vec<f64> = noise(300, seed, 1.0).iter().map(|v| 20.0 + v).collect();
        if analyse(&x).unwrap().shape != Shape::Flat {
            false_alarms += 1;
        }
    }
    assert!(
        false_alarms <= 4,
        "{false_alarms} of 199 stationary series had a change"
    );
}

#[test]
fn isolated_outliers_are_not_a_change() {
    let mut x: Vec<f64> = noise(300, 3, 0.2).iter().map(|v| 10.0 + v).collect();
    for i in (250..300).step_by(7) {
        x[i] = 25.0; // a preempted step now and then, late in the series
    }
    assert_eq!(analyse(&x).unwrap().shape, Shape::Flat);
}

#[test]
fn late_and_bursty_series_are_no_steady_state_and_short_ones_are_not_judged() {
    // Slower for most of the run and settling only near its end.
    let mut x: Vec<f64> = noise(150, 7, 0.2).iter().map(|v| 5.0 + v).collect();
    for v in &mut x[..110] {
        *v += 2.0;
    }
    let s = analyse(&x).unwrap();
    assert_eq!(s.shape, Shape::NoSteadyState, "{s:?}");
    // Bursts over half of the run.
    let mut y: Vec<f64> = noise(200, 9, 0.2).iter().map(|v| 5.0 + v).collect();
    for start in [20, 70, 120, 170] {
        for v in &mut y[start..start + 25] {
            *v += 2.0;
        }
    }
    let s = analyse(&y).unwrap();
    assert_eq!(s.shape, Shape::NoSteadyState, "{s:?}");
    // One short burst is noise, not a new state.
    let mut z: Vec<f64> = noise(200, 11, 0.2).iter().map(|v| 5.0 + v).collect();
    for v in &mut z[150..165] {
        *v += 2.0;
    }
    let s = analyse(&z).unwrap();
    assert_eq!(s.shape, Shape::Flat, "{s:?}");
    assert!(s.burst_share.unwrap() > 0.05, "{s:?}");
    assert_eq!(analyse(&[1.0; 9]), None);
    assert_eq!(
        analyse(&[1.0, f64::NAN, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        None
    );
    assert_eq!(analyse(&[2.0; 40]).unwrap().shape, Shape::Flat);
}
