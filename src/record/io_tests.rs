use std::path::Path;

use serde_json::{json, Value};

use super::*;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-record.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn refused(v: &Value) -> String {
    parse(Path::new("r.json"), &v.to_string())
        .expect_err("refused")
        .to_string()
}

#[test]
fn an_empty_file_is_called_empty_not_truncated() {
    for text in ["", " \n"] {
        let err = parse(Path::new("r.json"), text).unwrap_err().to_string();
        assert!(
            err.contains("the file is empty") && !err.contains("truncated"),
            "{err}"
        );
    }
}

#[test]
fn stored_values_a_presenter_trusts_are_checked_on_reading() {
    assert!(parse(Path::new("r.json"), &fixture().to_string()).is_ok());
    let mut v = fixture();
    let run = v["runs"][0].clone();
    v["runs"] = json!([run.clone(), run]);
    assert!(refused(&v).contains("appears twice"));
    let mut v = fixture();
    v["runs"][0]["workload"]["criteria"]["ttft_max_s"] = json!(-1.0);
    let err = refused(&v);
    assert!(
        err.contains("criteria.ttft_max_s") && err.contains("positive"),
        "{err}"
    );
    let mut v = fixture();
    v["runs"][0]["workload"]["criteria"]["pass_rate_min"] = json!(7);
    assert!(refused(&v).contains("pass_rate_min"));
    let mut v = fixture();
    v["runs"][0]["config"]["headroom"] = json!(-0.5);
    assert!(refused(&v).contains("headroom"));
}
