//! `tokfire prefill` end to end on a tiny synthetic model (context 256): every cell of the grid
//! with its samples, depth and the cached share really copied from the prefix cache, cells
//! past the context listed as n/a, the cost model, the record re-read by `report` (text, CSV,
//! HTML), refused by `rerun` with the command to repeat it and matched cell by cell by
//! `compare`; bad flags are clear errors.

use crate::support;
use support::{read, tiny, tokfire};

#[test]
fn a_prefill_grid_runs_every_cell_and_every_verb_reads_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("p.json");
    let res = tokfire()
        .args(["prefill", "--model", m.to_str().unwrap(), "--threads", "1"])
        .args([
            "--lengths",
            "16,32,64,250",
            "--depths",
            "0,32",
            "--cached",
            "0,50",
        ])
        .args(["--samples", "3", "--warmup", "1", "--seed", "9"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{stderr}");
    support::fits_100(&stdout);
    // The fit's shares may be n/a on a model this small (a term can come out negative).
    for want in [
        "TTFT median",
        "prefill tok/s",
        "cost model (cold, depth 0",
        "n/a (",
    ] {
        assert!(stdout.contains(want), "{want} missing:\n{stdout}");
    }
    assert!(stderr.contains("cell 16/16"), "{stderr}");

    let file = read(&out);
    let run = file.runs.last().unwrap();
    let p = run.prefill().expect("a prefill record");
    assert_eq!(p.cells.len(), 16);
    for c in &p.cells {
        // 250 + the depth 32 + the first output pass the 256-token context.
        if c.length == 250 && c.depth == 32 {
            assert!(c.skipped.as_deref().unwrap().contains("256-token context"));
            assert!(c.samples.is_empty());
            continue;
        }
        assert_eq!(c.samples.len(), 3, "{c:?}");
        let want = (c.depth + c.length * c.cached_pct as usize / 100) / 16 * 16;
        for s in &c.samples {
            assert_eq!(s.reused_tokens, want, "{c:?}");
            assert_eq!(s.prefilled_tokens, c.depth + c.length - want);
            assert!(s.ttft_s > 0.0 && s.forward_s <= s.ttft_s);
        }
    }
    assert!(p.fit(256).is_some(), "four cold depth-0 lengths make a fit");

    let report = |args: &[&str]| {
        let r = tokfire()
            .arg("report")
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8_lossy(&r.stdout).into_owned()
    };
    assert_eq!(report(&[]), stdout, "report reprints the run as it printed");
    let csv = report(&["--format", "csv"]);
    // Two cells (250 tokens at depth 32, cold and cached) are past the context.
    assert_eq!(
        csv.lines().count(),
        1 + 14 * 3,
        "a header and one row per sample"
    );
    let html = dir.path().join("p.html");
    report(&["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"prefill-ttft\"") && page.contains("Cost model"));

    let r = tokfire().arg("rerun").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && err.contains("tokfire prefill"),
        "{err}"
    );

    // The same grid again into the same file: compare matches the cells.
    let again = tokfire()
        .args(["prefill", "--model", m.to_str().unwrap(), "--threads", "1"])
        .args([
            "--lengths",
            "16,32,64,250",
            "--depths",
            "0,32",
            "--cached",
            "0,50",
        ])
        .args([
            "--samples",
            "3",
            "--seed",
            "9",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(again.status.success());
    let c = tokfire()
        .arg("compare")
        .arg(&out)
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    support::fits_100(&text);
    assert!(
        text.contains("new / old") && text.contains("verdict: "),
        "{text}"
    );
    let rows = text.lines().filter(|l| l.contains(" 256  ")).count();
    assert_eq!(rows, 14, "every measured cell matched:\n{text}");
}

#[test]
fn bad_grid_flags_are_refused_by_name_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("p.json");
    for (flag, value, needle) in [
        ("--lengths", "0", "--lengths 0"),
        ("--lengths", "16,16", "given twice"),
        ("--cached", "101", "--cached 101"),
        ("--chunks", "0", "--chunks 0"),
        ("--samples", "0", "--samples 0"),
    ] {
        let res = tokfire()
            .args(["prefill", "--model", m.to_str().unwrap(), flag, value])
            .args(["--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{flag} {value} ran");
        assert!(err.contains(needle), "{flag} {value}: {err}");
        assert!(!out.exists(), "{flag} {value}: nothing is recorded");
    }
}

#[test]
fn cold_start_times_a_fresh_process_on_each_cold_depth_zero_cell() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("c.json");
    let res = tokfire()
        .args(["prefill", "--model", m.to_str().unwrap(), "--threads", "1"])
        .args(["--lengths", "16,48", "--depths", "0,32", "--chunks", "16"])
        .args(["--samples", "1", "--warmup", "0", "--cold-start"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    support::fits_100(&stdout);
    assert!(stdout.contains("cold starts (--cold-start)"), "{stdout}");
    assert!(stdout.contains("fresh TTFT"), "{stdout}");
    let file = read(&out);
    let p = file.runs[0].prefill().unwrap();
    assert!(p.cold_start);
    for c in &p.cells {
        let Some(start) = &c.cold_start else {
            assert!(c.depth > 0, "a depth-0 cold cell without a start: {c:?}");
            continue;
        };
        assert_eq!(c.depth, 0, "a fresh process holds no earlier turn");
        assert!(start.failure.is_none(), "{:?}", start.failure);
        assert_eq!((start.prompt_tokens, start.output_tokens), (c.length, 1));
        let k = start.clocks.unwrap();
        assert!(
            0.0 <= k.main_s
                && k.main_s <= k.loaded_s
                && k.loaded_s <= k.warm_s
                && k.warm_s <= k.first_token_s,
            "{k:?}"
        );
    }
    assert_eq!(p.cells.iter().filter(|c| c.cold_start.is_some()).count(), 2);
    let text = support::ok(&["report", out.to_str().unwrap()]);
    assert!(text.contains("fresh TTFT"), "{text}");
    // The page's preformatted blocks are wrapped as the screen is.
    let html = dir.path().join("c.html");
    support::ok(&[
        "report",
        out.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("cold starts (--cold-start)"));
    for block in page.split("<pre>").skip(1) {
        let pre = block.split("</pre>").next().unwrap();
        for l in pre.lines() {
            let shown = l
                .replace("&#39;", "'")
                .replace("&gt;", ">")
                .replace("&lt;", "<");
            assert!(shown.replace("&amp;", "&").chars().count() <= 100, "{l}");
        }
    }
}

#[test]
fn prompts_from_a_workload_are_named_in_the_record_and_a_bad_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = support::workload(dir.path(), support::WORKLOAD);
    let out = dir.path().join("w.json");
    let res = tokfire()
        .args(["prefill", "--model", m.to_str().unwrap(), "--threads", "1"])
        .args(["--lengths", "16,100", "--samples", "1", "--warmup", "0"])
        .args(["--prompts", wl.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(stdout.contains("prompts from "), "{stdout}");
    let file = read(&out);
    let run = &file.runs[0];
    let p = run.prefill().unwrap();
    assert!(p.prompts.is_some());
    assert_eq!(run.config.workload, wl.to_str().unwrap());
    for c in &p.cells {
        let s = &c.samples[0];
        assert_eq!(s.prefilled_tokens + s.reused_tokens, c.length, "{c:?}");
    }
    let res = tokfire()
        .args([
            "prefill",
            "--model",
            m.to_str().unwrap(),
            "--prompts",
            "no-such",
        ])
        .args(["--out", dir.path().join("x.json").to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        !res.status.success() && stderr.contains("--prompts no-such"),
        "{stderr}"
    );
}
