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
fn builtin_names_list_every_embedded_workload() {
    let embedded: Vec<&str> = load::BUILTINS.iter().map(|(n, _)| *n).collect();
    assert_eq!(embedded, builtin_names());
}

#[test]
fn workloads_without_a_top_level_system_hash_as_before_it_existed() {
    // The version-1 lock lines from before workload-level `system` was added.
    let before = "\
chat 1 69220fd375ed1f5f7193076b219642f0be23de7d44cc291ba396903d324902a5
code 1 35a53aa5b49acaffa5d2f09dbd833fad0c983156aaa39e5f07e9f9c460d30ff4
extract 1 54920309b6a16c1edd0e4a777b05ff93f0911fade8a26c738c217322cba9af16
agent 1 10a506407dc9dfdcf915f7e75dabf16ffad4fbb3b5eb33e4ef4ee5c8020458ba
edit 1 d35c46184cf72fe9f689a782da3901f702533333395a06bcab61483b808cbb41";
    for line in before.lines() {
        let name = line.split(' ').next().expect("a name");
        let w = load(name).expect("loads");
        if w.version == 1 {
            assert_eq!(lock_line(&w), line);
        }
    }
}

fn chat_messages(w: &Workload, i: usize) -> Vec<(String, String)> {
    let Prompt::Chat(m) = &w.tasks[i].prompt else {
        panic!("task {i} is a chat prompt")
    };
    m.iter()
        .map(|m| (m.role.clone(), m.content.clone()))
        .collect()
}

#[test]
fn a_top_level_system_is_the_default_of_user_tasks() {
    let with_default = MINIMAL.replace("[criteria]", "system = \"Be brief.\"\n[criteria]");
    let w = parse(&with_default, "t", &Lock::default()).expect("loads");
    let want = vec![
        ("system".to_string(), "Be brief.".to_string()),
        ("user".to_string(), "Hi".to_string()),
    ];
    assert_eq!(chat_messages(&w, 0), want);
    // The hash covers the resolved tasks: the same as giving the task the system itself.
    let per_task = MINIMAL.replace("user = \"Hi\"", "system = \"Be brief.\"\nuser = \"Hi\"");
    let p = parse(&per_task, "t", &Lock::default()).expect("loads");
    assert_eq!(w.hash, p.hash);
    let plain = parse(MINIMAL, "t", &Lock::default()).expect("loads");
    assert_ne!(w.hash, plain.hash);
}

#[test]
fn a_tasks_own_system_wins_over_the_top_level_one() {
    let text = MINIMAL
        .replace("[criteria]", "system = \"Be brief.\"\n[criteria]")
        .replace("user = \"Hi\"", "system = \"Be verbose.\"\nuser = \"Hi\"");
    let w = parse(&text, "t", &Lock::default()).expect("loads");
    assert_eq!(chat_messages(&w, 0)[0].1, "Be verbose.");
    assert_eq!(chat_messages(&w, 0).len(), 2);
}

#[test]
fn a_top_level_system_that_cannot_apply_names_the_task() {
    let with_default = MINIMAL.replace("[criteria]", "system = \"Be brief.\"\n[criteria]");
    let raw = with_default.replace("user = \"Hi\"", "raw = \"Hi\"");
    let msg = parse_err(&raw);
    assert!(
        msg.contains("tasks[0] (id \"a\")") && msg.contains("`raw`") && msg.contains("`system`"),
        "{msg}"
    );
    let no_system = with_default.replace(
        "user = \"Hi\"",
        "messages = [{ role = \"user\", content = \"Hi\" }]",
    );
    let msg = parse_err(&no_system);
    assert!(
        msg.contains("(id \"a\")") && msg.contains("`messages`"),
        "{msg}"
    );
    // Messages that open with their own system message are left as they are.
    let own = with_default.replace(
        "user = \"Hi\"",
        "messages = [{ role = \"system\", content = \"Mine.\" }, { role = \"user\", content = \"Hi\" }]",
    );
    let w = parse(&own, "t", &Lock::default()).expect("loads");
    assert_eq!(chat_messages(&w, 0)[0].1, "Mine.");
    let empty = MINIMAL.replace("[criteria]", "system = \" \"\n[criteria]");
    assert!(parse_err(&empty).contains("system: is empty"));
}

#[test]
fn shared_prefix_tasks_share_one_long_system_message() {
    let w = load("shared-prefix").expect("loads");
    let system = chat_messages(&w, 0)[0].1.clone();
    for i in 0..w.tasks.len() {
        let m = chat_messages(&w, i);
        assert_eq!(m.len(), 2, "{}", w.tasks[i].id);
        assert_eq!(
            (m[0].0.as_str(), m[0].1.as_str()),
            ("system", system.as_str())
        );
        // The shared part dominates the prompt (by characters; tokens are measured in the file).
        assert!(system.len() >= 15 * m[1].1.len(), "{}", w.tasks[i].id);
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
            // A 5 MB pattern is refused by size, and not echoed back whole.
            MINIMAL.replace(
                "kind = \"contains\", value = \"hello\"",
                &format!("kind = \"regex\", pattern = \"{}\"", "a".repeat(5_000_000)),
            ),
            "bytes; at most 4096",
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
        assert!(
            msg.len() < 2000,
            "an error is a message, not the input: {} bytes",
            msg.len()
        );
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
    let limits = [
        ("chat", 96),
        ("code", 48),
        ("extract", 96),
        ("agent", 64),
        ("edit", 96),
        ("shared-prefix", 64),
    ];
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
