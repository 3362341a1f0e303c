//! Unit tests of loading: the shipped workloads against the lock, edits without a version bump,
//! malformed files, unknown validators and out-of-range values. Validator and agent tests live
//! in `validate_tests.rs` and `agent_tests.rs`.

use super::lock::Lock;
use super::*;

const CHAT: &str = include_str!("../../workloads/chat.toml");

fn parse_err(text: &str) -> String {
    match parse(text, "test.toml", &Lock::default()) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

const MINIMAL: &str = r#"
name = "mini"
version = 1
use_case = "testing"
description = "one task"
[criteria]
label = "your own targets"
[[tasks]]
id = "a"
user = "Hi"
max_tokens = 8
checks = [{ kind = "contains", value = "hello" }]
"#;

#[test]
fn every_shipped_workload_matches_the_lock() {
    let lock = Lock::embedded();
    for name in builtin_names() {
        let w = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            w.locked,
            "{name} is not in workloads/workloads.lock; add: {}",
            lock_line(&w)
        );
        assert_eq!(lock.get(name, w.version), Some(w.hash.as_str()));
        assert_eq!(w.source, format!("builtin:{name}"));
        // The file on disk is the one embedded, and loads the same way by path.
        let by_path = load(&format!("workloads/{name}.toml")).expect("shipped file loads by path");
        assert_eq!(by_path.hash, w.hash);
        assert!(by_path.locked);
    }
}

#[test]
fn lock_file_parses_and_every_line_is_a_sha256() {
    let lock = Lock::parse(lock::EMBEDDED, "workloads.lock").expect("shipped lock parses");
    assert!(lock.entries.len() >= builtin_names().len());
}

#[test]
fn editing_a_task_without_bumping_the_version_is_an_error() {
    let edited = CHAT.replace("What is 17 + 25?", "What is 17 + 26?");
    assert_ne!(edited, CHAT);
    let err = parse(&edited, "workloads/chat.toml", &Lock::embedded()).unwrap_err();
    let WorkloadError::HashMismatch(m) = &err else {
        panic!("expected a hash mismatch, got {err}");
    };
    let next_hash = &m.next_hash;
    let msg = err.to_string();
    assert!(msg.contains("workloads/chat.toml"), "{msg}");
    assert!(msg.contains("bump `version`"), "{msg}");
    assert!(msg.contains(&format!("chat 2 {next_hash}")), "{msg}");
    // Bumping the version loads it, unlocked, with exactly the hash the message printed.
    let bumped = edited.replace("version = 1", "version = 2");
    let w = parse(&bumped, "workloads/chat.toml", &Lock::embedded()).expect("bumped loads");
    assert!(!w.locked);
    assert_eq!(&w.hash, next_hash);
}

#[test]
fn an_edited_copy_elsewhere_is_caught_by_the_embedded_lock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("my-chat.toml");
    std::fs::write(&path, CHAT.replace("max_tokens = 32", "max_tokens = 40")).expect("write");
    let msg = load(path.to_str().expect("utf-8 path"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("my-chat.toml") && msg.contains("bump"),
        "{msg}"
    );
}

#[test]
fn a_lock_beside_the_file_is_used() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mini.toml");
    std::fs::write(&path, MINIMAL).expect("write");
    let w = load(path.to_str().expect("utf-8 path")).expect("loads");
    assert!(!w.locked);
    std::fs::write(dir.path().join("workloads.lock"), lock_line(&w)).expect("write lock");
    assert!(
        load(path.to_str().expect("utf-8 path"))
            .expect("loads")
            .locked
    );
    std::fs::write(
        dir.path().join("workloads.lock"),
        format!("mini 1 {}", "0".repeat(64)),
    )
    .expect("write lock");
    assert!(load(path.to_str().expect("utf-8 path")).is_err());
}

#[test]
fn hash_ignores_layout_but_not_content() {
    let a = parse(MINIMAL, "a", &Lock::default()).expect("loads");
    let reordered = MINIMAL.replace(
        "name = \"mini\"\nversion = 1",
        "version = 1\nname = \"mini\"  # comment",
    );
    let b = parse(&reordered, "b", &Lock::default()).expect("loads");
    assert_eq!(a.hash, b.hash);
    let c = parse(&MINIMAL.replace("\"Hi\"", "\"Hi!\""), "c", &Lock::default()).expect("loads");
    assert_ne!(a.hash, c.hash);
    // Description is not part of the hash; criteria are.
    let d = parse(
        &MINIMAL.replace("one task", "a single task"),
        "d",
        &Lock::default(),
    )
    .expect("loads");
    assert_eq!(a.hash, d.hash);
    let e = parse(
        &MINIMAL.replace("[criteria]", "[criteria]\nttft_max_s = 1.0"),
        "e",
        &Lock::default(),
    )
    .expect("loads");
    assert_ne!(a.hash, e.hash);
}

