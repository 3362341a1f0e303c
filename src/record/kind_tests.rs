use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::record::io;

/// The stored sweep fixture (schema 2: no kind) as JSON.
fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-record.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn parse(v: &Value) -> Result<crate::record::ResultsFile, String> {
    io::parse(Path::new("r.json"), &v.to_string()).map_err(|e| e.to_string())
}

fn arm() -> Value {
    json!({
        "arm": "B", "pair": "p1", "vary": "threads", "value": "2", "expect": "decode",
        "min_effect": 0.05, "drift_allowed": null, "rounds": [], "verdict": null
    })
}

#[test]
fn a_record_before_kinds_gets_its_kind_from_its_payload() {
    let mut v = fixture();
    assert!(
        v["runs"][0].get("kind").is_none(),
        "the fixture predates kinds"
    );
    assert_eq!(parse(&v).unwrap().runs[0].kind.tag(), KindTag::Run);
    v["runs"][0]["ab"] = arm();
    let file = parse(&v).unwrap();
    assert_eq!(file.runs[0].kind.tag(), KindTag::AbArm);
    assert_eq!(file.runs[0].ab().unwrap().pair, "p1");
}

#[test]
fn every_kind_is_written_with_its_word_and_read_back() {
    let mut v = fixture();
    v["runs"][0]["ab"] = arm();
    let file = parse(&v).unwrap();
    let written = serde_json::to_value(&file.runs[0]).unwrap();
    assert_eq!(written["kind"], "ab-arm");
    assert_eq!(written["ab"]["vary"], "threads");
    assert!(written.get("cold").is_none() && written.get("session").is_none());
    let mut plain = parse(&fixture()).unwrap().runs.remove(0);
    for (kind, word) in [(RunKind::Run, "run"), (RunKind::Baseline, "baseline")] {
        plain.kind = kind;
        let w = serde_json::to_value(&plain).unwrap();
        assert_eq!(w["kind"], word);
        let back: crate::record::RunRecord = serde_json::from_value(w).unwrap();
        assert_eq!(back.kind.tag().as_str(), word);
    }
}

#[test]
fn a_word_that_disagrees_with_the_payload_is_refused_by_name() {
    let mut v = fixture();
    v["runs"][0]["kind"] = json!("cold");
    let err = parse(&v).unwrap_err();
    assert!(
        err.contains("kind \"cold\" does not match") && err.contains("none"),
        "{err}"
    );
    v["runs"][0]["kind"] = json!("session");
    v["runs"][0]["ab"] = arm();
    let err = parse(&v).unwrap_err();
    assert!(
        err.contains("kind \"session\"") && err.contains("\"ab\""),
        "{err}"
    );
    v["runs"][0]["kind"] = json!("teapot");
    assert!(parse(&v).unwrap_err().contains("teapot"));
}

#[test]
fn two_payloads_are_refused() {
    let mut v = fixture();
    v["runs"][0]["ab"] = arm();
    v["runs"][0]["cold"] = json!({});
    // Refused whichever check sees it first (the empty cold entry or the two kinds).
    let err = parse(&v).unwrap_err();
    assert!(err.contains("not a tokfire results file"), "{err}");
}

#[test]
fn a_nested_baseline_is_a_baseline_and_nothing_else() {
    let mut v = fixture();
    let inner = v["runs"][0].clone();
    v["runs"][0]["baseline"] = inner.clone();
    let file = parse(&v).unwrap();
    let b = file.runs[0].baseline.as_ref().unwrap();
    assert_eq!(b.kind.tag(), KindTag::Baseline);
    let mut arm_inside = inner;
    arm_inside["ab"] = arm();
    v["runs"][0]["baseline"] = arm_inside;
    let err = parse(&v).unwrap_err();
    assert!(err.contains("its baseline is of kind \"ab-arm\""), "{err}");
}

#[test]
fn a_prefill_record_needs_its_word() {
    let grid = json!({
        "seed": 1, "lengths": [16], "depths": [0], "cached_pct": [0], "chunks": [256],
        "samples": 3, "warmup": 1, "cells": []
    });
    let mut v = fixture();
    v["runs"][0]["prefill"] = grid;
    // Born with the word: a prefill payload without it is refused, not guessed.
    assert!(parse(&v).is_err());
    v["runs"][0]["kind"] = json!("prefill");
    let file = parse(&v).unwrap();
    assert_eq!(file.runs[0].kind.tag(), KindTag::Prefill);
    let written = serde_json::to_value(&file.runs[0]).unwrap();
    assert_eq!(written["kind"], "prefill");
    assert_eq!(written["prefill"]["lengths"], json!([16]));
}

#[test]
fn a_spec_cost_record_needs_its_word_too() {
    let grid = json!({
        "context": 24, "steps": 5, "warmup": 2, "seed": 0, "jobs": [1], "ks": [0, 2],
        "cells": []
    });
    let mut v = fixture();
    v["runs"][0]["spec_cost"] = grid;
    let err = parse(&v).unwrap_err();
    assert!(
        err.contains("\"spec_cost\" entry has no \"kind\" word"),
        "{err}"
    );
    v["runs"][0]["kind"] = json!("spec-cost");
    let file = parse(&v).unwrap();
    assert_eq!(file.runs[0].kind.tag(), KindTag::SpecCost);
    let written = serde_json::to_value(&file.runs[0]).unwrap();
    assert_eq!(
        (written["kind"].as_str(), written["spec_cost"]["ks"].clone()),
        (Some("spec-cost"), json!([0, 2]))
    );
    v["runs"][0]["kind"] = json!("prefill");
    assert!(parse(&v).unwrap_err().contains("does not match"));
}
