//! Unit tests of `crate::report::change`.

use super::*;

#[test]
fn faster_or_slower_only_when_the_ranges_part() {
    let old = (1.0, (0.9, 1.1));
    assert_eq!(Change::of(old, (1.01, (0.95, 1.05)), 0.03), Change::Same);
    assert_eq!(Change::of(old, (0.8, (0.75, 0.85)), 0.03), Change::Faster);
    assert_eq!(Change::of(old, (1.3, (1.2, 1.4)), 0.03), Change::Slower);
    assert_eq!(
        Change::of(old, (0.9, (0.8, 1.0)), 0.03),
        Change::WithinSpread
    );
    let v = verdict(
        &[Change::Faster, Change::Same, Change::WithinSpread],
        "x",
        true,
    );
    assert!(
        v.starts_with("verdict: 1 cells faster, 0 slower, 2 unchanged"),
        "{v}"
    );
    assert!(v.contains("left out"), "{v}");
}
