//! The noise sentinel: what else the machine did during a round, and what this process really
//! did, from the operating system's own counters rather than the flags passed (Linux `/proc` and
//! `/sys`; elsewhere, or where a file is unreadable, the figure is absent).
//!
//! Per round: CPU time of every other process (all CPUs' busy time in `/proc/stat` minus this
//! process's, from `/proc/self/stat`) and steal time (a hypervisor giving the CPU to another
//! guest), the 1-minute load average, the frequency governor and the current frequency of CPU 0,
//! the hottest thermal zone; this process's CPU time per thread (`/proc/self/task/*/stat`) plus
//! that of children it reaped meanwhile — how many cores were actually busy — and its voluntary
//! and involuntary context switches. A round
//! is *disturbed* when other work took more than [`OTHER_CORES_MAX`] of a core on average or
//! steal exceeded [`STEAL_MAX`] of the wall time; a round shorter than [`MIN_JUDGED_WALL_S`] is
//! not judged.

use std::fs;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Other processes' average busy cores above which a round counts as disturbed.
pub const OTHER_CORES_MAX: f64 = 0.25;
/// Steal time as a fraction of wall time above which a round counts as disturbed.
pub const STEAL_MAX: f64 = 0.05;
/// Rounds shorter than this are not judged: the OS counts CPU time in clock ticks (10 ms on
/// most Linux systems), too coarse for a shorter window.
pub const MIN_JUDGED_WALL_S: f64 = 0.25;
/// A thread counts as busy when its CPU time is at least this fraction of the wall time.
pub const BUSY_THREAD: f64 = 0.1;

/// What the sentinel saw over one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSentinel {
    /// Wall time between the two readings, seconds.
    pub wall_s: f64,
    /// CPU time of every other process, seconds (none without `/proc/stat`).
    pub other_cpu_s: Option<f64>,
    /// Steal time over all CPUs, seconds.
    pub steal_s: Option<f64>,
    /// This process's CPU time, seconds.
    pub own_cpu_s: Option<f64>,
    /// Own CPU time ÷ wall time: cores this process kept busy on average.
    pub cores_busy: Option<f64>,
    /// Threads of this process busy at least [`BUSY_THREAD`] of the wall time.
    pub busy_threads: Option<usize>,
    /// Context switches of all threads of this process during the round.
    pub voluntary_switches: Option<u64>,
    pub involuntary_switches: Option<u64>,
    /// Page faults of this process during the round: minor (page already in memory) and
    /// major (read from storage) (absent in older records).
    #[serde(default)]
    pub minor_faults: Option<u64>,
    #[serde(default)]
    pub major_faults: Option<u64>,
    /// 1-minute load average at the end of the round.
    pub loadavg_1m: Option<f64>,
    /// CPU 0's frequency governor (`performance`, `powersave`, …).
    pub governor: Option<String>,
    /// CPU 0's current frequency at the end of the round, MHz.
    pub freq_mhz: Option<f64>,
    /// The hottest thermal zone at the end of the round, °C.
    pub thermal_c: Option<f64>,
    /// Other work or steal beyond the thresholds.
    pub disturbed: bool,
    /// Why it was flagged, for people.
    pub why: Option<String>,
}

/// The counters at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    /// (busy, steal) ticks over all CPUs.
    total: Option<(u64, u64)>,
    /// Per thread id: CPU ticks.
    threads: Vec<(u32, u64)>,
    /// (voluntary, involuntary) summed over threads.
    switches: Option<(u64, u64)>,
    /// (minor, major) page faults of this process (`/proc/self/stat`).
    faults: Option<(u64, u64)>,
    /// CPU time of this process's children that have exited (`RUSAGE_CHILDREN`), seconds: a
    /// child started and reaped between two snapshots (a `cold` start) counts as our own work.
    children_cpu_s: Option<f64>,
}

/// User + system CPU time of the exited children of this process, seconds.
fn children_cpu_s() -> Option<f64> {
    // SAFETY: a zeroed rusage for the kernel to fill.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid `who`.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) } != 0 {
        return None;
    }
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    Some(t(u.ru_utime) + t(u.ru_stime))
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// `(busy, steal)` ticks from the first line of `/proc/stat`.
pub fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user)
    let busy = v.first()? + v.get(1)? + v.get(2)? + v.get(5)? + v.get(6)?;
    Some((busy, v.get(7).copied().unwrap_or(0)))
}

/// utime + stime ticks of a `/proc/*/stat` line (the fields after the parenthesised name).
pub fn parse_task_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, utime 14, stime 15 → indices 11 and 12 here.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// (minflt, majflt) of a `/proc/*/stat` line (fields 10 and 12).
pub fn parse_faults(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so field 10 is index 7 and field 12 index 9.
    Some((f.get(7)?.parse().ok()?, f.get(9)?.parse().ok()?))
}

fn switches_of(status: &str) -> Option<(u64, u64)> {
    let get = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((
        get("voluntary_ctxt_switches:")?,
        get("nonvoluntary_ctxt_switches:")?,
    ))
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok()
}

