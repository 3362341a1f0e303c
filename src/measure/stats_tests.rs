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

#[test]
fn weighted_median_is_the_median_of_the_expanded_list() {
    let cases: [&[(f64, u64)]; 5] = [
        &[(3.0, 1), (1.0, 2), (2.0, 1)],
        &[(5.0, 3), (1.0, 3)],
        &[(7.0, 0), (2.0, 1)],
        &[(f64::NAN, 4), (4.0, 2), (9.0, 1)],
        &[(1.5, 2), (0.5, 5), (8.0, 2)],
    ];
    for c in cases {
        let expanded: Vec<f64> = c
            .iter()
            .flat_map(|&(x, n)| std::iter::repeat_n(x, n as usize))
            .collect();
        assert_eq!(weighted_median(c), median(&expanded), "{c:?}");
    }
    assert_eq!(weighted_median(&[(1.0, 0)]), None);
    // Counts no list could hold are counted, not expanded.
    assert_eq!(weighted_median(&[(1.0, u64::MAX), (2.0, 1)]), Some(1.0));
}
