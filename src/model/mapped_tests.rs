//! Unit tests of `crate::model::mapped`.

use super::*;

#[test]
fn ranges_outside_the_file_are_refused() {
    assert_eq!(checked_range(0, 10, 10), Some(0..10));
    assert_eq!(checked_range(1, 10, 10), None);
    assert_eq!(checked_range(u64::MAX, 2, 10), None);
    assert_eq!(checked_range(4, u64::MAX, 10), None);
}

#[test]
fn a_mapped_range_borrows_the_file_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bin");
    std::fs::write(&path, b"0123456789").unwrap();
    let m = MappedFile::map(&path, &File::open(&path).unwrap()).unwrap();
    let Bytes::Borrowed { owner, range } = m.range(2, 3, "t").unwrap() else {
        panic!("expected borrowed bytes");
    };
    assert_eq!(&(*owner).as_ref()[range], b"234");
    let err = m.range(8, 3, "tensor x").unwrap_err().to_string();
    assert!(err.contains("tensor x") && err.contains("f.bin"), "{err}");
    assert!(m.touch(&[0..10, 20..30]) >= Duration::ZERO);
}
