//! Unit tests of `crate::measure::pagecache`.

use super::*;

#[cfg(unix)]
#[test]
fn a_file_just_written_is_resident() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("f");
    std::fs::write(&p, vec![7u8; 3 * 4096 + 5]).expect("write");
    let r = residency(&[p.as_path()]).expect("mincore works here");
    assert_eq!(r.total_pages, 4);
    assert_eq!(
        r.resident_pages, 4,
        "freshly written pages sit in the page cache"
    );
    assert_eq!(r.label(), "page-cache warm");
    assert!(residency(&[Path::new("/nonexistent/x")]).is_none());
}

#[cfg(target_os = "linux")]
#[test]
fn eviction_drops_residency_on_a_disk_file_and_touch_restores_it() {
    // Under the build folder: a real disk file system (a tmpfs /tmp keeps every page).
    let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir");
    let p = dir.path().join("f");
    std::fs::write(&p, vec![7u8; 64 * 4096]).expect("write");
    let files = [p.as_path()];
    evict(&files).expect("fadvise works");
    let after = residency(&files).expect("mincore works");
    assert!(
        after.fraction() < 0.5,
        "DONTNEED on a synced, unmapped file drops its pages: {after:?}"
    );
    touch(&files).expect("read");
    assert_eq!(
        residency(&files).expect("mincore").label(),
        "page-cache warm"
    );
}

#[test]
fn labels() {
    let r = |a, b| Residency {
        resident_pages: a,
        total_pages: b,
    };
    assert_eq!(r(0, 100).label(), "disk-cold");
    assert_eq!(r(50, 100).label(), "partly cached (50 %)");
}
