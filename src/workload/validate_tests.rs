//! Unit tests of the validators and the pass / fail / abstain judgement.

use super::validate::*;
use serde_json::json;

fn contains(v: &[&str], require: Require, case_sensitive: bool) -> Check {
    Check::Contains {
        value: OneOrMany::Many(v.iter().map(|s| s.to_string()).collect()),
        require,
        case_sensitive,
    }
}

#[test]
fn contains_is_case_insensitive_unless_asked() {
    assert!(contains(&["paris"], Require::All, false)
        .evaluate("It is Paris.")
        .is_ok());
    let err = contains(&["paris"], Require::All, true)
        .evaluate("It is Paris.")
        .unwrap_err();
    assert!(err.contains("\"paris\""), "{err}");
}

#[test]
fn contains_all_and_any() {
    let all = contains(&["red", "blue"], Require::All, false);
    assert!(all.evaluate("red and blue").is_ok());
    assert!(all.evaluate("red only").unwrap_err().contains("blue"));
    let any = contains(&["eight", "8"], Require::Any, false);
    assert!(any.evaluate("a spider has 8 legs").is_ok());
    assert!(any.evaluate("six").unwrap_err().contains("none of"));
}

#[test]
fn not_contains_names_the_offender() {
    let c = Check::NotContains {
        value: OneOrMany::Many(vec!["Neptune".into(), "Saturn".into()]),
        case_sensitive: false,
    };
    assert!(c.evaluate("Jupiter").is_ok());
    assert!(c.evaluate("it is neptune").unwrap_err().contains("Neptune"));
}

#[test]
fn regex_matches_anywhere_with_case_flag() {
    let r = |p: &str, cs| Check::Regex {
        pattern: p.into(),
        case_sensitive: cs,
    };
    assert!(r(r"\b42\b", false).evaluate("17 + 25 = 42.").is_ok());
    assert!(r(r"\b42\b", false).evaluate("17 + 25 = 420").is_err());
    assert!(r(r"\bAu\b", true).evaluate("symbol: Au").is_ok());
    assert!(r(r"\bAu\b", true).evaluate("symbol: AU").is_err());
    assert!(r(r"\bAu\b", false).evaluate("symbol: AU").is_ok());
    assert!(r("(", false)
        .validate()
        .unwrap_err()
        .contains("does not compile"));
}

#[test]
fn equals_trims_and_folds_case() {
    let e = |v: &str, cs| Check::Equals {
        value: v.into(),
        case_sensitive: cs,
    };
    assert!(e("Paris", false).evaluate("  paris\n").is_ok());
    assert!(e("Paris", true).evaluate("  paris\n").is_err());
    assert!(e("Paris", false).evaluate("Paris.").is_err());
}

fn json_check(required: &[&str], values: serde_json::Value) -> Check {
    let values = values
        .as_object()
        .expect("object")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Check::Json {
        required: required.iter().map(|s| s.to_string()).collect(),
        values,
        case_sensitive: false,
    }
}

#[test]
fn json_takes_the_first_object_even_inside_a_fence() {
    let out = "Here you go:\n```json\n{\"name\": \"Maria Lopez\", \"age\": 34}\n```\n{\"name\": \"other\"}";
    let c = json_check(&["name"], json!({"name": "maria lopez", "age": 34}));
    assert!(c.evaluate(out).is_ok());
    assert_eq!(first_json_object("no braces"), None);
    assert_eq!(
        first_json_object("{broken {\"a\": 1}"),
        Some(json!({"a": 1}))
    );
}

#[test]
fn json_reports_missing_and_wrong_fields() {
    let c = json_check(&["date"], json!({"room": "B-204"}));
    assert!(c
        .evaluate("{\"room\": \"B-204\"}")
        .unwrap_err()
        .contains("\"date\""));
    let err = c
        .evaluate("{\"date\": \"12 May\", \"room\": \"B-205\"}")
        .unwrap_err();
    assert!(err.contains("room") && err.contains("B-204"), "{err}");
    assert!(c
        .evaluate("{\"type\": \"json\", \"data\": {")
        .unwrap_err()
        .contains("no JSON object"));
}

#[test]
fn json_numbers_compare_numerically_and_nested_paths_work() {
    let c = json_check(
        &["who.name"],
        json!({"price": 4.5, "year": 1937, "who.age": 34}),
    );
    assert!(c
        .evaluate("{\"price\": 4.50, \"year\": \"1937\", \"who\": {\"name\": \"x\", \"age\": 34}}")
        .is_ok());
    assert!(c
        .evaluate("{\"price\": 4.51, \"year\": 1937, \"who\": {\"name\": \"x\", \"age\": 34}}")
        .is_err());
    assert!(json_matches(&json!(["a", 1]), &json!(["A", 1.0]), false));
    assert!(!json_matches(&json!(["a"]), &json!(["a", "b"]), false));
}

#[test]
fn judge_passes_fails_and_abstains() {
    let checks = [Check::Regex {
        pattern: r"\b42\b".into(),
        case_sensitive: false,
    }];
    let rule = AbstainRule {
        phrases: vec!["I don't know".into()],
        on_limit: true,
    };
    assert_eq!(judge(&checks, &rule, "It is 42.", true), Outcome::Pass);
    let Outcome::Abstain { reason } = judge(&checks, &rule, "I DON'T KNOW.", false) else {
        panic!("decline phrase should abstain")
    };
    assert!(reason.contains("declined"));
    let Outcome::Abstain { reason } = judge(&checks, &rule, "Let me think step by", true) else {
        panic!("limit should abstain")
    };
    assert!(reason.contains("token limit"));
    let Outcome::Fail { reason } = judge(&checks, &rule, "It is 32.", false) else {
        panic!("wrong answer should fail")
    };
    assert!(reason.contains("42"));
    // Without an abstain rule, hitting the limit is a plain failure.
    assert!(matches!(
        judge(&checks, &AbstainRule::default(), "…", true),
        Outcome::Fail { .. }
    ));
}

#[test]
fn outcome_serializes_with_an_outcome_tag() {
    assert_eq!(
        serde_json::to_value(Outcome::Pass).expect("json"),
        json!({"outcome": "pass"})
    );
    let v = serde_json::to_value(Outcome::Fail { reason: "x".into() }).expect("json");
    assert_eq!(v, json!({"outcome": "fail", "reason": "x"}));
    let back: Outcome =
        serde_json::from_value(json!({"outcome": "abstain", "reason": "y"})).expect("parse");
    assert_eq!(back, Outcome::Abstain { reason: "y".into() });
}
