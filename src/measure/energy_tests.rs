//! Unit tests of `crate::measure::energy`.

use super::*;

#[test]
fn wraps_once() {
    let m = EnergyMeter {
        counter: Counter::Rapl(PathBuf::from("/nonexistent")),
        range_uj: 1_000_000,
    };
    assert_eq!(m.joules(100, 600_100), 0.6);
    assert_eq!(m.joules(900_000, 100_000), 0.2);
    assert!(m.read_uj().is_none());
}
