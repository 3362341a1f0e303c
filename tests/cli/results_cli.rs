//! Results people can use, end to end on the tiny model: the summary stored in the record is
//! what the sheet prints, `report` re-renders a run exactly, the text log keeps every summary,
//! `--exit-code` gates on the verdict, SIGINT leaves an `interrupted` record of the finished
//! rounds, two concurrent runs into one file both survive, a failure before the model loads is
//! recorded, and bad input to `report` is a clear error.

use crate::support;

use std::path::Path;

use support::{args, ok, read, tiny, tokfire, workload, WORKLOAD};
use tokfire::kernels::Level;
use tokfire::model::synthetic::{write_gguf, Spec};
use tokfire::record::summary::summarize_run;
use tokfire::record::RunStatus;

#[test]
fn the_stored_summary_is_the_sheet_and_report_reprints_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let out = dir.path().join("r.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut a = vec!["sweep", "--jobs", "1,2", "--threads", "1"];
    a.extend(args(m, wl, o));
    let printed = ok(&a);
    let run = &read(&out).runs[0];
    let stored = run.summary.clone().expect("the record carries its summary");
    assert_eq!(
        stored,
        summarize_run(run),
        "stored = derived from the samples"
    );
    assert_eq!(stored.levels.len(), 2);
    // The sheet prints the stored numbers: every level's TTFT median and done count.
    for s in &stored.levels {
        let ttft = format!("{:.3}", s.ttft_median_s.unwrap());
        assert!(printed.contains(&ttft), "{ttft} not in:\n{printed}");
    }
    assert_eq!(ok(&["report", o]), printed, "report = what sweep printed");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["report", o, "--format", "json"])).unwrap();
    assert_eq!(json["summary"], serde_json::to_value(&stored).unwrap());
    assert!(
        json.get("levels").is_none(),
        "no raw samples in --format json"
    );
    let full: serde_json::Value =
        serde_json::from_str(&ok(&["report", o, "--format", "json-full"])).unwrap();
    assert!(full["levels"][0]["rounds"].is_array());
    let csv = ok(&["report", o, "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "header + one row per level:\n{csv}");
    assert!(lines[1].starts_with(&format!("{},{m},", run.id)), "{csv}");
    let log = std::fs::read_to_string(out.with_extension("txt")).unwrap();
    assert!(
        support::has(&log, &run.id)
            && support::has(&log, "verdict:")
            && support::has(&log, "complete")
    );
}

#[test]
fn exit_code_gates_on_the_verdict_at_the_highest_level() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let strict = WORKLOAD.replace("ttft_max_s = 30.0", "ttft_max_s = 0.000000001");
    let wl = workload(dir.path(), &strict);
    let out = dir.path().join("r.json");
    let run = |wl: &Path, extra: &[&str]| {
        let mut a = vec![
            "run",
            "--rounds",
            "1",
            "--allow-few-rounds",
            "--warmup",
            "0",
        ];
        a.extend(args(
            m.to_str().unwrap(),
            wl.to_str().unwrap(),
            out.to_str().unwrap(),
        ));
        a.extend(extra);
        tokfire().args(&a).output().unwrap()
    };
    assert!(run(&wl, &[]).status.success(), "no gate without the flag");
    let res = run(&wl, &["--exit-code"]);
    assert_eq!(res.status.code(), Some(1));
    let e = String::from_utf8_lossy(&res.stderr);
    assert!(
        support::has(&e, "--exit-code") && support::has(&e, "median TTFT"),
        "{e}"
    );
    let lenient = workload(dir.path(), WORKLOAD);
    assert!(
        run(&lenient, &["--exit-code"]).status.success(),
        "comfortable: exit 0"
    );
}

