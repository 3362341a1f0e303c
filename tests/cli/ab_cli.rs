//! `tokfire ab`, `compare` and `rerun` end to end on the tiny synthetic model: refusals name the
//! flag and the fix, an A/A never claims keep or revert, both arms land in the record `report`
//! reads, `compare` refuses different workloads and accepts different builds, `rerun` repeats
//! the stored config field by field.

use crate::support;

use support::{args, ok, read, tiny, tokfire, workload, WORKLOAD};

fn fails(a: &[&str], needles: &[&str]) {
    fails_with(a, 1, needles);
}

#[test]
fn ab_refuses_what_is_not_one_variable() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let run = |extra: &[&str], needles: &[&str]| {
        let mut a = vec!["ab"];
        a.extend(extra);
        a.extend(args(m, wl, o));
        fails(&a, needles);
    };
    run(
        &["--vary", "threads=1,2", "--vary", "max-seqs=4,8"],
        &["--vary", "threads=1,2 and max-seqs=4,8", "exactly one"],
    );
    run(
        &["--vary", "colour=red,blue"],
        &["unknown key 'colour'", "prefill-chunk"],
    );
    run(
        &["--vary", "threads=1,2,3"],
        &["exactly two values", "got 3"],
    );
    run(&["--vary", "threads=2"], &["exactly two values"]);
    run(&["--vary", "threads"], &["KEY=A,B"]);
    run(&["--vary", "prefill-chunk=32,32"], &["same value", "--aa"]);
    run(
        &["--vary", "threads=2,02"],
        &["resolve to the same configuration"],
    );
    run(&["--vary", "threads=0,2"], &["--threads 0"]);
    run(
        &["--vary", "prefix-cache=off,maybe"],
        &[
            "prefix-cache=maybe",
            "invalid value 'maybe'",
            "possible values: off, on",
        ],
    );
    // Keys are ab's own flags, parsed by their own definitions; a setting of the A/B is not one.
    run(&["--vary", "top-p=0.5,x"], &["top-p=x", "--top-p"]);
    run(
        &["--vary", "rounds=3,5"],
        &["--rounds is not a variable", "same rounds"],
    );
    run(
        &["--threads", "1", "--vary", "threads=1,2"],
        &["--threads is given too"],
    );
    run(&[], &["--vary", "--aa"]);
    assert!(
        !std::path::Path::new(o).exists(),
        "a refused ab writes no record"
    );
    let out = tokfire()
        .args(["ab", "--aa", "--vary", "threads=1,2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses --aa with --vary");
}

#[test]
fn an_aa_never_claims_a_win_and_both_arms_are_in_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    for seed in ["1", "2", "3"] {
        let mut a = vec![
            "ab",
            "--aa",
            "--rounds",
            "3",
            "--threads",
            "1",
            "--seed",
            seed,
        ];
        a.extend(args(m, wl, o));
        let screen = ok(&a);
        support::fits_100(&screen);
        // One name, one figure: ab's medians are named as medians of rounds (the sheet's are
        // over tasks), memory in the sheet's unit.
        assert!(
            screen.contains("median of rounds") && !screen.contains("MiB"),
            "{screen}"
        );
        assert!(support::has(&screen, "verdict: retest"), "{screen}");
        assert!(
            support::has(&screen, "outputs: identical between A and B on all 3 tasks"),
            "{screen}"
        );
    }
    let file = read(std::path::Path::new(o));
    assert_eq!(file.runs.len(), 6, "two arms per ab");
    for pair in file.runs.chunks(2) {
        let (a, b) = (pair[0].ab().unwrap(), pair[1].ab().unwrap());
        assert_eq!(
            (a.arm.as_str(), b.arm.as_str(), &a.pair),
            ("A", "B", &b.pair)
        );
        assert_eq!(a.rounds.len(), 3);
        let v = b.verdict.as_ref().expect("arm B carries the verdict");
        assert_eq!(format!("{}", v.decision), "retest", "{}", v.reason);
        // ABBA order after one warm-up per arm: A B | A B B A A B.
        let idx = |r: &tokfire::record::RunRecord| -> Vec<usize> {
            r.levels[0].rounds.iter().map(|x| x.index).collect()
        };
        assert_eq!(
            (idx(&pair[0]), idx(&pair[1])),
            (vec![0, 2, 5, 6], vec![1, 3, 4, 7])
        );
    }
    let report = ok(&["report", o, "--run", &file.runs[1].id]);
    assert!(report.contains("tokfire ab"), "{report}");
}

