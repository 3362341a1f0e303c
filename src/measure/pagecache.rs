//! Whether a file's pages are in the OS page cache before it is loaded (the load clock differs by
//! an order of magnitude between a disk-cold and a cache-warm file), and making them leave or
//! enter it: [`evict`] (`posix_fadvise(POSIX_FADV_DONTNEED)` per file), [`drop_caches`] (the
//! whole page cache, root only) and [`touch`] (read every byte). Uses `mmap` + `mincore` on
//! Unix; elsewhere the state is unknown and eviction is refused.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// At most this fraction resident: a cold page cache (a cold start, a cold load).
pub const COLD_MAX: f64 = 0.05;
/// At least this fraction resident: a warm page cache; in between is "partly cached".
pub const WARM_MIN: f64 = 0.95;

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
    pub fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            1.0
        } else {
            self.resident_pages as f64 / self.total_pages as f64
        }
    }

    /// "page-cache warm" (≥ [`WARM_MIN`] resident), "disk-cold" (≤ [`COLD_MAX`]) or "partly
    /// cached (N %)".
    pub fn label(&self) -> String {
        let f = self.fraction();
        if f >= WARM_MIN {
            "page-cache warm".into()
        } else if f <= COLD_MAX {
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

/// Asks the kernel to drop the cached pages of every file in `files`
/// (`posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` after `fdatasync`). Pages that are mapped by a
/// running process, dirty, or on a file system without a page cache (tmpfs) stay: check with
/// [`residency`] afterwards.
#[cfg(unix)]
pub fn evict(files: &[&Path]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    for f in files {
        let file = std::fs::File::open(f)?;
        // Dirty pages cannot be dropped; flush them first (a no-op for a file only read).
        let _ = file.sync_data();
        // SAFETY: a valid open descriptor; offset 0 and length 0 mean the whole file.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

#[cfg(not(unix))]
pub fn evict(_files: &[&Path]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "page-cache eviction needs posix_fadvise (Unix)",
    ))
}

/// Where the kernel's whole-cache drop is requested.
pub const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Whether this process runs as root (the only user allowed to write [`DROP_CACHES`]).
pub fn is_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Syncs, then writes `1` to [`DROP_CACHES`]: the kernel drops every clean page-cache page of
/// the machine (not only the model's). Root only.
pub fn drop_caches() -> std::io::Result<()> {
    #[cfg(unix)]
    // SAFETY: sync has no preconditions.
    unsafe {
        libc::sync()
    };
    std::fs::write(DROP_CACHES, "1")
}

/// Reads every byte of `files` so their pages are in the page cache (a warm start's setup).
pub fn touch(files: &[&Path]) -> std::io::Result<()> {
    use std::io::Read;
    let mut buf = vec![0u8; 1 << 20];
    for f in files {
        let mut file = std::fs::File::open(f)?;
        while file.read(&mut buf)? > 0 {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "pagecache_tests.rs"]
mod tests;
