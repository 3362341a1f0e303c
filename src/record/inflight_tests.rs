use std::path::Path;

use super::*;

fn run() -> RunRecord {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-record.json");
    let text = std::fs::read_to_string(path).unwrap();
    super::super::io::parse(Path::new("r.json"), &text)
        .unwrap()
        .runs
        .remove(0)
}

#[test]
fn a_run_id_cannot_name_a_file_elsewhere() {
    let p = path(Path::new("out/r.json"), "../../etc/x y");
    assert_eq!(p, Path::new("out/.r.json.______etc_x_y.running"));
}

#[test]
fn a_failed_save_marks_the_copy_saved_last_failed_in_place_keeping_its_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("r.json");
    let mut r = run();
    r.status = RunStatus::Running;
    write(&record, &r).unwrap();
    let before = std::fs::metadata(path(&record, &r.id)).unwrap().len();
    assert!(mark_failed(
        &record,
        &r.id,
        "cannot write r.json: No space left on device"
    )
    .unwrap());
    let after = std::fs::metadata(path(&record, &r.id)).unwrap().len();
    assert!(after < before, "rewritten shorter: {after} ≥ {before}");
    let back = read_all(&record).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(
        back[0].status,
        RunStatus::Failed {
            error: "cannot write r.json: No space left on device".into()
        }
    );
    assert_eq!(
        back[0].levels.len(),
        r.levels.len(),
        "the saved rounds stay"
    );
    assert!(!mark_failed(&record, "no-such-run", "x").unwrap());
}

#[test]
fn only_this_records_runs_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("r.json");
    let mut r = run();
    r.status = RunStatus::Running;
    write(&record, &r).unwrap();
    write(&dir.path().join("other.json"), &r).unwrap();
    std::fs::write(dir.path().join(".r.json.lock"), "").unwrap();
    assert_eq!(read_all(&record).unwrap().len(), 1);
    std::fs::write(path(&record, "broken"), "{").unwrap();
    let (p, detail) = read_all(&record).unwrap_err();
    assert!(
        p.ends_with(".r.json.broken.running") && detail.contains("not a run"),
        "{detail}"
    );
}