#[test]
fn an_ab_of_engine_budgets_runs_on_one_model_load() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let mut a = vec![
        "ab",
        "--vary",
        "prefill-chunk=256,2",
        "--expect",
        "ttft",
        "--rounds",
        "3",
        "--jobs",
        "2",
        "--threads",
        "1",
        "--note",
        "quiet room",
    ];
    a.extend(args(m, wl, o));
    let screen = ok(&a);
    assert!(
        support::has(&screen, "A prefill-chunk=256") && support::has(&screen, "B prefill-chunk=2"),
        "{screen}"
    );
    assert!(support::has(&screen, "note: quiet room"), "{screen}");
    assert!(
        !screen.contains("planned the same steps"),
        "2-token chunks change the plan: {screen}"
    );
    let file = read(std::path::Path::new(o));
    let (ra, rb) = (&file.runs[0], &file.runs[1]);
    assert_eq!(
        (ra.scheduler.prefill_chunk, rb.scheduler.prefill_chunk),
        (256, 2)
    );
    assert_eq!(ra.load.seconds, rb.load.seconds, "B shares A's load");
    assert_eq!(rb.config.notes, vec!["quiet room".to_string()]);
    let s = rb.ab().unwrap().rounds[0]
        .sentinel
        .as_ref()
        .expect("linux has /proc");
    assert!(s.own_cpu_s.is_some() && s.wall_s > 0.0);
    // `report` re-renders the pair as the A/B screen: same arms, verdict and sentinel lines.
    let again = ok(&["report", o]);
    assert_eq!(again, screen, "report prints what ab printed");
    assert!(again.contains("rounds disturbed"), "{again}");
}

#[test]
fn expect_load_samples_a_load_per_measured_round() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let mut a = vec![
        "ab",
        "--vary",
        "dtype=q,f32",
        "--expect",
        "load",
        "--rounds",
        "3",
    ];
    a.extend(args(m, wl, o));
    let screen = ok(&a);
    assert!(support::has(&screen, "load"), "{screen}");
    let file = read(std::path::Path::new(o));
    for run in &file.runs {
        let rounds = &run.ab().unwrap().rounds;
        assert_eq!(rounds.len(), 3);
        assert!(
            rounds.iter().all(|r| r.load_s.is_some_and(|s| s > 0.0)),
            "{rounds:?}"
        );
    }
    let v = file.runs[1].ab().unwrap().verdict.as_ref().unwrap();
    assert!(v.effect.is_some(), "a load effect from the samples: {v:?}");
}

#[test]
fn speculation_and_load_mode_are_variables_and_greedy_output_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    for vary in ["spec=none,lookup", "spec-k=2,4", "load=copy,mmap"] {
        let mut a = vec!["ab", "--vary", vary, "--rounds", "3"];
        if vary.starts_with("spec-k") {
            a.extend(["--spec", "lookup"]);
        }
        a.extend(args(m, wl, o));
        let screen = ok(&a);
        let file = read(std::path::Path::new(o));
        let b = file.runs.last().unwrap();
        let v = b.ab().unwrap().verdict.as_ref().unwrap();
        assert!(
            v.changed_tasks.iter().all(|t| t.same_output),
            "{vary}: greedy output must not change: {screen}"
        );
        if vary.starts_with("spec") {
            assert_eq!(
                b.drafter.as_ref().map(|d| d.spec.as_str()),
                Some("lookup"),
                "{vary}"
            );
            // Each arm that drafted shows its acceptance (spec=none's arm A drafts nothing).
            let lines = screen.matches("speculation, ").count();
            let want = if vary.starts_with("spec-k") { 2 } else { 1 };
            assert_eq!(lines, want, "{vary}: {screen}");
            assert!(screen.contains("tokens per verify"), "{screen}");
        }
    }
    // Our kernels against candle's (the device-generic path): the arm says which ran, and the
    // tiny model's greedy text stays (drift would be allowed, and named).
    let mut a = vec!["ab", "--vary", "kernels=auto,candle", "--rounds", "3"];
    a.extend(args(m, wl, o));
    let screen = ok(&a);
    let file = read(std::path::Path::new(o));
    let (arm_a, arm_b) = (&file.runs[file.runs.len() - 2], file.runs.last().unwrap());
    assert!(!arm_a.config.runtime.candle && arm_b.config.runtime.candle);
    assert_eq!(arm_b.runtime.kernels, "candle kernels", "{screen}");
    assert!(arm_a.runtime.kernels.starts_with("tokfire kernels"));
    assert!(
        arm_b.runtime.level_by.is_empty(),
        "candle's kernels choose no level"
    );
    let v = arm_b.ab().unwrap();
    assert_eq!(
        v.drift_allowed.as_deref(),
        Some("candle's kernels quantize activations and sum in their own way")
    );
    assert!(
        v.verdict
            .as_ref()
            .unwrap()
            .changed_tasks
            .iter()
            .all(|t| t.same_output),
        "{screen}"
    );
    // A key the hand-written table never had: the flag's own parser, and sampling may drift.
    let mut a = vec!["ab", "--vary", "temperature=0,0.8", "--rounds", "3"];
    a.extend(args(m, wl, o));
    ok(&a);
    let file = read(std::path::Path::new(o));
    let b = file.runs.last().unwrap().ab().unwrap();
    assert_eq!((b.vary.as_str(), b.value.as_str()), ("temperature", "0.8"));
    assert_eq!(
        b.drift_allowed.as_deref(),
        Some("sampling settings change the text")
    );
    fails(
        &[
            "ab",
            "--vary",
            "spec-k=0,2",
            "--spec",
            "lookup",
            "--model",
            m,
            "--workload",
            wl,
        ],
        &["--vary", "spec-k"],
    );
}

