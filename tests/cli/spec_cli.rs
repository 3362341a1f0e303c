//! `tokfire run --spec …` end to end: the interleaved `--spec none` baseline kept in the record
//! with per-level speedups and output identity, `--no-baseline`, a draft model, and clear errors
//! for bad speculation settings (on the tiny synthetic model; the vocabulary mismatch and the
//! missing MTP layers on real weights).

use tokfire::config::spec::SpecMethod;
use tokfire::record::RunStatus;

use crate::support;
use support::{args, read, tiny, tokfire, workload, WORKLOAD};

/// Runs and expects failure; returns stderr after checking there is no panic.
fn fails(a: &[&str]) -> String {
    let out = tokfire().args(a).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{a:?} succeeded");
    assert!(
        !support::has(&stderr, "panicked"),
        "panic for {a:?}: {stderr}"
    );
    stderr
}

const FEW: [&str; 6] = [
    "--rounds",
    "2",
    "--warmup",
    "1",
    "--allow-few-rounds",
    "--threads=1",
];

#[test]
fn a_speculative_run_keeps_an_interleaved_baseline_and_reports_the_speedup() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("spec.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut a = vec!["sweep", "--jobs", "1,3", "--spec", "lookup"];
    a.extend(FEW);
    a.extend(args(m, wl, o));
    let res = tokfire().args(&a).output().unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(
        support::has(
            &stdout,
            "--spec lookup --spec-k 4 --lookup-ngram 1..3) against --spec none"
        ),
        "{stdout}"
    );
    assert!(
        support::has(&stdout, "1 job:") && support::has(&stdout, "3 jobs:"),
        "{stdout}"
    );
    assert!(support::has(&stdout, "outputs identical"), "{stdout}");
    let file = read(&out);
    let run = &file.runs[0];
    assert_eq!(run.status, RunStatus::Complete);
    let base = run.baseline.as_ref().expect("the baseline arm is kept");
    assert_eq!(base.config.spec.method, SpecMethod::None);
    assert_eq!(base.status, RunStatus::Complete);
    assert_eq!(base.levels.len(), 2);
    for (b, s) in base.levels.iter().zip(&run.levels) {
        assert_eq!(b.jobs, s.jobs);
        assert_eq!(b.rounds.len(), s.rounds.len());
        assert_eq!(b.rounds.len(), 3, "one warm-up and two measured rounds");
        assert!(b.rounds.iter().all(|r| r.spec.proposed == 0));
    }
    let summary = run.summary.as_ref().unwrap();
    for l in &summary.levels {
        let v = &l.spec.baseline;
        assert_eq!(v.spec_baseline_rounds, 2);
        assert_eq!(v.spec_outputs_identical, "yes", "greedy output changed");
        assert!(v.spec_decode_speedup.is_some_and(|x| x > 0.0));
        let (lo, hi) = (
            v.spec_decode_speedup_min.unwrap(),
            v.spec_decode_speedup_max.unwrap(),
        );
        assert!(lo <= hi);
        assert_eq!(v.spec_decode_speedup_pairs, 2, "one ratio per round pair");
        let mad = v.spec_decode_speedup_mad.expect("a MAD of two ratios");
        assert!(
            (0.0..=hi - lo + 1e-12).contains(&mad),
            "MAD {mad} in ×{lo}–×{hi}"
        );
    }
    assert!(
        support::has(&stdout, "per round pair ×") && support::has(&stdout, ", 2 pairs)"),
        "{stdout}"
    );
    let drafter = run.drafter.as_ref().unwrap();
    assert_eq!((drafter.spec.as_str(), drafter.weight_bytes), ("lookup", 0));

    support::every_format(
        std::path::Path::new(o),
        "run",
        &["against --spec none", "tokens per verify"],
    );
    // CSV carries the speedup columns.
    let res = tokfire()
        .args(["report", o, "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&res.stdout);
    assert!(
        support::has(&csv, "spec_decode_speedup") && support::has(&csv, "spec_outputs_identical"),
        "{csv}"
    );

    // --no-baseline: no second arm, and the report says so.
    let out2 = dir.path().join("nobase.json");
    let mut a = vec!["run", "--spec", "lookup", "--no-baseline"];
    a.extend(FEW);
    a.extend(args(m, wl, out2.to_str().unwrap()));
    let res = tokfire().args(&a).output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        support::has(&stdout, "no --spec none baseline (--no-baseline)"),
        "{stdout}"
    );
    assert!(read(&out2).runs[0].baseline.is_none());
}

#[test]
fn a_draft_model_run_records_the_drafter_and_keeps_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("draft.json");
    let draft = format!("draft:{}", m.display());
    let mut a = vec!["run", "--jobs", "3", "--dtype", "f32", "--spec", &draft];
    a.extend(FEW);
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    let res = tokfire().args(&a).output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        support::has(&stdout, "--draft-dtype q") && support::has(&stdout, "draft model"),
        "{stdout}"
    );
    let run = &read(&out).runs[0];
    let d = run.drafter.as_ref().unwrap();
    assert!(
        d.model.is_some() && d.weight_bytes > 0 && d.peak_kv_bytes > 0,
        "{d:?}"
    );
    let l = &run.summary.as_ref().unwrap().levels[0];
    assert_eq!(l.spec.baseline.spec_outputs_identical, "yes");
    assert!(l.spec.spec_proposed > 0);
}

