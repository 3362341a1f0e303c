//! Process memory and disk counters read from `/proc/self` (Linux). Elsewhere, or when a file is
//! not readable, the functions return `None` and reports say "n/a".

use std::fs;

/// Peak resident set size since start or the last [`reset_peak`] (`VmHWM`), bytes.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Resets the peak RSS to the current RSS (`echo 5 > /proc/self/clear_refs`); false if refused.
pub(crate) fn reset_peak() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Bytes this process caused to be read from storage (`read_bytes` of `/proc/self/io`); page-cache
/// hits do not count.
pub(crate) fn disk_read_bytes() -> Option<u64> {
    let io = fs::read_to_string("/proc/self/io").ok()?;
    field(&io, "read_bytes:")
}

/// Total physical memory (`MemTotal` of `/proc/meminfo`), bytes.
pub(crate) fn total_memory_bytes() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    field(&info, "MemTotal:").map(|k| k * 1024)
}

fn status_kib(key: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    field(&status, key)
}

/// The first number after `key` on its line.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