fn one_run(dir: &std::path::Path, wl_text: &str, out: &str) {
    let m = tiny(dir);
    let wl = workload(dir, wl_text);
    let mut a = vec!["run", "--rounds", "3", "--threads", "1"];
    a.extend(args(m.to_str().unwrap(), wl.to_str().unwrap(), out));
    ok(&a);
}

#[test]
fn compare_refuses_other_workloads_and_accepts_other_builds() {
    let dir = tempfile::tempdir().unwrap();
    let (x, y) = (dir.path().join("x.json"), dir.path().join("y.json"));
    one_run(dir.path(), WORKLOAD, x.to_str().unwrap());
    let other = WORKLOAD.replace("count to three", "count to four");
    one_run(dir.path(), &other, y.to_str().unwrap());
    let (xs, ys) = (x.to_str().unwrap(), y.to_str().unwrap());
    let (hx, hy) = (
        &read(&x).runs[0].workload.hash,
        &read(&y).runs[0].workload.hash,
    );
    fails(
        &["compare", xs, ys],
        &["workloads differ", &hx[..12], &hy[..12], "--force"],
    );
    assert!(ok(&["compare", xs, ys, "--force"]).contains("warning (--force)"));
    // Another build of the same run: comparable, and the difference is listed.
    let mut v = support::doc(&x);
    v["runs"][0]["build"]["git_commit"] = "0123456789abcdef".into();
    v["runs"][0]["id"] = "older".into();
    let z = dir.path().join("z.json");
    std::fs::write(&z, v.to_string()).unwrap();
    let screen = ok(&["compare", z.to_str().unwrap(), xs]);
    assert!(
        support::has(&screen, "build.git_commit: 0123456789abcdef"),
        "{screen}"
    );
    assert!(support::has(&screen, "verdict: "), "{screen}");
    fails(&["compare", xs, xs], &["one run only"]);
    fails(
        &["compare", xs, ys, "--new-run", "nope"],
        &["no run with id 'nope'"],
    );
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    fails(
        &["compare", junk.to_str().unwrap(), xs],
        &["not a tokfire results file"],
    );
}

#[test]
fn rerun_repeats_the_stored_config_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.json");
    one_run(dir.path(), WORKLOAD, x.to_str().unwrap());
    let res = support::tokfire()
        .args(["rerun", x.to_str().unwrap()])
        .output()
        .unwrap();
    let (screen, said) = (
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr),
    );
    assert!(support::has(&screen, "verdict: "), "{screen}");
    // What runs is said before it runs.
    assert!(
        support::has(&said, "rerun of ") && support::has(&said, "(stored command: "),
        "{said}"
    );
    let plan_at = said.find("rerun of ").unwrap();
    assert!(said.find("appended to").unwrap() > plan_at, "{said}");
    let file = read(&x);
    assert_eq!(file.runs.len(), 2, "appended to the same record");
    let (a, b) = (
        serde_json::to_value(&file.runs[0].config).unwrap(),
        serde_json::to_value(&file.runs[1].config).unwrap(),
    );
    assert_eq!(a, b, "field by field");
    fails(
        &["rerun", x.to_str().unwrap(), "--run", "nope"],
        &["no run with id 'nope'"],
    );
    fails(
        &["rerun", dir.path().join("none.json").to_str().unwrap()],
        &["no such results file"],
    );
}

