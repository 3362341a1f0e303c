use super::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn the_header_is_recognised_and_an_older_first_line_is_not() {
    let h = header(header_line().trim()).expect("our header");
    assert_eq!(h.tokfire_results, u64::from(FORMAT));
    assert!(header("{").is_none());
    assert!(header(r#"{"tokfire_results":5,"runs":[]}"#).is_none());
    assert!(header(r#"{"tokfire_results":6,"layout":"columns"}"#).is_none());
}

#[test]
fn a_cut_last_line_is_skipped_and_a_damaged_middle_line_named() {
    let p = parse("\n\n{\"id\":", 2).unwrap();
    assert_eq!((p.runs.len(), p.torn_tail), (0, Some(6)));
    let err = parse("{}\n{\"id\":\"x\"}\n", 2).err().expect("not runs");
    assert!(err.starts_with("line 2:"), "{err}");
}

#[test]
fn appending_cuts_off_a_torn_line_and_writes_a_header_into_an_empty_file() {
    let dir = tmp();
    let p = dir.path().join("r.json");
    append(&p, b"{\"a\":1}\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        format!("{}{{\"a\":1}}\n", header_line())
    );
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("{\"half\":");
    std::fs::write(&p, &text).unwrap();
    append(&p, b"{\"b\":2}\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        format!("{}{{\"a\":1}}\n{{\"b\":2}}\n", header_line())
    );
    // A file with no newline at all is cut to nothing and starts again with its header.
    std::fs::write(&p, "x".repeat(9000)).unwrap();
    append(&p, b"{}\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        format!("{}{{}}\n", header_line())
    );
}
