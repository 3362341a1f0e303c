//! Unit tests of `crate::bench::think`.

use super::*;

fn cfg(think_s: f64, jitter_s: f64, stagger_s: f64) -> ThinkConfig {
    ThinkConfig {
        think_s,
        jitter_s,
        stagger_s,
        seed: 7,
    }
}

#[test]
fn lockstep_schedules_nothing() {
    let mut p = Pacer::new(ThinkConfig::default());
    let now = Instant::now();
    assert_eq!(p.first_start(1, now), None);
    assert!(!p.after_answer(0, now));
    assert_eq!(p.wait(now), None);
}

#[test]
fn stagger_and_think_set_due_times() {
    let mut p = Pacer::new(cfg(0.2, 0.0, 0.5));
    let t0 = Instant::now();
    assert_eq!(p.first_start(0, t0), None, "job 0 starts at once");
    assert_eq!(p.first_start(2, t0), Some(t0 + Duration::from_secs(1)));
    assert!(p.after_answer(0, t0));
    assert_eq!(p.wait(t0), Some(Duration::from_millis(200)));
    assert!(p.take_due(t0).is_empty());
    assert_eq!(p.take_due(t0 + Duration::from_millis(200)), vec![0]);
    assert_eq!(p.take_due(t0 + Duration::from_secs(2)), vec![2]);
    assert_eq!(p.wait(t0), None);
}

#[test]
fn jitter_is_seeded_and_bounded() {
    let draws = |seed| {
        let mut p = Pacer::new(ThinkConfig {
            seed,
            ..cfg(1.0, 0.5, 0.0)
        });
        (0..50).map(|_| p.pause()).collect::<Vec<_>>()
    };
    let a = draws(3);
    assert_eq!(a, draws(3));
    assert_ne!(a, draws(4));
    assert!(a.iter().all(|&x| (0.5..=1.5).contains(&x)), "{a:?}");
    assert!(a.iter().any(|&x| x < 0.9) && a.iter().any(|&x| x > 1.1));
}