impl Snapshot {
    /// Reads the counters now.
    pub fn take() -> Self {
        let mut threads = Vec::new();
        let mut switches: Option<(u64, u64)> = None;
        if let Ok(dir) = fs::read_dir("/proc/self/task") {
            for e in dir.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
                    continue;
                };
                if let Some(t) = read(e.path().join("stat")).and_then(|s| parse_task_ticks(&s)) {
                    threads.push((tid, t));
                }
                if let Some((v, n)) = read(e.path().join("status")).and_then(|s| switches_of(&s)) {
                    let s = switches.get_or_insert((0, 0));
                    s.0 += v;
                    s.1 += n;
                }
            }
        }
        Self {
            at: Instant::now(),
            total: read("/proc/stat").and_then(|s| parse_stat(&s)),
            threads,
            switches,
            faults: read("/proc/self/stat").and_then(|s| parse_faults(&s)),
            children_cpu_s: children_cpu_s(),
        }
    }

    /// What happened between `self` and `end`.
    pub fn until(&self, end: &Snapshot) -> RoundSentinel {
        let hz = ticks_per_s();
        let wall = end.at.duration_since(self.at).as_secs_f64();
        let before: std::collections::HashMap<u32, u64> = self.threads.iter().copied().collect();
        let per_thread: Vec<f64> = end
            .threads
            .iter()
            .map(|(tid, t)| t.saturating_sub(*before.get(tid).unwrap_or(&0)) as f64 / hz)
            .collect();
        let children = match (self.children_cpu_s, end.children_cpu_s) {
            (Some(a), Some(b)) => (b - a).max(0.0),
            _ => 0.0,
        };
        let own = (!end.threads.is_empty()).then(|| per_thread.iter().sum::<f64>() + children);
        let busy_threads = own.map(|_| {
            per_thread
                .iter()
                .filter(|s| wall > 0.0 && **s >= BUSY_THREAD * wall)
                .count()
        });
        let (other, steal) = match (self.total, end.total) {
            (Some(a), Some(b)) => {
                let busy = b.0.saturating_sub(a.0) as f64 / hz;
                let steal = b.1.saturating_sub(a.1) as f64 / hz;
                (Some((busy - own.unwrap_or(0.0)).max(0.0)), Some(steal))
            }
            _ => (None, None),
        };
        let (vol, invol) = match (self.switches, end.switches) {
            (Some(a), Some(b)) => (Some(b.0.saturating_sub(a.0)), Some(b.1.saturating_sub(a.1))),
            _ => (None, None),
        };
        let (disturbed, why) = judge(wall, other, steal);
        RoundSentinel {
            wall_s: wall,
            other_cpu_s: other,
            steal_s: steal,
            own_cpu_s: own,
            cores_busy: own.filter(|_| wall > 0.0).map(|o| o / wall),
            busy_threads,
            voluntary_switches: vol,
            involuntary_switches: invol,
            minor_faults: self
                .faults
                .zip(end.faults)
                .map(|(a, b)| b.0.saturating_sub(a.0)),
            major_faults: self
                .faults
                .zip(end.faults)
                .map(|(a, b)| b.1.saturating_sub(a.1)),
            loadavg_1m: read("/proc/loadavg")
                .and_then(|s| s.split_whitespace().next()?.parse().ok()),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .map(|s| s.trim().to_string()),
            freq_mhz: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
                .and_then(|s| s.trim().parse::<f64>().ok())
                .map(|khz| khz / 1000.0),
            thermal_c: hottest_zone(),
            disturbed,
            why,
        }
    }
}

/// What `--quiet-wait` waited before a round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuietWait {
    /// Seconds waited.
    pub waited_s: f64,
    /// Whether the machine was quiet when the round started (false: the wait ran out).
    pub quiet: bool,
}

/// Half-second windows watched by [`wait_quiet`].
const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

/// Waits up to `max_s` seconds for a half-second window in which other processes kept at most
/// [`OTHER_CORES_MAX`] of a core busy; returns early (not quiet) once `stop` holds a signal.
pub fn wait_quiet(max_s: f64, stop: Option<&std::sync::atomic::AtomicUsize>) -> QuietWait {
    let start = Instant::now();
    loop {
        let a = Snapshot::take();
        std::thread::sleep(QUIET_WINDOW);
        let seen = a.until(&Snapshot::take());
        let quiet = match seen.other_cpu_s {
            Some(o) => o / seen.wall_s.max(1e-9) <= OTHER_CORES_MAX,
            None => true, // nothing to watch: waiting would only lose time
        };
        let waited_s = start.elapsed().as_secs_f64();
        let stopped = stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed) != 0);
        if quiet || stopped || waited_s >= max_s {
            return QuietWait { waited_s, quiet };
        }
    }
}

/// Disturbed or not, and why.
pub fn judge(wall: f64, other_s: Option<f64>, steal_s: Option<f64>) -> (bool, Option<String>) {
    if wall < MIN_JUDGED_WALL_S {
        return (false, None);
    }
    let mut why = Vec::new();
    if let Some(o) = other_s.filter(|o| o / wall > OTHER_CORES_MAX) {
        why.push(format!("other processes kept {:.2} cores busy", o / wall));
    }
    if let Some(s) = steal_s.filter(|s| s / wall > STEAL_MAX) {
        why.push(format!("steal {:.0} % of the wall time", 100.0 * s / wall));
    }
    (!why.is_empty(), (!why.is_empty()).then(|| why.join(", ")))
}

fn hottest_zone() -> Option<f64> {
    fs::read_dir("/sys/class/thermal")
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("thermal_zone"))
        .filter_map(|e| read(e.path().join("temp"))?.trim().parse::<f64>().ok())
        .map(|milli| milli / 1000.0)
        .reduce(f64::max)
}

#[cfg(test)]
#[path = "sentinel_tests.rs"]
mod tests;