#[test]
fn sigint_after_round_two_records_an_interrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut child = support::slow_run(dir.path(), &out, 200);
    support::wait_for_rounds(&mut child, &out, 2);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let res = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    let run = &read(&out).runs[0];
    if run.levels[0].rounds.len() == 200 && run.status == RunStatus::Complete {
        return; // the signal arrived after the last step: nothing to interrupt
    }
    assert_eq!(res.status.code(), Some(130), "{stderr}");
    assert!(support::has(&stderr, "interrupted by SIGINT"), "{stderr}");
    assert_eq!(
        run.status,
        RunStatus::Interrupted {
            signal: "SIGINT".into()
        }
    );
    assert!(run.levels[0].rounds.len() >= 2, "rounds 1-2 kept");
    for r in &run.levels[0].rounds {
        assert_eq!(r.tasks.len(), 6, "only whole rounds are kept");
    }
    assert!(std::fs::read_to_string(out.with_extension("txt"))
        .unwrap()
        .contains("interrupted (SIGINT)"));
    // Every rendering says so and counts the rounds the run has, not the rounds it asked for.
    let o = out.to_str().unwrap();
    let n = run.levels[0].rounds.len();
    let said = format!("interrupted (SIGINT); measured rounds done: 2 jobs {n} of 200");
    let text = ok(&["report", o]);
    assert!(support::has(&text, format!("status: {said}")), "{text}");
    assert!(
        support::has(&text, format!("status:    {said}")),
        "one-screen summary:\n{text}"
    );
    assert!(ok(&["report", o, "--format", "md"]).contains(&said));
    let csv = ok(&["report", o, "--format", "csv"]);
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let col = head
        .split(',')
        .position(|h| h == "status")
        .expect("a status column");
    assert_eq!(row.split(',').nth(col), Some("interrupted"), "{csv}");
    let html = dir.path().join("r.html");
    ok(&["report", o, "--html", html.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&html).unwrap().contains(&said));
}

#[test]
fn configuration_errors_are_refused_before_anything_is_recorded_or_started() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("r.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let refused = |a: &[&str], needle: &str| {
        let res = tokfire().args(a).output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(1), "{a:?}: {err}");
        assert!(support::has(&err, needle), "{a:?}: '{needle}' not in {err}");
        assert_eq!(err.matches(needle).count(), 1, "said once: {err}");
        assert!(!support::has(&err, "start 1/"), "a start ran: {err}");
        assert!(!out.exists(), "{a:?} wrote a record");
    };
    let mut flags: Vec<(&str, &str, &str)> = vec![("--threads", "100000", "per logical CPU")];
    if !cfg!(feature = "cuda") {
        flags.push(("--device", "cuda", "--features cuda"));
    }
    // A kernel level this CPU lacks (none on a CPU that has them all).
    let missing = Level::ALL
        .iter()
        .find(|l| !l.available())
        .map(|l| l.to_string());
    if let Some(level) = missing.as_deref() {
        flags.push(("--kernels", level, "this CPU does not support it"));
    }
    for (flag, value, needle) in flags {
        for verb in [&["run"][..], &["sweep"], &["ab", "--aa"]] {
            let mut a = verb.to_vec();
            a.extend(args(m, wl, o));
            a.extend([flag, value]);
            refused(&a, needle);
        }
        refused(
            &[
                "cold", "--model", m, "--repeat", "1", "--out", o, flag, value,
            ],
            needle,
        );
        refused(
            &["generate", "--model", m, "--prompt", "hi", flag, value],
            needle,
        );
    }
}

#[test]
fn two_concurrent_runs_into_one_file_keep_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("shared.json");
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let spawn = || {
        let mut a = vec!["run", "--rounds", "3", "--warmup", "0", "--threads", "1"];
        a.extend(args(
            m.to_str().unwrap(),
            wl.to_str().unwrap(),
            out.to_str().unwrap(),
        ));
        support::spawn(&a)
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let file = read(&out);
    assert_eq!(file.runs.len(), 2, "neither run lost the other");
    assert!(file.runs.iter().all(|r| r.status == RunStatus::Complete));
    assert_ne!(file.runs[0].id, file.runs[1].id);
}

#[test]
fn a_failure_before_the_model_loads_is_a_recorded_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("other.gguf");
    let spec = Spec {
        arch: "notallama".into(),
        ..Spec::default()
    };
    write_gguf(&m, &spec).unwrap();
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("r.json");
    let mut a = vec!["run"];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    let res = tokfire().args(&a).output().unwrap();
    assert_eq!(res.status.code(), Some(1));
    let run = &read(&out).runs[0];
    let RunStatus::Failed { error } = &run.status else {
        panic!("not failed: {:?}", run.status);
    };
    assert!(error.contains("notallama"), "{error}");
    assert!(run.levels.is_empty());
    assert!(ok(&["report", out.to_str().unwrap()]).contains("failed"));
}

