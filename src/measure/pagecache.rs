//! Whether a file's pages are in the OS page cache before it is loaded (the load clock differs by
//! an order of magnitude between a disk-cold and a cache-warm file). Uses `mmap` + `mincore` on
//! Unix; elsewhere the state is unknown.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// How much of the files was resident in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residency {
    /// Pages resident in the page cache.
    pub resident_pages: u64,
    /// Pages the files span.
    pub total_pages: u64,
}

impl Residency {
    /// Resident fraction, 0..=1 (1 for empty files).
    pub(crate) fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            1.0
        } else {
            self.resident_pages as f64 / self.total_pages as f64
        }
    }

    /// "page-cache warm" (≥ 99 % resident), "disk-cold" (≤ 1 %) or "partly cached (N %)".
    pub(crate) fn label(&self) -> String {
        let f = self.fraction();
        if f >= 0.99 {
            "page-cache warm".into()
        } else if f <= 0.01 {
            "disk-cold".into()
        } else {
            format!("partly cached ({:.0} %)", f * 100.0)
        }
    }
}

/// Residency summed over `files`; `None` when it cannot be read (not Unix, a file unreadable).
pub(crate) fn residency(files: &[&Path]) -> Option<Residency> {
    let mut total = Residency {
        resident_pages: 0,
        total_pages: 0,
    };
    for f in files {
        let r = file_residency(f)?;
        total.resident_pages += r.resident_pages;
        total.total_pages += r.total_pages;
    }
    Some(total)
}

#[cfg(unix)]
fn file_residency(path: &Path) -> Option<Residency> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len() as usize;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    let pages = len.div_ceil(page);
    if len == 0 {
        return Some(Residency {
            resident_pages: 0,
            total_pages: 0,
        });
    }
    // SAFETY: a read-only shared mapping of a file we hold open; it is unmapped below and
    // never dereferenced (mincore only inspects the page tables).
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes; `vec` has one byte per page of that range.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr().cast()) };
    // SAFETY: unmaps exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return None;
    }
    let resident = vec.iter().filter(|b| *b & 1 == 1).count() as u64;
    Some(Residency {
        resident_pages: resident,
        total_pages: pages as u64,
    })
}

#[cfg(not(unix))]
fn file_residency(_path: &Path) -> Option<Residency> {
    None
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn labels() {
        let r = |a, b| Residency {
            resident_pages: a,
            total_pages: b,
        };
        assert_eq!(r(0, 100).label(), "disk-cold");
        assert_eq!(r(50, 100).label(), "partly cached (50 %)");
    }
}
