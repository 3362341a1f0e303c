//! `tokfire session FILE` end to end: a script on a tiny synthetic model runs every step in
//! order with its clocks, `--time-scale` shrinks the idle gap and the report says so; bad
//! scripts (unknown key, negative idle, unknown model) are clear errors naming the line; the
//! shipped `workloads/session.toml` runs on real weights.

use std::path::Path;

use tokfire::record::session::StepKindTag;

use crate::support;
use support::{read, tiny, tokfire};

fn script(dir: &Path, model: &Path, body: &str) -> std::path::PathBuf {
    let text = format!(
        "name = \"t\"\n[[step]]\nload = \"{}\"\nevict = true\n{body}",
        model.display()
    );
    let p = dir.join("s.toml");
    std::fs::write(&p, text).unwrap();
    p
}

const BODY: &str = r#"
[[step]]
chat = "hello there"
max_tokens = 4
repeat = 2

[[step]]
idle = "1s"

[[step]]
raw = "once upon a time"
max_tokens = 3
"#;

#[test]
fn a_scripted_session_runs_every_step_in_order_with_its_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let s = script(dir.path(), &m, BODY);
    let out = dir.path().join("r.json");
    let res = tokfire()
        .args(["session", s.to_str().unwrap(), "--time-scale", "0.1"])
        .args(["--threads", "1", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    support::fits_100(&stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    for want in [
        "load",
        "warm-up",
        "TTFT",
        "completion",
        "waiting",
        "generating",
        "time scale 0.1",
    ] {
        assert!(
            support::has(&stdout, want),
            "missing {want:?} in:\n{stdout}"
        );
    }
    let run = read(&out).runs.remove(0);
    let sess = run.session().expect("a session record");
    let kinds: Vec<StepKindTag> = sess.steps.iter().map(|s| s.kind).collect();
    use StepKindTag::*;
    assert_eq!(kinds, [Load, Request, Request, Idle, Request]);
    assert_eq!(
        sess.steps.iter().map(|s| s.line).collect::<Vec<_>>(),
        [2, 6, 6, 11, 14]
    );
    assert_eq!(sess.steps[2].repeat, 1);
    let load = &sess.steps[0];
    assert!(load.load_s.unwrap() > 0.0 && load.warmup_s.unwrap() > 0.0);
    assert!(load.residency.is_some() && load.cold.is_some());
    assert!(load.split.as_ref().unwrap().mapped_bytes > 0);
    for r in sess.steps.iter().filter(|s| s.kind == Request) {
        let (t, c) = (r.ttft_s.unwrap(), r.completion_s.unwrap());
        assert!(t > 0.0 && c >= t, "{r:?}");
        assert!(r.output_tokens >= 1 && r.prompt_tokens >= 1);
    }
    let idle = &sess.steps[3];
    assert_eq!(idle.idle_script_s, Some(1.0));
    let slept = idle.idle_s.unwrap();
    assert!((0.1..0.6).contains(&slept), "slept {slept} s for 1 s × 0.1");
    assert_eq!(sess.time_scale, 0.1);
    for w in sess.steps.windows(2) {
        assert!(w[1].at_s >= w[0].at_s, "steps on one timeline, in order");
    }
    assert_eq!(run.config.verb, "session");

    support::every_format(&out, "session", &["TTFT", "waiting"]);
    // `report --format csv`: a header, then one row per step with its clocks as numbers.
    let csv = tokfire()
        .args(["report", out.to_str().unwrap(), "--format", "csv"])
        .output()
        .unwrap();
    assert!(csv.status.success());
    let csv = String::from_utf8_lossy(&csv.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines.len(),
        1 + sess.steps.len(),
        "a header and 5 steps:\n{csv}"
    );
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    for (row, step) in rows.iter().zip(&sess.steps) {
        assert_eq!(row.len(), header.len(), "{row:?}");
        assert_eq!(row[col("run_id")], run.id);
        assert_eq!(row[col("line")], step.line.to_string());
        let clock = |name: &str| -> Option<f64> {
            let cell = row[col(name)];
            (!cell.is_empty()).then(|| cell.parse().expect("a number"))
        };
        assert_eq!(clock("at_s"), Some(step.at_s));
        assert_eq!(clock("load_s"), step.load_s);
        assert_eq!(clock("warmup_s"), step.warmup_s);
        assert_eq!(clock("ttft_s"), step.ttft_s);
        assert_eq!(clock("completion_s"), step.completion_s);
        assert_eq!(clock("idle_s"), step.idle_s);
        assert_eq!(clock("time_scale"), Some(0.1));
    }
    assert_eq!(
        rows.iter().map(|r| r[col("kind")]).collect::<Vec<_>>(),
        ["load", "request", "request", "idle", "request"]
    );
    assert!(
        rows[0][col("header_s")].parse::<f64>().is_ok(),
        "the load split"
    );
}

#[test]
fn chat_steps_are_one_conversation_whose_context_grows() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let body = r#"
[[step]]
chat = "hello there"
system = "be brief"
max_tokens = 4

[[step]]
raw = "once upon a time"
max_tokens = 3

[[step]]
chat = "and then?"
system = "be brief"
max_tokens = 4

[[step]]
chat = "one more"
system = "be brief"
max_tokens = 4
repeat = 2
"#;
    let s = script(dir.path(), &m, body);
    let out = dir.path().join("r.json");
    let res = tokfire()
        .args(["session", s.to_str().unwrap(), "--threads", "1"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let run = read(&out).runs.remove(0);
    let sess = run.session().unwrap();
    let req: Vec<_> = sess
        .steps
        .iter()
        .filter(|s| s.kind == StepKindTag::Request)
        .collect();
    let turns: Vec<Option<usize>> = req.iter().map(|s| s.earlier_turns).collect();
    assert_eq!(
        turns,
        [Some(0), None, Some(1), Some(2), Some(2)],
        "raw steps stay outside"
    );
    // Each chat turn carries the earlier questions and answers: its prompt is longer than the
    // previous chat prompt plus that turn's answer.
    let chats: Vec<_> = req.iter().filter(|s| s.earlier_turns.is_some()).collect();
    for w in chats.windows(2).take(2) {
        assert!(
            w[1].prompt_tokens > w[0].prompt_tokens + w[0].output_tokens,
            "{} then {} (+{} answered)",
            w[0].prompt_tokens,
            w[1].prompt_tokens,
            w[0].output_tokens
        );
    }
    assert_eq!(
        chats[2].prompt_tokens, chats[3].prompt_tokens,
        "a repeat asks the same turn"
    );
    assert!(support::has(&stdout, "(chat turn 3)"), "{stdout}");
}

#[cfg(target_os = "linux")]
#[test]
fn an_asked_eviction_that_did_not_take_says_so_and_why() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let m = tiny(dir.path());
    // This test process maps the model, as a running server would: its pages cannot leave.
    let map = support::hold_mapped(&m);
    let s = script(dir.path(), &m, "[[step]]\nraw = \"once\"\nmax_tokens = 2\n");
    let out = dir.path().join("r.json");
    let res = tokfire()
        .args(["session", s.to_str().unwrap(), "--threads", "1"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let run = read(&out).runs.remove(0);
    let load = &run.session().unwrap().steps[0];
    let why = load
        .eviction_failed
        .as_deref()
        .expect("the eviction did not take");
    assert!(
        why.starts_with(&format!("mapped by pid {}", std::process::id())),
        "{why}"
    );
    assert_eq!(load.cold, Some(false));
    for want in [
        "warm, 100 % resident (eviction failed)",
        "step 1 (line 2): evict = true did not take: mapped by pid",
        "0 on a cold page cache, 1 asked eviction failed",
    ] {
        assert!(support::has(&stdout, want), "'{want}' not in:\n{stdout}");
    }
    drop(map);
}

fn fails(dir: &Path, text: &str) -> String {
    let p = dir.join("bad.toml");
    std::fs::write(&p, text).unwrap();
    let res = tokfire()
        .args(["session", p.to_str().unwrap(), "--out"])
        .arg(dir.join("r.json"))
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(1));
    let err = String::from_utf8_lossy(&res.stderr).to_string();
    assert!(!support::has(&err, "panicked"), "{err}");
    assert!(support::has(&err, "bad.toml"), "{err}");
    err
}

#[test]
fn bad_scripts_are_clear_errors_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let head = format!("name = \"t\"\n[[step]]\nload = \"{}\"\n", m.display());
    let e = fails(
        dir.path(),
        &format!("{head}[[step]]\nchat = \"x\"\nmax_tokenz = 3\n"),
    );
    assert!(
        support::has(&e, "line 6") && support::has(&e, "max_tokenz"),
        "{e}"
    );
    let e = fails(dir.path(), &format!("{head}[[step]]\nidle = \"-90s\"\n"));
    assert!(
        support::has(&e, "line 4") && support::has(&e, "negative"),
        "{e}"
    );
    let e = fails(
        dir.path(),
        &format!("{head}[[step]]\nload = \"no-such-model\"\n"),
    );
    assert!(
        support::has(&e, "line 4") && support::has(&e, "no-such-model"),
        "{e}"
    );
    let e = fails(dir.path(), "name = \"t\"\n[[step]\n");
    assert!(support::has(&e, "line 2"), "{e}");
    assert!(
        !dir.path().join("r.json").exists(),
        "nothing runs before the script is valid"
    );
}

#[test]
fn a_bad_time_scale_names_the_flag() {
    let res = tokfire()
        .args(["session", "workloads/session.toml", "--time-scale=-1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(
        !res.status.success() && support::has(&err, "--time-scale"),
        "{err}"
    );
}

#[test]
fn the_shipped_morning_runs_on_real_weights() {
    let _real = support::real_weights();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = tokfire();
    if let Some(c) = std::env::var_os("TOKFIRE_CACHE") {
        cmd.env("TOKFIRE_CACHE", c);
    }
    let res = cmd
        .args(["session", "workloads/session.toml", "--time-scale", "0.001"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let run = read(&out).runs.remove(0);
    let sess = run.session().unwrap();
    assert_eq!(sess.steps.len(), 8);
    let loads: Vec<_> = sess
        .steps
        .iter()
        .filter(|s| s.kind == StepKindTag::Load)
        .collect();
    assert_eq!(loads.len(), 3);
    assert_eq!(
        loads[0].cold,
        Some(true),
        "the first start evicts the model's file"
    );
    assert_eq!(
        loads[2].cold,
        Some(false),
        "swapping back finds the file cached"
    );
    for r in sess.steps.iter().filter(|s| s.kind == StepKindTag::Request) {
        assert!(r.output_tokens >= 1, "{r:?}");
    }
}
