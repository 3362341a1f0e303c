//! Unit tests of `crate::measure::stats`.

use super::*;

#[test]
fn median_of_odd_even_and_empty() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
    assert_eq!(max(&[1.0, 9.0, 3.0]), Some(9.0));
    assert_eq!(min(&[4.0, 9.0, 3.0]), Some(3.0));
    assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some(1.0));
    assert_eq!(mad(&[]), None);
}

#[test]
fn percentile_nearest_rank_and_tail() {
    let v: Vec<f64> = (1..=20).map(f64::from).collect();
    assert_eq!(percentile(&v, 95.0), Some(19.0));
    assert_eq!(percentile(&v, 100.0), Some(20.0));
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    assert_eq!(tail(&v), Some((19.0, "p95")));
    assert_eq!(tail(&[3.0, 1.0, 2.0]), Some((3.0, "slowest")));
    assert_eq!(tail(&[]), None);
}
