//! What the CLI tests of `run`, `sweep` and `report` share: the binary, a tiny synthetic model,
//! a small workload, and reading a results file back.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tokfire::model::synthetic::{write_gguf, Spec};
use tokfire::record::ResultsFile;

/// Held by every test that starts the shipped real models: the tests of one binary run in
/// parallel, and a cold start's eviction does not take while another test maps the same file.
pub fn real_weights() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every line of a text screen fits 100 columns (Markdown table rows aside).
pub fn fits_100(text: &str) {
    for l in text.lines().filter(|l| !l.starts_with('|')) {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}\n{text}",
            l.chars().count()
        );
    }
}

pub use crate::text::has;

pub fn tokfire() -> Command {
    let mut c = Command::cargo_bin("tokfire").unwrap();
    c.env_remove("TOKFIRE_CACHE").env("TOKFIRE_LOG", "error");
    c
}

/// Runs the binary, expects success, returns stdout.
pub fn ok(a: &[&str]) -> String {
    let out = tokfire().args(a).output().unwrap();
    assert!(
        out.status.success(),
        "{a:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn tiny(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.gguf");
    write_gguf(&path, &Spec::default()).unwrap();
    path
}

/// A workload with a chat task, a raw task and an agent-free JSON task.
pub const WORKLOAD: &str = r#"
name = "tiny"
version = 1
use_case = "test"
description = "Three small tasks for the synthetic model."

[criteria]
label = "test targets"
ttft_max_s = 30.0
pass_rate_min = 0.0

[[tasks]]
id = "chat-one"
user = "hello there"
max_tokens = 6
checks = [{ kind = "contains", value = "zzz-never" }]

[[tasks]]
id = "raw-two"
raw = "once upon a time"
max_tokens = 5
checks = [{ kind = "not_contains", value = "zzz-never" }]

[[tasks]]
id = "chat-three"
system = "be brief"
user = "count to three"
max_tokens = 4
checks = [{ kind = "regex", pattern = "." }]
"#;

pub fn workload(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, text).unwrap();
    p
}

pub fn read(path: &Path) -> ResultsFile {
    tokfire::record::io::read(path).unwrap()
}

/// The record at `path` as one JSON document (`{"tokfire_results", "runs"}`, the layout before
/// schema 6, which every reader still takes): for tests that edit a stored run.
pub fn doc(path: &Path) -> serde_json::Value {
    serde_json::to_value(read(path)).unwrap()
}

pub fn args<'a>(model: &'a str, wl: &'a str, out: &'a str) -> Vec<&'a str> {
    vec!["--model", model, "--workload", wl, "--out", out]
}

/// Starts `run --jobs 2` of `rounds` measured rounds of long tasks in the background, results
/// to `out`, stderr piped.
pub fn slow_run(dir: &Path, out: &Path, rounds: usize) -> std::process::Child {
    let m = tiny(dir);
    let slow = WORKLOAD
        .replace("max_tokens = 6", "max_tokens = 120")
        .replace("max_tokens = 5", "max_tokens = 120");
    let wl = workload(dir, &slow);
    let rounds = rounds.to_string();
    let mut a = vec!["run", "--jobs", "2", "--warmup", "0", "--rounds", &rounds];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    spawn(&a)
}

/// Starts `tokfire ARGS` in the background: stdout discarded, stderr piped, logs at error.
pub fn spawn(args: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("tokfire"))
        .args(args)
        .env("TOKFIRE_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the first run in `out` holds `n` rounds; the file must be valid whenever it exists.
pub fn wait_for_rounds(child: &mut std::process::Child, out: &Path, n: usize) {
    let saved = || -> usize {
        if !out.exists() {
            return 0;
        }
        let file = tokfire::record::io::read(out).expect("the record is always valid");
        file.runs
            .first()
            .map_or(0, |r| r.levels.iter().map(|l| l.rounds.len()).sum())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while saved() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "round {n} never saved"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before round {n}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Maps `path` read-only and touches every page, as a running server holding the model would:
/// its pages cannot be evicted while the map lives.
pub fn hold_mapped(path: &Path) -> memmap2::Mmap {
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: a read-only map of a file nobody writes while the test runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    std::hint::black_box(map.iter().step_by(4096).map(|b| *b as u64).sum::<u64>());
    map
}

/// `report` renders the last run of `out` in every format with its kind's own content: text,
/// Markdown and the HTML page name every string of `must`, CSV has a header and rows, both JSON
/// formats parse and the full one says `kind`.
pub fn every_format(out: &Path, kind: &str, must: &[&str]) {
    let o = out.to_str().unwrap();
    for format in ["text", "md"] {
        let s = ok(&["report", o, "--format", format]);
        fits_100(&s);
        for m in must {
            assert!(has(&s, m), "{kind} as {format} lacks {m:?}:\n{s}");
        }
    }
    let csv = ok(&["report", o, "--format", "csv"]);
    assert!(csv.lines().count() >= 2, "{kind} as csv:\n{csv}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["report", o, "--format", "json"]))
        .unwrap_or_else(|e| panic!("{kind} as json: {e}"));
    assert!(!json.is_null());
    let full: serde_json::Value =
        serde_json::from_str(&ok(&["report", o, "--format", "json-full"])).unwrap();
    let run = full
        .get("runs")
        .map_or(&full, |r| &r[r.as_array().unwrap().len() - 1]);
    assert_eq!(run["kind"], kind, "json-full of a {kind} run");
    let page = out.with_extension("page.html");
    let res = tokfire()
        .args(["report", o, "--html", page.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{kind} --html: {stderr}");
    let p = std::fs::read_to_string(&page).unwrap();
    assert!(
        p.starts_with("<!DOCTYPE html>") && p.ends_with("</html>\n"),
        "{kind} page"
    );
    for m in must {
        assert!(p.contains(m), "the {kind} page lacks {m:?}");
    }
}
