//! Jobs that think: `--think`, `--think-jitter` and `--stagger` on `run`, end to end on a tiny
//! synthetic model. The record's per-job task start times show the pauses; the defaults stay
//! lockstep (no pause, no `think` in the record); bad values name their flag.

use tokfire::record::RunRecord;

use crate::support;
use support::{args, read, tiny, tokfire, workload, WORKLOAD};

/// Runs `run --jobs 2` with `extra` flags, one measured round, no warm-up; the record.
fn run(extra: &[&str]) -> RunRecord {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    let out = dir.path().join("r.json");
    let mut a = vec!["run", "--jobs", "2", "--threads", "1", "--warmup", "0"];
    a.extend(["--rounds", "1", "--allow-few-rounds"]);
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    a.extend(extra);
    let res = tokfire().args(&a).output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    read(&out).runs.remove(0)
}

/// For each job, the pauses between one task's end and its next task's start, seconds.
fn pauses(r: &RunRecord) -> Vec<(usize, f64)> {
    let round = &r.levels[0].rounds[0];
    let mut out = Vec::new();
    for job in 0..2 {
        let mut tasks: Vec<_> = round.tasks.iter().filter(|t| t.job == job).collect();
        tasks.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        assert_eq!(tasks.len(), 3, "every job runs every task");
        for w in tasks.windows(2) {
            out.push((job, w[1].start_s - (w[0].start_s + w[0].completion_s)));
        }
    }
    out
}

fn first_start(r: &RunRecord, job: usize) -> f64 {
    r.levels[0].rounds[0]
        .tasks
        .iter()
        .filter(|t| t.job == job)
        .map(|t| t.start_s)
        .fold(f64::MAX, f64::min)
}

#[test]
fn think_time_shows_as_gaps_between_a_jobs_tasks() {
    let r = run(&["--think", "0.2"]);
    assert_eq!(r.config.think.think_s, 0.2);
    let p = pauses(&r);
    assert_eq!(p.len(), 4);
    for (job, gap) in p {
        assert!(gap >= 0.2, "job {job} paused only {gap:.3} s");
        assert!(gap < 2.0, "job {job} paused {gap:.3} s");
    }
    let s = r
        .summary
        .as_ref()
        .expect("a finished run stores its summary");
    let (busy, window) = (
        s.levels[0].job_busy_tok_s_median.unwrap(),
        s.levels[0].job_tok_s_median.unwrap(),
    );
    assert!(busy > window, "busy {busy} tok/s vs window {window} tok/s");
}

#[test]
fn defaults_stay_lockstep() {
    let r = run(&[]);
    assert!(r.config.think.is_lockstep());
    let json = serde_json::to_value(&r.config).unwrap();
    assert!(json.get("think").is_none(), "lockstep is not written");
    for (job, gap) in pauses(&r) {
        assert!(gap < 0.1, "job {job} waited {gap:.3} s with no think time");
    }
    assert!(first_start(&r, 1) < 0.1);
}

#[test]
fn stagger_delays_each_jobs_first_task_and_jitter_is_recorded() {
    let r = run(&[
        "--stagger",
        "0.3",
        "--think",
        "0.1",
        "--think-jitter",
        "0.05",
    ]);
    assert!(first_start(&r, 0) < 0.1);
    assert!(first_start(&r, 1) >= 0.3, "{}", first_start(&r, 1));
    for (job, gap) in pauses(&r) {
        assert!(gap >= 0.05, "job {job} paused only {gap:.3} s");
    }
    assert_eq!(r.config.think.jitter_s, 0.05);
}

#[test]
fn bad_think_values_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), WORKLOAD);
    for (flag, value, needle) in [
        ("--think", "-1", "--think -1"),
        ("--stagger", "inf", "--stagger inf"),
        ("--think-jitter", "0.5", "give --think"),
    ] {
        let out = dir.path().join("r.json");
        let mut a = vec!["run"];
        a.extend(args(
            m.to_str().unwrap(),
            wl.to_str().unwrap(),
            out.to_str().unwrap(),
        ));
        let v = format!("{flag}={value}");
        a.push(&v);
        let res = tokfire().args(&a).output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success());
        assert!(support::has(&err, needle), "{flag} {value}: {err}");
        assert!(!support::has(&err, "panicked"), "{err}");
    }
}
