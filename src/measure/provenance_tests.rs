//! Unit tests of `crate::measure::provenance`.

use super::*;

#[test]
fn describes_this_build_and_machine() {
    let b = Build::current();
    assert_eq!(b.version, env!("CARGO_PKG_VERSION"));
    assert!(!b.rustc.is_empty());
    let m = Machine::current();
    assert!(m.logical_cpus >= 1);
    assert!(!m.os.is_empty());
}
