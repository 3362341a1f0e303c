//! One clock two processes share: `CLOCK_MONOTONIC` (what `std::time::Instant` reads on Linux),
//! as nanoseconds, so a parent can stamp the moment it starts a child and the child can stamp its
//! own phases on the same time line.

/// Now on the system-wide monotonic clock, nanoseconds (0 where the clock cannot be read).
#[cfg(unix)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(not(unix))]
pub fn now_ns() -> u64 {
    0
}

/// Seconds from `from_ns` to `to_ns` (none when the clock went backwards or was unreadable).
pub fn seconds_between(from_ns: u64, to_ns: u64) -> Option<f64> {
    (from_ns > 0 && to_ns >= from_ns).then(|| (to_ns - from_ns) as f64 / 1e9)
}

#[cfg(test)]
#[path = "monotonic_tests.rs"]
mod tests;
