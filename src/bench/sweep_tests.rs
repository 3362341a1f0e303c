//! Unit tests of `crate::bench::sweep`.

use super::*;

#[test]
fn civil_dates() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    assert_eq!(civil_from_days(11_016), (2000, 2, 29));
}
