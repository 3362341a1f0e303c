//! Why a file's pages stay in the page cache after `posix_fadvise(DONTNEED)`: the processes that
//! map it (found in `/proc/*/maps` by device and inode, so another path to the same file counts),
//! a RAM-backed file system (tmpfs, ramfs: its pages have nowhere else to live), or eviction
//! refused outright. Linux only; elsewhere nothing can be said.

use std::path::Path;

/// A process that maps one of the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub name: String,
}

/// `dev inode` as `/proc/*/maps` writes them: `MAJOR:MINOR` in hex, inode in decimal.
#[cfg(target_os = "linux")]
fn key(path: &Path) -> Option<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let dev = m.dev();
    // glibc's gnu_dev_major/minor encoding.
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    Some((format!("{major:02x}:{minor:02x}"), m.ino()))
}

/// Whether a `/proc/PID/maps` line maps the file with `key`.
pub fn maps_line_matches(line: &str, dev: &str, ino: u64) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() >= 5 && f[3] == dev && f[4].parse::<u64>().ok() == Some(ino)
}

/// The other processes that map any of `files` (this process left out).
#[cfg(target_os = "linux")]
pub fn holders(files: &[&Path]) -> Vec<Holder> {
    let keys: Vec<(String, u64)> = files.iter().filter_map(|f| key(f)).collect();
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<Holder> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
                maps.lines()
                    .any(|l| keys.iter().any(|(d, i)| maps_line_matches(l, d, *i)))
            })
        })
        .map(|pid| Holder {
            pid,
            name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into()),
        })
        .collect();
    out.sort_by_key(|h| h.pid);
    out
}

#[cfg(not(target_os = "linux"))]
pub fn holders(_files: &[&Path]) -> Vec<Holder> {
    Vec::new()
}

/// The RAM-backed file system `path` is on (`tmpfs`, `ramfs`), if it is on one.
#[cfg(target_os = "linux")]
pub fn ram_backed(path: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS: i64 = 0x0102_1994;
    const RAMFS: i64 = 0x8584_58f6;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid NUL-terminated path and a zeroed statfs for the kernel to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    match st.f_type as i64 {
        TMPFS => Some("tmpfs"),
        RAMFS => Some("ramfs"),
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
pub fn ram_backed(_path: &Path) -> Option<&'static str> {
    None
}

/// What the verb offers instead: `cold` has `--private-copy`; elsewhere, a copy by hand.
pub const FIX_COLD: &str = "use --private-copy";
/// The fix where no flag makes the copy.
pub const FIX_BY_HAND: &str =
    "copy the model to a private path on a disk file system and load that";

/// Why eviction of `files` did not take, with the fix, for people; `error` is the eviction's own
/// error, if it failed; `fix` names what the verb offers ([`FIX_COLD`], [`FIX_BY_HAND`]).
pub fn why_resident(files: &[&Path], error: Option<&str>, fix: &str) -> String {
    if let Some(e) = error {
        let denied = e.contains("ermission denied") || e.contains("not permitted");
        let what = if denied {
            "the file cannot be opened for eviction; run as its owner, or "
        } else {
            ""
        };
        return format!("eviction failed ({e}); {what}{fix}");
    }
    if let Some(fs) = files.iter().find_map(|f| ram_backed(f)) {
        return format!("the model is on {fs} (RAM-backed: its pages cannot leave memory); {fix}");
    }
    let held = holders(files);
    if !held.is_empty() {
        let who: Vec<String> = held
            .iter()
            .take(5)
            .map(|h| format!("pid {} ({})", h.pid, h.name))
            .collect();
        let more = held.len().saturating_sub(5);
        return format!(
            "mapped by {}{}: mapped pages cannot be evicted; stop {} or {fix}",
            who.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            },
            if held.len() == 1 { "it" } else { "them" }
        );
    }
    format!("the kernel kept the pages (no process maps the file, not on tmpfs); retry, or {fix}")
}

#[cfg(test)]
#[path = "holders_tests.rs"]
mod tests;
