//! Whether a level's rounds ran on a quiet machine: the noise sentinel's per-round readings
//! ([`RoundSentinel`], the OS's own counters) summed up per level, and the one stated rule that
//! turns them into a `retest` — more than half of a level's measured rounds disturbed (another
//! process kept more than [`OTHER_CORES_MAX`] of a core busy, or steal beyond [`STEAL_MAX`] of
//! the wall time). Pure: round records in.
//!
//! [`OTHER_CORES_MAX`]: crate::measure::sentinel::OTHER_CORES_MAX
//! [`STEAL_MAX`]: crate::measure::sentinel::STEAL_MAX

use serde::{Deserialize, Serialize};

use super::RoundRecord;
use crate::measure::sentinel::{RoundSentinel, MIN_JUDGED_WALL_S};
use crate::measure::stats::median;

/// A level's sentinel figures over its measured rounds (none in records written before every
/// round carried the sentinel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuietFigures {
    /// Measured rounds the sentinel flagged as disturbed (none: no round carried a reading long
    /// enough to judge).
    #[serde(default)]
    pub disturbed_rounds: Option<u64>,
    /// Measured rounds with a sentinel reading long enough to judge (at least
    /// [`MIN_JUDGED_WALL_S`]).
    #[serde(default)]
    pub sentinel_rounds: u64,
    /// Other processes' CPU time ÷ wall time, median over rounds: cores they kept busy.
    #[serde(default)]
    pub other_cores: Option<f64>,
    /// Steal time ÷ wall time, median over rounds.
    #[serde(default)]
    pub steal_fraction: Option<f64>,
    /// Cores this process kept busy, median over rounds.
    #[serde(default)]
    pub own_cores: Option<f64>,
    /// 1-minute load average at the end of the last round.
    #[serde(default)]
    pub loadavg_1m: Option<f64>,
}

impl QuietFigures {
    /// The figures of `rounds` (measured rounds only).
    pub fn of<'a>(rounds: impl IntoIterator<Item = &'a RoundRecord>) -> Self {
        Self::of_readings(rounds.into_iter().filter_map(|r| r.sentinel.as_ref()))
    }

    /// The figures of any readings (a round's, a cold start's, a session step's); those shorter
    /// than [`MIN_JUDGED_WALL_S`] are left out.
    pub fn of_readings<'a>(readings: impl IntoIterator<Item = &'a RoundSentinel>) -> Self {
        let seen: Vec<&RoundSentinel> = readings
            .into_iter()
            .filter(|s| s.wall_s >= MIN_JUDGED_WALL_S)
            .collect();
        if seen.is_empty() {
            return Self::default();
        }
        let per_wall = |f: fn(&RoundSentinel) -> Option<f64>| {
            let v: Vec<f64> = seen
                .iter()
                .filter(|s| s.wall_s > 0.0)
                .filter_map(|s| f(s).map(|x| x / s.wall_s))
                .collect();
            median(&v)
        };
        Self {
            disturbed_rounds: Some(seen.iter().filter(|s| s.disturbed).count() as u64),
            sentinel_rounds: seen.len() as u64,
            other_cores: per_wall(|s| s.other_cpu_s),
            steal_fraction: per_wall(|s| s.steal_s),
            own_cores: per_wall(|s| s.own_cpu_s),
            loadavg_1m: seen.last().and_then(|s| s.loadavg_1m),
        }
    }

    /// The rule: more than half of the rounds with a reading were disturbed.
    pub fn mostly_disturbed(&self) -> bool {
        self.disturbed_rounds
            .is_some_and(|d| self.sentinel_rounds > 0 && 2 * d > self.sentinel_rounds)
    }

    /// One line for any kind of reading (`rounds`, `starts`, `steps`): quiet, or how many were
    /// disturbed and by what; none without readings long enough to judge.
    pub fn line(&self, unit: &str) -> Option<String> {
        let n = self.sentinel_rounds;
        let d = self.disturbed_rounds?;
        let other = self.other_cores.map_or("n/a".into(), |o| format!("{o:.2}"));
        Some(if d == 0 {
            format!("quiet: 0 of {n} {unit} disturbed (other processes {other} cores busy, median)")
        } else {
            let why = causes(self.other_cores, self.steal_fraction);
            format!("{d} of {n} {unit} disturbed ({why}, median); retest on a quiet machine")
        })
    }

    /// `2 of 3 rounds disturbed: other processes kept 1.30 cores busy`, or none when the
    /// machine was quiet (or unobserved).
    pub fn disturbed_line(&self) -> Option<String> {
        let d = self.disturbed_rounds.filter(|d| *d > 0)?;
        let mut why = Vec::new();
        if let Some(o) = self.other_cores {
            why.push(format!("other processes kept {o:.2} cores busy (median)"));
        }
        if let Some(s) = self.steal_fraction.filter(|s| *s >= 0.005) {
            why.push(format!("steal {:.0} % of the wall time", s * 100.0));
        }
        Some(format!(
            "{d} of {} rounds disturbed: {}",
            self.sentinel_rounds,
            why.join(", ")
        ))
    }
}

/// What disturbed readings: `other processes 0.40 cores busy`, with `, steal 41 %` when the
/// hypervisor took at least half a percent of the wall time.
pub(crate) fn causes(other_cores: Option<f64>, steal_fraction: Option<f64>) -> String {
    let other = other_cores.map_or("n/a".into(), |o| format!("{o:.2}"));
    let mut why = format!("other processes {other} cores busy");
    if let Some(s) = steal_fraction.filter(|s| *s >= 0.005) {
        why.push_str(&format!(", steal {:.0} %", s * 100.0));
    }
    why
}

#[cfg(test)]
#[path = "quiet_tests.rs"]
mod tests;
