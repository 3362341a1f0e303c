//! Unit tests of `crate::config::think`.

use super::*;

#[test]
fn defaults_are_lockstep_and_bad_values_name_their_flag() {
    assert!(ThinkConfig::default().is_lockstep());
    assert!(ThinkConfig::default().validate().is_ok());
    let bad = |c: ThinkConfig| c.validate().unwrap_err().to_string();
    let t = |think_s, jitter_s, stagger_s| ThinkConfig {
        think_s,
        jitter_s,
        stagger_s,
        seed: 1,
    };
    assert!(bad(t(-1.0, 0.0, 0.0)).starts_with("--think -1"));
    assert!(bad(t(1.0, f64::NAN, 0.0)).starts_with("--think-jitter NaN"));
    assert!(bad(t(0.0, 0.0, f64::INFINITY)).starts_with("--stagger inf"));
    assert!(bad(t(0.0, 0.5, 0.0)).contains("give --think"));
    assert!(t(0.2, 0.1, 0.5).validate().is_ok());
}
