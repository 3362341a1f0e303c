//! What a record write does when the disk refuses it: the run is saved failed with the reason
//! and every round saved before, and no temp file stays.

use std::path::Path;

use tokfire::record::{ResultsFile, RunStatus};

use crate::support;
use support::{args, tiny, workload, WORKLOAD};

/// `run` under a file size limit of `kb` KiB (as a full disk refuses a write, the kernel
/// refuses one past the limit): its exit status and stderr.
fn run_limited(dir: &Path, kb: usize, out: &Path) -> (bool, String) {
    let (m, wl) = (dir.join("tiny.gguf"), dir.join("tiny.toml"));
    let mut a = vec!["run", "--jobs", "2", "--rounds", "3", "--seed", "3"];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    let res = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -f {kb}; exec \"$0\" \"$@\""))
        .arg(assert_cmd::cargo::cargo_bin("tokfire"))
        .args(&a)
        .env("TOKFIRE_LOG", "error")
        .output()
        .unwrap();
    (
        res.status.success(),
        String::from_utf8_lossy(&res.stderr).into_owned(),
    )
}

fn rounds(file: &ResultsFile) -> usize {
    file.runs
        .iter()
        .flat_map(|r| &r.levels)
        .map(|l| l.rounds.len())
        .sum()
}

#[test]
fn a_refused_write_marks_the_run_failed_with_the_rounds_saved_before() {
    let dir = tempfile::tempdir().unwrap();
    tiny(dir.path());
    workload(dir.path(), WORKLOAD);
    // Growing limits until one stops the run after it saved a round (the run's file grows
    // with every round; the first limits stop it before any work, the last not at all).
    for kb in (8..=512).step_by(8) {
        let out = dir.path().join(format!("r{kb}.json"));
        let (ok, stderr) = run_limited(dir.path(), kb, &out);
        assert!(!support::has(&stderr, "panicked"), "{kb} KiB: {stderr}");
        if ok {
            panic!("{kb} KiB let the whole run through before any limit stopped it mid-run");
        }
        let Ok(file) = tokfire::record::io::read(&out) else {
            continue;
        };
        if rounds(&file) == 0 {
            continue;
        }
        assert!(
            support::has(&stderr, "cannot write") && support::has(&stderr, "r"),
            "{kb} KiB: {stderr}"
        );
        let run = &file.runs[0];
        match &run.status {
            RunStatus::Failed { error } => assert!(
                error.contains("cannot write") && error.contains(&format!("r{kb}.json")),
                "{error}"
            ),
            other => panic!("{kb} KiB: saved as {other:?}, not failed:\n{stderr}"),
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "temp files left: {left:?}");
        // `report` shows it failed, with the reason.
        let screen = support::ok(&["report", out.to_str().unwrap()]);
        assert!(support::has(&screen, "failed"), "{screen}");
        return;
    }
    panic!("no limit up to 512 KiB stopped the run after a saved round");
}
