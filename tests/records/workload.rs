//! The workload layer through its public API, as the benchmark drives it: every builtin loads
//! locked, a scripted "model" runs each task to an outcome, and a shipped file edited without a
//! version bump is refused with the line to add.

use tokfire::workload::{self, Next, Outcome, Prompt, TaskRun, WorkloadError};

/// A stand-in model: makes the first required call once, then answers "Nothing to add.".
fn scripted_output(run: &TaskRun) -> String {
    let task = run.task();
    let Prompt::Chat(messages) = run.prompt() else {
        return " x".into();
    };
    let already_called = messages.iter().any(|m| m.role == "tool");
    match task.required_calls.first() {
        Some(call) if !already_called => format!(
            "<tool_call>[{}]</tool_call>",
            serde_json::json!({"name": call.tool, "arguments": call.arguments})
        ),
        _ => "Nothing to add.".into(),
    }
}

#[test]
fn every_builtin_runs_to_an_outcome() {
    for name in workload::builtin_names() {
        let w = workload::load(name).expect("builtin loads");
        assert!(w.locked, "{name}: {}", workload::lock_line(&w));
        assert_eq!(w.hash.len(), 64);
        for task in &w.tasks {
            let mut run = TaskRun::new(task);
            let result = loop {
                assert!(run.max_tokens() > 0);
                let out = scripted_output(&run);
                match run.feed(&out, false) {
                    Next::Continue => continue,
                    Next::Done(r) => break r,
                }
            };
            assert!(
                result.turns >= 1 && result.turns <= task.max_turns,
                "{name}/{}",
                task.id
            );
            if task.is_agent() {
                assert_eq!(result.turns, 2, "{name}/{}", task.id);
                assert!(!result.tool_calls.is_empty());
            }
            let json = serde_json::to_string(&result).expect("serializes");
            let back: workload::TaskResult = serde_json::from_str(&json).expect("round-trips");
            assert_eq!(back, result);
            // "Nothing to add." answers no task.
            assert!(
                matches!(result.outcome, Outcome::Fail { .. }),
                "{name}/{}: {:?}",
                task.id,
                result.outcome
            );
        }
    }
}

#[test]
fn an_edited_shipped_file_without_a_version_bump_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = std::fs::read_to_string("workloads/extract.toml").expect("shipped file");
    std::fs::copy(
        "workloads/workloads.lock",
        dir.path().join("workloads.lock"),
    )
    .expect("copy lock");
    let path = dir.path().join("extract.toml");
    std::fs::write(&path, text.replace("Tom Becker", "Tom Baker")).expect("write");
    let err = workload::load(path.to_str().expect("utf-8")).expect_err("must be refused");
    assert!(matches!(err, WorkloadError::HashMismatch(_)));
    let msg = err.to_string();
    assert!(
        msg.contains("extract.toml")
            && msg.contains("bump `version`")
            && msg.contains("extract 2 "),
        "{msg}"
    );
}
