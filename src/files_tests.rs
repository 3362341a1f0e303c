use super::*;

#[test]
fn a_regular_file_within_its_bound_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.toml");
    std::fs::write(&p, "name = \"x\"\n").unwrap();
    assert_eq!(read_text(&p, 100).unwrap(), "name = \"x\"\n");
    assert!(check_writable(&p).is_ok());
    assert!(check_writable(&dir.path().join("new.json")).is_ok());
}

#[test]
fn special_files_are_refused_before_they_can_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
        (dir.path(), "a directory"),
    ] {
        let err = read_text(path, MAX_INPUT_BYTES).unwrap_err().to_string();
        assert!(
            err.contains(kind) && err.contains("not a regular file"),
            "{err}"
        );
        let err = check_writable(path).unwrap_err().to_string();
        assert!(err.contains(kind), "{err}");
    }
}

#[test]
fn a_file_larger_than_its_bound_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.json");
    let f = std::fs::File::create(&p).unwrap();
    // Sparse: 5 GB claimed, nothing written.
    f.set_len(5_000_000_000).unwrap();
    let err = read_text(&p, MAX_RECORD_BYTES).unwrap_err().to_string();
    assert!(
        err.contains("5000000000 bytes") && err.contains("right file"),
        "{err}"
    );
}