/// Runs and expects exit status `code`, stderr holding every needle and no panic; returns stdout.
fn fails_with(a: &[&str], code: i32, needles: &[&str]) -> String {
    let out = tokfire().args(a).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "{a:?}: {err}");
    assert!(!support::has(&err, "panicked"), "{a:?}: {err}");
    for n in needles {
        assert!(support::has(&err, n), "{a:?}: '{n}' not in: {err}");
    }
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn compare_matches_levels_by_job_count_never_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let (x, y) = (dir.path().join("x.json"), dir.path().join("y.json"));
    let (m, wl, xs, ys) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        x.to_str().unwrap(),
        y.to_str().unwrap(),
    );
    let mut a = vec!["sweep", "--jobs", "1,2", "--rounds", "3", "--threads", "1"];
    a.extend(args(m, wl, xs));
    ok(&a);
    let mut a = vec!["run", "--jobs", "2", "--rounds", "3", "--threads", "1"];
    a.extend(args(m, wl, ys));
    ok(&a);
    fails(
        &["compare", xs, ys],
        &["job levels differ", "jobs 1,2", "jobs 2 in", "--force"],
    );
    let screen = ok(&["compare", xs, ys, "--force"]);
    assert!(
        support::has(&screen, "1 job: only the old run measured it"),
        "{screen}"
    );
    assert!(support::has(&screen, "at 2 jobs:"), "{screen}");
    assert!(
        !support::has(&screen, "at 1 job:"),
        "1 job has nothing to compare with:\n{screen}"
    );
    // Same job sets in another order are still matched by count: a record with its levels
    // stored 2 then 1 compares 1 with 1.
    let mut v = support::doc(&x);
    let run = &mut v["runs"][0];
    run["levels"].as_array_mut().unwrap().reverse();
    run["summary"]["levels"].as_array_mut().unwrap().reverse();
    run["id"] = "reversed".into();
    let z = dir.path().join("z.json");
    std::fs::write(&z, v.to_string()).unwrap();
    let screen = ok(&["compare", xs, z.to_str().unwrap(), "--force"]);
    let sheet = screen.split("1 job:\n").nth(1).expect(&screen);
    let done = sheet
        .lines()
        .find(|l| l.trim_start().starts_with("done"))
        .unwrap();
    let n: Vec<&str> = done.split_whitespace().collect();
    assert_eq!(n[1], n[2], "1 job's done count on both sides: {done}");
}

#[test]
fn rerun_treats_the_record_as_data_and_repeats_only_runs_and_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.json");
    one_run(dir.path(), WORKLOAD, x.to_str().unwrap());
    let stored = support::doc(&x);
    let edit = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = stored.clone();
        f(&mut v["runs"][0]);
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // A stored trace path is never written again.
    let victim = dir.path().join("victim.txt");
    let evil = edit("evil.json", &|r| {
        r["config"]["trace"] = victim.to_str().unwrap().into()
    });
    let screen = ok(&["rerun", evil.to_str().unwrap(), "--rounds", "3"]);
    assert!(support::has(&screen, "verdict: "), "{screen}");
    assert!(!victim.exists(), "rerun wrote the stored trace path");
    // Cold starts and sessions are repeated by their own verb, the command shell-quoted.
    let cold = edit("cold.json", &|r| {
        r["config"]["verb"] = "cold".into();
        r["command"] = serde_json::json!(["tokfire", "cold", "--prompt", "a b"]);
    });
    fails(
        &["rerun", cold.to_str().unwrap()],
        &["cold starts", "tokfire cold --prompt 'a b'"],
    );
    let session = edit("session.json", &|r| r["config"]["verb"] = "session".into());
    fails(&["rerun", session.to_str().unwrap()], &["a session"]);
    // Stored values are validated as flags would be.
    let hot = edit("hot.json", &|r| {
        r["config"]["sampling"]["temperature"] = (-1.0).into()
    });
    fails(
        &["rerun", hot.to_str().unwrap()],
        &["stored configuration", "--temperature"],
    );
    let none = edit("none.json", &|r| {
        r["config"]["jobs"] = serde_json::json!([])
    });
    fails(&["rerun", none.to_str().unwrap()], &["--jobs"]);
    // An edited workload is refused, naming both hashes.
    let wl = dir.path().join("tiny.toml");
    std::fs::write(&wl, WORKLOAD.replace("count to three", "count to five")).unwrap();
    fails(
        &["rerun", x.to_str().unwrap()],
        &["has changed", "restore the workload"],
    );
    assert_eq!(
        read(&x).runs.len(),
        1,
        "nothing appended by a refused rerun"
    );
}