#[test]
fn bad_speculation_settings_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("bad.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let bad = |extra: &[&str]| {
        let mut a = vec!["run"];
        a.extend(FEW);
        a.extend(args(m, wl, o));
        a.extend(extra);
        fails(&a)
    };
    let e = bad(&["--spec", "lookup", "--spec-k", "0"]);
    assert!(
        support::has(&e, "--spec-k") && support::has(&e, "at least 1"),
        "{e}"
    );
    // The tiny model has 2 layers.
    let e = bad(&["--spec", "layerskip:2"]);
    assert!(
        support::has(&e, "layerskip:2") && support::has(&e, "2 layers"),
        "{e}"
    );
    let e = bad(&["--spec", "medusa"]);
    assert!(
        support::has(&e, "unknown drafter") && support::has(&e, "draft:MODEL"),
        "{e}"
    );
    let e = bad(&["--spec", "draft:"]);
    assert!(support::has(&e, "draft needs a model"), "{e}");
    let e = bad(&["--spec", "mtp"]);
    assert!(
        support::has(&e, "nextn_predict_layers")
            && support::has(&e, "DeepSeek-V3")
            && support::has(&e, "Qwen3-Next"),
        "{e}"
    );
    let e = bad(&["--spec", "draft:/no/such/model.gguf"]);
    assert!(support::has(&e, "/no/such/model.gguf"), "{e}");
}

#[test]
fn real_models_without_a_shared_vocabulary_or_mtp_layers_are_refused() {
    let _real = support::real_weights();
    let dir = tempfile::tempdir().unwrap();
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("real.json");
    let run = |spec: &str| {
        let mut a = vec!["run", "--max-tokens", "2", "--spec", spec];
        a.extend(FEW);
        a.extend([
            "--workload",
            wl.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        fails(&a)
    };
    let e = run("draft:gemma3-270m-q4_k_m");
    assert!(
        support::has(&e, "gemma3-270m-q4_k_m")
            && support::has(&e, "smollm2")
            && support::has(&e, "vocabulary"),
        "{e}"
    );
    let e = run("mtp");
    assert!(
        support::has(&e, "smollm2") && support::has(&e, "llama.nextn_predict_layers"),
        "{e}"
    );
}

#[test]
fn synthetic_acceptance_keeps_the_output_and_a_collapse_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("syn.json");
    let o = out.to_str().unwrap();
    let mut a = vec![
        "sweep",
        "--jobs",
        "1,2",
        "--spec",
        "synthetic:0.9,0.6",
        "--spec-k",
        "3",
    ];
    a.extend(FEW);
    a.extend(args(m.to_str().unwrap(), wl.to_str().unwrap(), o));
    let res = tokfire().args(&a).output().unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(
        support::has(&stdout, "synthetic: drafts the greedy output"),
        "{stdout}"
    );
    // Expected: (0.9 + 0.54 + 0.324) / 3 = 58.8 %.
    assert!(
        support::has(&stdout, "59 % token-weighted expected"),
        "{stdout}"
    );
    let file = read(&out);
    let run = &file.runs[0];
    let d = run.drafter.as_ref().unwrap();
    assert!(
        d.reference_requests.is_some_and(|n| n > 0) && d.reference_s.is_some(),
        "{d:?}"
    );
    for l in &run.summary.as_ref().unwrap().levels {
        assert_eq!(l.spec.baseline.spec_outputs_identical, "yes");
        assert!(l.spec.spec_accepted > 0 && l.spec.spec_accepted < l.spec.spec_proposed);
    }
    assert!(!support::has(&stdout, "COLLAPSED"), "{stdout}");
    // The HTML page carries acceptance by position and the kept-per-verify histogram.
    let html = dir.path().join("syn.html");
    support::ok(&["report", o, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    for want in ["<th>position 3</th>", "<th>3 kept</th>"] {
        assert!(page.contains(want), "{want} missing from the page");
    }

    // The 2-job level's acceptance falls to a third: the report and compare name it.
    let mut bad = file.clone();
    let levels = &mut bad.runs[0].summary.as_mut().unwrap().levels;
    let first = levels[0].spec.spec_acceptance.unwrap();
    levels[1].spec.spec_acceptance = Some(first / 3.0);
    let bad_path = dir.path().join("collapsed.json");
    std::fs::write(&bad_path, serde_json::to_string(&bad).unwrap()).unwrap();
    let text = support::ok(&["report", bad_path.to_str().unwrap()]);
    assert!(
        support::has(&text, "acceptance COLLAPSED at 2 jobs") && support::has(&text, "at 1 job"),
        "{text}"
    );
    let text = support::ok(&["compare", o, bad_path.to_str().unwrap()]);
    assert!(
        support::has(&text, "acceptance COLLAPSED at 2 jobs") && support::has(&text, "in the old"),
        "{text}"
    );
}

#[test]
fn synthetic_acceptance_is_refused_with_sampling() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("x.json");
    let mut a = vec!["run", "--spec", "synthetic:0.8", "--temperature", "0.7"];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    let err = fails(&a);
    assert!(support::has(&err, "--temperature 0"), "{err}");
}
