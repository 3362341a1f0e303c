//! `tokfire run` / `sweep` end to end on a tiny synthetic model and a workload the test writes:
//! the sheet, the JSON record with every field, atomic saving (a SIGKILL mid-run leaves a valid
//! record of the finished rounds), and clear errors for bad input that lose nothing.

use std::path::Path;

use tokfire::record::{ResultsFile, RunStatus};

use crate::support;
use support::{args, read, tiny, tokfire, workload, WORKLOAD};

#[test]
fn sweep_prints_the_sheet_and_records_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("res").join("r.json");
    let trace = dir.path().join("trace.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut a = vec!["sweep", "--jobs", "1,3", "--threads", "1"];
    a.extend(["--trace", trace.to_str().unwrap()]);
    a.extend(args(m, wl, o));
    let res = tokfire().args(&a).output().unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    for want in [
        "done",
        "tried",
        "TTFT med s",
        "agg tok/s",
        "batching",
        "verdict",
        "task:",
        "prompts:",
        "quality:",
        "timing:",
        "resources:",
        "command:",
    ] {
        assert!(
            support::has(&stdout, want),
            "missing {want:?} in:\n{stdout}"
        );
    }
    let file = read(&out);
    assert_eq!(file.runs.len(), 1);
    let run = &file.runs[0];
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.config.jobs, vec![1, 3]);
    assert_eq!(run.workload.name, "tiny");
    assert_eq!(run.workload.hash.len(), 64);
    assert_eq!(run.model.sha256.len(), 64);
    assert!(run.command.iter().any(|a| a == "sweep"));
    assert!(!run.build.version.is_empty() && !run.machine.cpu_model.is_empty());
    assert_eq!(run.runtime.threads, 1, "--threads is applied and recorded");
    assert_eq!(run.config.runtime.threads, Some(1));
    assert!(run.runtime.kernels.starts_with("tokfire kernels "));
    // --kernels auto: the level measured on this CPU, and the record says so.
    let by = &run.runtime.level_by;
    assert!(
        by.starts_with("measured ") || by.ends_with("the only level this CPU has"),
        "{by}"
    );
    assert!(run.load.seconds > 0.0);
    assert_eq!(run.levels.len(), 2);
    for level in &run.levels {
        assert_eq!(level.rounds.len(), 4, "1 warm-up + 3 measured");
        assert!(level.rounds[0].warmup && !level.rounds[1].warmup);
        for r in &level.rounds {
            assert_eq!(r.tasks.len(), 3 * level.jobs, "every job runs every task");
            assert!(r.wall_s > 0.0 && r.forward_s > 0.0 && r.forward_s <= r.wall_s);
            assert!(!r.steps.is_empty());
            for t in &r.tasks {
                assert!(
                    t.output_tokens >= 1
                        && t.ttft_s.is_some()
                        && t.completion_s >= t.ttft_s.unwrap()
                );
                assert_eq!(t.gaps_ms.len(), t.output_tokens - 1);
            }
        }
    }
    let three = &run.levels[1];
    assert!(
        three
            .rounds
            .iter()
            .flat_map(|r| &r.steps)
            .any(|s| s.seqs == 3 && s.decode_tokens == 3),
        "3 jobs were batched into one decode step"
    );
    // The record round-trips through serde.
    let again: ResultsFile = serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(&file).unwrap()
    );
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    assert!(events.len() > 10);
    // Every step carries the planner's decision, and the queue is a counter track.
    let steps: Vec<_> = events.iter().filter(|e| e["name"] == "step").collect();
    assert!(!steps.is_empty());
    assert!(steps
        .iter()
        .all(|e| e["args"]["plan"]["running"].as_u64() >= Some(1)));
    let queue: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "queue")
        .collect();
    assert_eq!(queue.len(), steps.len(), "one queue sample per step");
    assert!(queue
        .iter()
        .any(|e| e["args"]["running"].as_u64() >= Some(2)));

    // A second run appends to the same file.
    let mut a = vec!["run", "--jobs", "2", "--format", "csv"];
    a.extend(args(m, wl, o));
    let res = tokfire().args(&a).output().unwrap();
    assert!(res.status.success());
    assert!(String::from_utf8_lossy(&res.stdout).starts_with("run_id,model,model_sha256,workload,"));
    assert_eq!(read(&out).runs.len(), 2);
}

