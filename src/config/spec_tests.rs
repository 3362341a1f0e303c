//! Unit tests of `crate::config::spec`.

use super::*;

#[test]
fn a_value_after_a_method_that_takes_none_is_refused_not_dropped() {
    for v in ["lookup:3", "lookup:", "none:x", "mtp:2"] {
        let err = SpecMethod::parse(v).unwrap_err().to_string();
        assert!(err.contains("takes no value"), "{v}: {err}");
    }
    assert_eq!(SpecMethod::parse("lookup").unwrap(), SpecMethod::Lookup);
    assert_eq!(SpecMethod::parse(" mtp ").unwrap(), SpecMethod::Mtp);
    assert!(SpecMethod::parse("layerskip:3").is_ok());
}
