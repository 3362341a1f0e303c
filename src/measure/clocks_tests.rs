//! Unit tests of `crate::measure::clocks`.

use super::*;

#[test]
fn warmup_is_an_excess_beyond_the_spread_or_none() {
    let steady = [0.010, 0.011, 0.009, 0.012, 0.010, 0.008];
    let Some(Warmup::Excess { seconds, .. }) = kernel_warmup(0.030, &steady) else {
        panic!("a 30 ms first step over 10 ms steps is an excess");
    };
    assert!((seconds - 0.020).abs() < 1e-9);
    let none = kernel_warmup(0.0095, &steady).unwrap();
    assert_eq!(none.label(), "none measurable (< 4.4 ms spread)");
    let within = kernel_warmup(0.0115, &steady).unwrap();
    assert!(matches!(within, Warmup::NoneMeasurable { .. }));
    assert_eq!(kernel_warmup(0.03, &[0.01]), None);
}

#[test]
fn no_rate_from_nothing_or_a_zero_interval() {
    assert_eq!(rate(0, 1.0), Some(0.0));
    assert_eq!(rate(5, 0.0), None);
    assert_eq!(rate(5, -1.0), None);
    assert_eq!(rate(4, 2.0), Some(2.0));
    assert_eq!(rate_label(None, "tok/s"), "n/a (too few tokens)");
}