#[test]
fn bad_input_to_report_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/record-v1.json");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    };
    let fails = |a: &[&str], want: &[&str]| {
        let out = tokfire().args(a).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{a:?}: {e}");
        assert!(!support::has(&e, "panicked"), "{e}");
        for w in want {
            assert!(support::has(&e, w), "{a:?}: {w:?} not in {e}");
        }
    };
    let notes = write("notes.json", r#"{"hello": 1}"#);
    fails(
        &["report", &notes],
        &["notes.json", "not a tokfire results file"],
    );
    let cut = write("cut.json", &text[..text.len() / 2]);
    fails(&["report", &cut], &["cut.json", "truncated"]);
    let newer = write(
        "newer.json",
        &text.replacen("\"tokfire_results\":1", "\"tokfire_results\":99", 1),
    );
    fails(&["report", &newer], &["newer.json", "newer tokfire", "99"]);
    let f = fixture.to_str().unwrap();
    fails(
        &["report", f, "--run", "nope"],
        &["record-v1.json", "nope", "20261202T190000Z-4242"],
    );
    fails(
        &["report", "/no/such/file.json"],
        &["/no/such/file.json", "no such results file"],
    );
    // A version-1 record still loads and renders, summary derived on reading.
    assert!(ok(&["report", f]).contains("verdict:"));
}

/// Busy-loop processes that die with the guard.
struct Hogs(Vec<std::process::Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_cpu_hog_beside_a_run_flags_its_rounds_and_the_verdict_is_retest() {
    let _real = support::real_weights();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs = Hogs(
        (0..n)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    // Real weights, so a round lasts long enough for the OS counters' clock ticks.
    let sheet = ok(&[
        "run",
        "--jobs",
        "1",
        "--threads",
        "1",
        "-n",
        "16",
        "--model",
        "smollm2-135m-instruct-q4_1",
        "--quiet-wait",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    drop(hogs);
    let run = &read(&out).runs[0];
    let rounds = &run.levels[0].rounds;
    let seen: Vec<_> = rounds.iter().filter_map(|r| r.sentinel.as_ref()).collect();
    assert_eq!(
        seen.len(),
        rounds.len(),
        "every round, warm-up included, has a reading"
    );
    if seen.iter().any(|s| s.other_cpu_s.is_none()) {
        return; // no /proc/stat here: nothing to judge by
    }
    // --quiet-wait waited before every measured round, ran out and said so.
    let waits: Vec<_> = rounds
        .iter()
        .filter(|r| !r.warmup)
        .map(|r| r.quiet_wait)
        .collect();
    for w in waits {
        let w = w.expect("a wait before every measured round");
        assert!(!w.quiet && w.waited_s >= 0.9, "{w:?}");
    }
    assert!(rounds
        .iter()
        .filter(|r| r.warmup)
        .all(|r| r.quiet_wait.is_none()));
    assert!(support::has(&sheet, "--quiet-wait 1: waited"), "{sheet}");
    assert!(
        support::has(&sheet, "3 started with the machine still busy"),
        "{sheet}"
    );
    let s = run.summary.as_ref().unwrap();
    let q = &s.levels[0].quiet;
    assert!(q.mostly_disturbed(), "{q:?}: {seen:?}");
    assert!(q.other_cores.unwrap() > 0.25, "{q:?}");
    let v = &s.verdicts[0];
    assert!(v.retest.is_some() && !v.comfortable, "{v:?}");
    for want in [
        "rounds disturbed",
        "retest: ",
        "run again on a quiet machine",
        "machine:",
    ] {
        assert!(support::has(&sheet, want), "'{want}' not in:\n{sheet}");
    }
    let csv = ok(&["report", out.to_str().unwrap(), "--format", "csv"]);
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let col = head
        .split(',')
        .position(|h| h == "disturbed_rounds")
        .unwrap();
    let d: f64 = row.split(',').nth(col).unwrap().parse().unwrap();
    assert!(d >= 2.0, "{csv}");
    let json = ok(&["report", out.to_str().unwrap(), "--format", "json"]);
    assert!(json.contains("\"retest\""), "{json}");
    let html = dir.path().join("r.html");
    ok(&[
        "report",
        out.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        support::has(&page, "rounds disturbed") && support::has(&page, "retest"),
        "HTML says it"
    );
    assert!(
        support::has(&page, "— DISTURBED: other processes"),
        "the round shown is marked"
    );
    assert!(
        seen.iter().all(|s| s.minor_faults.is_some()),
        "page faults read"
    );
}
