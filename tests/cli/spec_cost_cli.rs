//! `tokfire spec-cost` end to end on a tiny synthetic model: every (jobs, k) cell with exactly
//! the asked steps, each a full verify step (jobs × k drafts proposed), the cost against the
//! plain step and where speculation pays; the record re-read by `report`, refused by `rerun`
//! and `compare` with what to do instead; bad flags are clear errors.

use crate::support;
use support::{read, tiny, tokfire};

#[test]
fn a_verify_cost_grid_runs_every_cell_and_report_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let out = dir.path().join("c.json");
    let res = tokfire()
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
        .unwrap();
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
    for verb in ["rerun", "compare"] {
        let mut cmd = tokfire();
        cmd.arg(verb).arg(&out);
        if verb == "compare" {
            cmd.arg(&out).args(["--old-run", &file.runs[0].id]);
        }
        let r = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            !r.status.success() && err.contains("spec-cost"),
            "{verb}: {err}"
        );
    }
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
