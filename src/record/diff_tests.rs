//! Unit tests of `crate::record::diff`.

use super::*;

#[test]
fn lists_leaves_that_differ() {
    let a = serde_json::json!({"x": 1, "e": {"c": 256, "s": 8}, "l": [1, 2]});
    let b = serde_json::json!({"x": 1, "e": {"c": 32, "s": 8}, "l": [1, 3], "n": "new"});
    let d = differences(&a, &b);
    let paths: Vec<&str> = d.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["e.c", "l", "n"]);
    assert_eq!(d[0].to_string(), "e.c: 256 \u{2192} 32");
    assert!(differences(&a, &a).is_empty());
}
