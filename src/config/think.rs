//! How jobs pace themselves, the way people do: `--think S` (a pause after each answer before
//! the job's next task), `--think-jitter S` (each pause drawn uniformly from S ± jitter, from
//! a seeded RNG) and `--stagger S` (job j starts its first task j·S after the round starts).
//! All zero by default: every job fires its next task the instant the last one ends.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Think time, jitter and stagger, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ThinkConfig {
    /// Pause after each finished task before the job's next one, seconds.
    #[serde(default)]
    pub think_s: f64,
    /// Each pause is drawn uniformly from `think_s ± jitter_s` (never below 0), seconds.
    #[serde(default)]
    pub jitter_s: f64,
    /// Job `j` starts its first task `j × stagger_s` after the round starts, seconds.
    #[serde(default)]
    pub stagger_s: f64,
    /// Seed of the jitter's RNG (the sampling seed).
    #[serde(default)]
    pub seed: u64,
}

impl ThinkConfig {
    /// Whether jobs run in lockstep (no think time, no stagger).
    pub fn is_lockstep(&self) -> bool {
        self.think_s == 0.0 && self.jitter_s == 0.0 && self.stagger_s == 0.0
    }

    /// Checks each value is a finite number of seconds ≥ 0; names the flag at fault.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        for (flag, v) in [
            ("--think", self.think_s),
            ("--think-jitter", self.jitter_s),
            ("--stagger", self.stagger_s),
        ] {
            if !v.is_finite() || !(0.0..=MAX_SECONDS).contains(&v) {
                return Err(ConfigError::flag(
                    flag,
                    v.to_string(),
                    format!("seconds from 0 to {MAX_SECONDS}, e.g. {flag} 2.5"),
                ));
            }
        }
        if self.jitter_s > 0.0 && self.think_s == 0.0 {
            return Err(ConfigError::flag(
                "--think-jitter",
                self.jitter_s.to_string(),
                "jitter varies the think time; give --think S as well",
            ));
        }
        Ok(())
    }
}

/// The longest pause accepted, seconds (a day).
const MAX_SECONDS: f64 = 86_400.0;

#[cfg(test)]
#[path = "think_tests.rs"]
mod tests;