#[test]
fn sigkill_after_round_two_leaves_a_valid_record_of_the_rounds_done() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut child = support::slow_run(dir.path(), &out, 3);
    support::wait_for_rounds(&mut child, &out, 2);
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let file = read(&out);
    let run = &file.runs[0];
    let done = run.levels[0].rounds.len();
    assert!(done >= 2, "rounds 1-2 kept");
    if done == 2 {
        assert_eq!(
            run.status,
            RunStatus::Running,
            "killed mid-run: status says it never finished"
        );
    }
    for r in &run.levels[0].rounds {
        assert_eq!(r.tasks.len(), 6);
    }
}

/// Runs and expects failure; returns stderr after checking there is no panic.
fn fails(args: &[&str]) -> String {
    let out = tokfire().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(
        !support::has(&stderr, "panicked"),
        "panic for {args:?}: {stderr}"
    );
    stderr
}

#[test]
fn bad_input_is_a_clear_error_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let m = m.to_str().unwrap();
    let out = dir.path().join("kept.json");
    let o = out.to_str().unwrap();
    let good = workload(dir.path(), WORKLOAD);
    let good = good.to_str().unwrap();
    let mut a = vec![
        "run",
        "--rounds",
        "1",
        "--allow-few-rounds",
        "--warmup",
        "0",
    ];
    a.extend(args(m, good, o));
    assert!(tokfire().args(&a).output().unwrap().status.success());
    let before = std::fs::read(&out).unwrap();
    // `verb` on the tiny model with `workload`, results to `out`, plus `extra`.
    let bad = |verb: &str, workload: &str, out: &str, extra: &[&str]| {
        let mut a = vec![verb];
        a.extend(args(m, workload, out));
        a.extend(extra);
        fails(&a)
    };

    let file = dir.path().join("bad.toml");
    let f = file.to_str().unwrap();
    std::fs::write(
        &file,
        WORKLOAD.replace("max_tokens = 6", "max_tokens = \"six\""),
    )
    .unwrap();
    let e = bad("run", f, o, &[]);
    assert!(
        support::has(&e, "bad.toml") && support::has(&e, "max_tokens") && support::has(&e, "line"),
        "{e}"
    );
    std::fs::write(
        &file,
        WORKLOAD.replace("kind = \"regex\"", "kind = \"telepathy\""),
    )
    .unwrap();
    let e = bad("run", f, o, &[]);
    assert!(
        support::has(&e, "telepathy") && support::has(&e, "contains"),
        "{e}"
    );

    // A shipped workload edited without a version bump.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let edited = dir.path().join("chat.toml");
    let chat = std::fs::read_to_string(repo.join("chat.toml")).unwrap();
    std::fs::write(&edited, chat.replacen("user = \"", "user = \"Please, ", 1)).unwrap();
    let e = bad("run", edited.to_str().unwrap(), o, &[]);
    assert!(
        support::has(&e, "chat.toml") && support::has(&e, "bump `version`"),
        "{e}"
    );

    assert!(bad("sweep", good, o, &["--jobs", "1,0"]).contains("--jobs"));
    assert!(bad("run", good, o, &["--rounds", "0"]).contains("--rounds"));
    assert!(bad("run", good, o, &["--rounds", "2"]).contains("--allow-few-rounds"));
    assert!(bad("run", good, o, &["--threads", "0"]).contains("--threads"));
    let e = bad("run", good, o, &["--kernels", "avx9"]);
    assert!(
        support::has(&e, "--kernels avx9") && support::has(&e, "avx512-vnni"),
        "{e}"
    );
    let e = bad("run", "no-such-workload", o, &[]);
    assert!(
        support::has(&e, "no-such-workload") && support::has(&e, "chat"),
        "{e}"
    );

    // An --out that cannot be written fails before any work; a non-results file is not touched.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let e = bad("run", good, blocker.join("r.json").to_str().unwrap(), &[]);
    assert!(support::has(&e, "--out") && support::has(&e, "file"), "{e}");
    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, "my notes").unwrap();
    let e = bad("run", good, notes.to_str().unwrap(), &[]);
    assert!(support::has(&e, "not a tokfire results file"), "{e}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");

    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "nothing already written is lost"
    );
}
