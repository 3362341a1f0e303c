//! `tokfire spec-cost` end to end on a tiny synthetic model: every (jobs, k) cell with exactly
//! the asked steps, each a full verify step (jobs × k drafts proposed), the cost against the
//! plain step and where speculation pays; the record re-read by `report`, refused by `rerun`
//! with what to do instead, matched cell by cell by `compare`; bad flags are clear errors.

use crate::support;
use support::{read, tiny, tokfire};

#[test]
fn a_verify_cost_grid_runs_every_cell_and_report_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("c.json");
    let grid = || {
        tokfire()
            .args([
                "spec-cost",
                "--model",
                m.to_str().unwrap(),
                "--threads",
                "1",
            ])
            .args([
                "--jobs",
                "1,3",
                "--k",
                "0,2",
                "--context",
                "24",
                "--steps",
                "5",
            ])
            .args(["--out", out.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let res = grid();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    support::fits_100(&stdout);
    for want in ["step median", "pays above", "at 3 jobs:", "drafts accepted"] {
        assert!(stdout.contains(want), "{want} missing:\n{stdout}");
    }
    let file = read(&out);
    let r = file
        .runs
        .last()
        .unwrap()
        .spec_cost()
        .expect("a spec-cost record");
    assert_eq!(r.cells.len(), 4);
    for c in &r.cells {
        assert_eq!(c.step_s.len(), 5, "{c:?}");
        assert_eq!(
            c.proposed,
            5 * c.jobs * c.k,
            "every measured step verifies k drafts"
        );
        assert!(c.step_s.iter().all(|s| *s > 0.0));
        let ratio = r.cost_ratio(c).unwrap();
        assert!(ratio.is_finite() && ratio > 0.0);
    }
    let again = tokfire().arg("report").arg(&out).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);
    let csv = tokfire()
        .args(["report", "--format", "csv"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&csv.stdout).lines().count(),
        1 + 4 * 5
    );
    let r = tokfire().arg("rerun").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        !r.status.success() && err.contains("spec-cost"),
        "rerun: {err}"
    );
    // The same grid again into the same file: compare matches the cells.
    let res = grid();
    assert!(res.status.success());
    let text = support::ok(&["compare", out.to_str().unwrap(), out.to_str().unwrap()]);
    support::fits_100(&text);
    for want in ["old step", "new cost", "verdict: "] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    assert!(text.matches(" ms ").count() >= 4, "{text}");
}

#[test]
fn bad_spec_cost_flags_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("c.json");
    for (flag, value) in [
        ("--jobs", "0"),
        ("--k", "33"),
        ("--steps", "0"),
        ("--jobs", "2,2"),
    ] {
        let res = tokfire()
            .args(["spec-cost", "--model", m.to_str().unwrap(), flag, value])
            .args(["--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(
            !res.status.success() && err.contains(flag),
            "{flag} {value}: {err}"
        );
        assert!(!out.exists());
    }
}