#[test]
fn malformed_toml_names_file_line_and_key() {
    let msg = parse_err(&MINIMAL.replace("max_tokens = 8", "max_tokens = \"many\""));
    assert!(msg.starts_with("test.toml: "), "{msg}");
    assert!(msg.contains("line 11"), "{msg}");
    assert!(msg.contains("max_tokens"), "{msg}");
    let msg = parse_err("name = \"x\nversion = 1");
    assert!(msg.contains("line 1"), "{msg}");
}

#[test]
fn unknown_validator_kind_lists_the_known_ones() {
    let msg = parse_err(&MINIMAL.replace("kind = \"contains\"", "kind = \"startswith\""));
    assert!(msg.contains("startswith"), "{msg}");
    for kind in ["contains", "not_contains", "regex", "equals", "json"] {
        assert!(msg.contains(kind), "{msg}");
    }
}

#[test]
fn unknown_keys_are_errors() {
    let msg = parse_err(&MINIMAL.replace("max_tokens = 8", "max_tokens = 8\nmax_token = 9"));
    assert!(msg.contains("max_token"), "{msg}");
    let msg = parse_err(&MINIMAL.replace(
        "value = \"hello\"",
        "value = \"hello\", casesensitive = true",
    ));
    assert!(msg.contains("casesensitive"), "{msg}");
}

#[test]
fn unknown_builtin_lists_the_builtins() {
    let msg = load("chatt").unwrap_err().to_string();
    assert!(
        msg.contains("chatt") && msg.contains("chat, code, extract, agent"),
        "{msg}"
    );
}

#[test]
fn out_of_range_and_inconsistent_values_are_errors() {
    let cases = [
        (
            MINIMAL.replace("[criteria]", "[criteria]\npass_rate_min = 80"),
            "criteria.pass_rate_min",
        ),
        (
            MINIMAL.replace("[criteria]", "[criteria]\nttft_max_s = -1"),
            "criteria.ttft_max_s",
        ),
        (MINIMAL.replace("version = 1", "version = 0"), "version"),
        (
            MINIMAL.replace("name = \"mini\"", "name = \"mini chat\""),
            "name",
        ),
        (
            MINIMAL.replace("max_tokens = 8", "max_tokens = 0"),
            "max_tokens",
        ),
        (
            MINIMAL.replace("checks = [{ kind = \"contains\", value = \"hello\" }]", ""),
            "checks",
        ),
        (
            MINIMAL.replace("user = \"Hi\"", "user = \"Hi\"\nraw = \"Hi\""),
            "prompt",
        ),
        (MINIMAL.replace("user = \"Hi\"", ""), "prompt"),
        (
            MINIMAL.replace("user = \"Hi\"", "user = \"Hi\"\nmax_turns = 3"),
            "max_turns",
        ),
        (
            format!(
                "{MINIMAL}{}",
                &MINIMAL[MINIMAL.find("[[tasks]]").expect("has a task")..]
            ),
            "duplicate",
        ),
        (
            MINIMAL.replace(
                "kind = \"contains\", value = \"hello\"",
                "kind = \"regex\", pattern = \"(\"",
            ),
            "does not compile",
        ),
        (
            MINIMAL.replace(
                "[[tasks]]",
                "[[tasks]]\nrequired_calls = [{ tool = \"x\" }]",
            ),
            "not one of the task's tools",
        ),
    ];
    for (text, expect) in cases {
        let msg = parse_err(&text);
        assert!(msg.contains(expect), "expected {expect:?} in: {msg}");
    }
}

#[test]
fn workload_round_trips_through_json() {
    for name in builtin_names() {
        let w = load(name).expect("loads");
        let json = serde_json::to_string(&w).expect("serializes");
        let back: Workload = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, w);
    }
}

#[test]
fn shipped_workloads_stay_small_enough_to_sweep() {
    let limits = [("chat", 96), ("code", 48), ("extract", 96), ("agent", 64), ("edit", 96)];
    for (name, max) in limits {
        let w = load(name).expect("loads");
        assert!(
            (3..=8).contains(&w.tasks.len()),
            "{name}: {} tasks",
            w.tasks.len()
        );
        for t in &w.tasks {
            assert!(
                t.max_tokens <= max,
                "{name}/{}: max_tokens {}",
                t.id,
                t.max_tokens
            );
        }
        assert!(w.criteria.label.contains("your own targets"), "{name}");
    }
}

#[test]
fn agent_prompts_carry_the_tools() {
    let w = load("agent").expect("loads");
    for t in &w.tasks {
        let Prompt::Chat(m) = &t.prompt else {
            panic!("agent prompt is chat")
        };
        assert_eq!(m[0].role, "system");
        assert!(m[0].content.contains("<tools>[{") && m[0].content.contains("<tool_call>"));
        for tool in &t.tools {
            assert!(m[0]
                .content
                .contains(&format!("\"name\":\"{}\"", tool.name)));
        }
        assert_eq!(m.last().map(|m| m.role.as_str()), Some("user"));
    }
}
