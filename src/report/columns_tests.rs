//! Unit tests of `crate::report::columns`.

use super::*;

#[test]
fn every_key_is_a_summary_field_with_the_same_value() {
    let mut s = LevelSummary::empty(2);
    s.ttft_median_s = Some(0.25);
    s.attempted = 7;
    // Written only when measured (on a GPU), like every field absent on the CPU.
    s.peak_device_bytes = Some(1 << 20);
    // Written only for hybrid models (recurrent layers).
    s.peak_state_bytes = 3 << 10;
    let json = serde_json::to_value(&s).expect("serializes");
    for c in all() {
        let field = json
            .get(c.key)
            .unwrap_or_else(|| panic!("column {} is not a summary field", c.key));
        let same = match (c.value)(&s) {
            Value::Count(n) => field.as_u64() == Some(n),
            Value::Num(None) => field.is_null(),
            Value::Num(Some(x)) => field.as_f64() == Some(x),
            Value::Text(t) => field.as_str() == Some(t.as_str()),
        };
        assert!(same, "column {} disagrees with the summary", c.key);
    }
}

#[test]
fn csv_escapes_only_what_needs_it() {
    assert_eq!(csv_escape("a,b"), "\"a,b\"");
    assert_eq!(csv_escape("plain"), "plain");
    assert_eq!(csv_value(&Value::Num(None)), "");
}
