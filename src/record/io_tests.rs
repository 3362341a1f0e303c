use std::path::Path;

use serde_json::{json, Value};

use super::*;

fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-record.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn refused(v: &Value) -> String {
    parse(Path::new("r.json"), &v.to_string())
        .expect_err("refused")
        .to_string()
}

#[test]
fn an_empty_file_is_called_empty_not_truncated() {
    for text in ["", " \n"] {
        let err = parse(Path::new("r.json"), text).unwrap_err().to_string();
        assert!(
            err.contains("the file is empty") && !err.contains("truncated"),
            "{err}"
        );
    }
}

#[test]
fn stored_values_a_presenter_trusts_are_checked_on_reading() {
    assert!(parse(Path::new("r.json"), &fixture().to_string()).is_ok());
    let mut v = fixture();
    let run = v["runs"][0].clone();
    v["runs"] = json!([run.clone(), run]);
    assert!(refused(&v).contains("appears twice"));
    let mut v = fixture();
    v["runs"][0]["workload"]["criteria"]["ttft_max_s"] = json!(-1.0);
    let err = refused(&v);
    assert!(
        err.contains("criteria.ttft_max_s") && err.contains("positive"),
        "{err}"
    );
    let mut v = fixture();
    v["runs"][0]["workload"]["criteria"]["pass_rate_min"] = json!(7);
    assert!(refused(&v).contains("pass_rate_min"));
    let mut v = fixture();
    v["runs"][0]["config"]["headroom"] = json!(-0.5);
    assert!(refused(&v).contains("headroom"));
}

fn fixture_runs() -> Vec<RunRecord> {
    parse(Path::new("r.json"), &fixture().to_string())
        .unwrap()
        .runs
}

#[test]
fn a_run_is_kept_beside_the_record_while_it_runs_and_appended_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let w = RecordWriter::open(&path).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        lines::header_line()
    );
    let mut run = fixture_runs().remove(0);
    run.status = RunStatus::Running;
    w.save(&run).unwrap();
    let side = inflight::path(&path, &run.id);
    assert!(side.exists());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        lines::header_line()
    );
    let seen = read(&path).unwrap();
    assert_eq!(seen.runs.len(), 1);
    assert_eq!(seen.runs[0].status, RunStatus::Running);
    run.status = RunStatus::Complete;
    w.save(&run).unwrap();
    assert!(!side.exists(), "the run's own file goes when it ends");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2, "a header and one run");
    let seen = read(&path).unwrap();
    assert_eq!(seen.tokfire_results, FORMAT);
    assert_eq!(seen.runs.len(), 1);
    assert_eq!(seen.runs[0].status, RunStatus::Complete);
}

#[test]
fn an_older_record_is_rewritten_once_in_lines_with_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    std::fs::write(&path, fixture().to_string()).unwrap();
    let before = read(&path).unwrap();
    RecordWriter::open(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(&lines::header_line()));
    let after = read(&path).unwrap();
    assert_eq!(
        serde_json::to_value(&before.runs).unwrap(),
        serde_json::to_value(&after.runs).unwrap()
    );
    // Opening again leaves a file of this layout alone.
    RecordWriter::open(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_run_in_the_record_wins_over_a_leftover_file_of_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let w = RecordWriter::open(&path).unwrap();
    let mut run = fixture_runs().remove(0);
    run.status = RunStatus::Complete;
    w.save(&run).unwrap();
    // A writer killed between appending and removing its file leaves the older copy.
    let mut stale = run.clone();
    stale.status = RunStatus::Running;
    inflight::write(&path, &stale).unwrap();
    let seen = read(&path).unwrap();
    assert_eq!(seen.runs.len(), 1);
    assert_eq!(seen.runs[0].status, RunStatus::Complete);
}

#[test]
fn a_newer_lines_header_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    std::fs::write(&path, "{\"tokfire_results\":99,\"layout\":\"lines\"}\n").unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(err.contains("newer tokfire") && err.contains("99"), "{err}");
    assert!(RecordWriter::open(&path).is_err());
}

#[test]
fn a_negative_time_rate_or_size_anywhere_in_a_run_is_refused_by_its_path() {
    let mut v = fixture();
    v["runs"][0]["summary"] = serde_json::to_value(fixture_runs()[0].summary()).unwrap();
    assert!(parse(Path::new("r.json"), &v.to_string()).is_ok());
    let mut bad = v.clone();
    bad["runs"][0]["summary"]["levels"][1]["ttft_median_s"] = json!(-0.5);
    let err = refused(&bad);
    assert!(
        err.contains("summary.levels[1].ttft_median_s (-0.5) is negative"),
        "{err}"
    );
    let mut bad = v.clone();
    bad["runs"][0]["summary"]["levels"][0]["job_tok_s_median"] = json!(-3);
    assert!(refused(&bad).contains("job_tok_s_median"));
    let mut bad = v.clone();
    bad["runs"][0]["load"]["seconds"] = json!(-1);
    assert!(refused(&bad).contains("load.seconds"));
    // A count or a seed may be anything its type holds; -0 is no negative time.
    let mut fine = v;
    fine["runs"][0]["summary"]["levels"][0]["ttft_median_s"] = json!(-0.0);
    assert!(parse(Path::new("r.json"), &fine.to_string()).is_ok());
}

#[test]
fn saving_a_run_never_rewrites_the_runs_before_it() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let mut runs = fixture_runs();
    let mut first = runs.remove(0);
    first.status = RunStatus::Complete;
    RecordWriter::open(&path).unwrap().save(&first).unwrap();
    let (before, inode) = (
        std::fs::read(&path).unwrap(),
        std::fs::metadata(&path).unwrap().ino(),
    );
    let w = RecordWriter::open(&path).unwrap();
    let mut second = first.clone();
    second.id = "second".into();
    for status in [RunStatus::Running, RunStatus::Running, RunStatus::Complete] {
        second.status = status;
        w.save(&second).unwrap();
        let now = std::fs::read(&path).unwrap();
        assert!(
            now.starts_with(&before),
            "the earlier bytes stay as they were"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            inode,
            "not replaced"
        );
    }
    assert_eq!(read(&path).unwrap().runs.len(), 2);
}