#[test]
fn ab_honours_format_and_exit_code_and_report_renders_the_pair_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let base = ["ab", "--aa", "--rounds", "3", "--threads", "1"];
    let mut a = base.to_vec();
    a.extend(args(m, wl, o));
    a.extend(["--format", "json", "--exit-code"]);
    // An A/A never claims keep, so --exit-code fails it, after printing and saving.
    let stdout = fails_with(&a, 1, &["A/B verdict retest, not keep (--exit-code)"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("--format json is JSON");
    assert_eq!(doc["ab"]["verdict"]["decision"], "retest", "{doc}");
    assert_eq!(doc["ab"]["vary"], "aa");
    assert!(doc["a"]["summary"]["levels"].is_array(), "{doc}");
    assert!(doc["b"]["summary"]["levels"].is_array(), "{doc}");
    let file = read(std::path::Path::new(o));
    assert_eq!(file.runs.len(), 2);
    // report of the record: the pair in every format.
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["report", o, "--format", "json"])).unwrap();
    assert_eq!(
        json["ab"], doc["ab"],
        "report --format json = what ab printed"
    );
    let md = ok(&["report", o, "--format", "md"]);
    assert!(
        support::has(&md, "verdict: retest")
            && support::has(&md, "**A**")
            && support::has(&md, "**B**"),
        "{md}"
    );
    let csv = ok(&["report", o, "--format", "csv"]);
    assert_eq!(csv.lines().count(), 3, "header + arm A + arm B:\n{csv}");
    assert!(
        support::has(&csv, &file.runs[0].id) && support::has(&csv, &file.runs[1].id),
        "{csv}"
    );
    let text = ok(&["report", o]);
    assert!(support::has(&text, "verdict: retest"), "{text}");
    // The pair's page: the decision first, then the ab screen.
    let html = dir.path().join("ab.html");
    ok(&["report", o, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<p class=\"lead\">retest: "), "{page}");
    assert!(page.contains("median of rounds") && page.contains("verdict: retest"));
    // Flags ab cannot honour are refused before anything runs.
    let mut a = base.to_vec();
    a.extend(args(m, wl, o));
    a.extend(["--trace", "t.json"]);
    fails(&a, &["--trace", "tokfire run --trace"]);
    assert_eq!(read(std::path::Path::new(o)).runs.len(), 2);
}

#[test]
fn calibrate_measures_the_noise_floor_and_ab_warns_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("cal.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let mut a = vec!["calibrate", "--pairs", "3", "--threads", "1"];
    a.extend(args(m, wl, o));
    let screen = ok(&a);
    for want in [
        "A/A worst",
        "within-arm noise",
        "decode tok/s",
        "false positives: ",
        "machine: ",
    ] {
        assert!(support::has(&screen, want), "'{want}' not in:\n{screen}");
    }
    let path = dir.path().join("calibration.json");
    let mut profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(profile["pairs"], 3);
    assert_eq!(profile["rounds"], 5, "raised to the rounds a verdict needs");
    assert!(
        profile["floors"]["decode"]["ab_change_max"]
            .as_f64()
            .unwrap()
            >= 0.0
    );
    let fp = profile["false_positives"].as_u64().unwrap();
    assert!(fp <= 3);
    assert_eq!(
        read(std::path::Path::new(o)).runs.len(),
        6,
        "every A/A arm is kept"
    );
    // ab reads the profile: a --min-effect below the A/A movement of its metric is flagged.
    profile["floors"]["decode"]["ab_change_max"] = 0.5.into();
    std::fs::write(&path, profile.to_string()).unwrap();
    let mut a = vec!["ab", "--aa", "--rounds", "3", "--threads", "1"];
    a.extend(args(m, wl, o));
    let out = tokfire().args(&a).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        support::has(
            &err,
            "--min-effect 3.0 % is below what this machine resolves for decode tok/s"
        ),
        "{err}"
    );
    assert!(support::has(&err, "moved up to 50.0 %"), "{err}");
    fails(&["calibrate", "--pairs", "1", "--model", m], &["--pairs"]);
}

#[test]
fn an_ab_of_policies_that_planned_the_same_steps_says_so() {
    // One job: nothing competes with its prefill, so every policy plans the same steps.
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let o = dir.path().join("ab.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    let mut a = vec![
        "ab",
        "--vary",
        "schedule=fifo,decode-first",
        "--rounds",
        "3",
    ];
    a.extend(["--jobs", "1", "--threads", "1"]);
    a.extend(args(m, wl, o));
    let screen = ok(&a);
    assert!(
        support::has(
            &screen,
            "both arms planned the same steps in every measured round"
        ),
        "{screen}"
    );
    assert!(
        support::has(&screen, "schedule could not make a difference"),
        "{screen}"
    );
}
