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
            format!(
                "{d} of {n} {unit} disturbed (other processes {other} cores busy, median); retest \
                 on a quiet machine"
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sentinel::judge;

    /// A measured round whose sentinel saw other processes use `other` seconds of CPU over
    /// `wall` seconds.
    fn round(wall: f64, other: f64) -> RoundRecord {
        let (disturbed, why) = judge(wall, Some(other), Some(0.0));
        RoundRecord {
            wall_s: wall,
            sentinel: Some(RoundSentinel {
                wall_s: wall,
                other_cpu_s: Some(other),
                steal_s: Some(0.0),
                own_cpu_s: Some(wall),
                cores_busy: Some(1.0),
                busy_threads: Some(1),
                voluntary_switches: None,
                involuntary_switches: None,
                minor_faults: None,
                major_faults: None,
                loadavg_1m: Some(1.0),
                governor: None,
                freq_mhz: None,
                thermal_c: None,
                disturbed,
                why,
            }),
            ..RoundRecord::default()
        }
    }

    #[test]
    fn a_quiet_level_is_not_flagged_and_a_busy_one_is() {
        let quiet = QuietFigures::of(&[round(1.0, 0.01), round(1.0, 0.1), round(1.0, 0.0)]);
        assert_eq!(quiet.disturbed_rounds, Some(0));
        assert!(!quiet.mostly_disturbed());
        assert_eq!(quiet.disturbed_line(), None);
        let busy = QuietFigures::of(&[round(1.0, 1.3), round(2.0, 2.6), round(1.0, 0.0)]);
        assert_eq!(busy.disturbed_rounds, Some(2));
        assert!(busy.mostly_disturbed(), "2 of 3 is most");
        let line = busy.disturbed_line().unwrap();
        assert!(line.starts_with("2 of 3 rounds disturbed"), "{line}");
        assert!(line.contains("1.30 cores"), "{line}");
        let half = QuietFigures::of(&[round(1.0, 1.0), round(1.0, 0.0)]);
        assert!(!half.mostly_disturbed(), "1 of 2 is not most");
    }

    #[test]
    fn rounds_without_a_reading_say_nothing() {
        let short = QuietFigures::of(&[round(0.01, 0.02), round(0.2, 1.0)]);
        assert_eq!(short, QuietFigures::default(), "too short to judge");
        let old = QuietFigures::of(&[RoundRecord::default()]);
        assert_eq!(old, QuietFigures::default());
        assert!(!old.mostly_disturbed());
    }
}
