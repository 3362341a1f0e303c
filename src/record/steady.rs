//! Warm-up found, not assumed: per level, whether the decode steps of the measured rounds reached
//! a steady state ([`crate::measure::changepoint`]). A decode step's time grows with the context
//! it attends to, so raw step times drift within every answer; the series is therefore each
//! step's forward time ÷ the median of the same step in every measured round (greedy rounds of
//! one level repeat the same steps), over the step positions that are decode-only with the same
//! sequences and tokens in every round, rounds in order. Flat means no round was still warming
//! up; steps before the last changepoint are left out of the steady figure and kept in the
//! record. Pure.

use serde::{Deserialize, Serialize};

use super::RoundRecord;
use crate::measure::changepoint::{analyse, Shape};
use crate::measure::stats::median;

/// A level's steady-state figures (empty in records without steps).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyFigures {
    /// `flat`, `warmup`, `slowdown` or `no-steady-state` (empty: not judged, with fewer than
    /// two measured rounds or 10 comparable steps).
    #[serde(default)]
    pub steady_shape: String,
    /// Comparable decode steps analysed.
    #[serde(default)]
    pub steady_steps: u64,
    /// Comparable decode steps per round.
    #[serde(default)]
    pub steady_per_round: u64,
    /// The first step of the steady (last) segment, 0-based over the analysed steps.
    #[serde(default)]
    pub steady_from_step: Option<u64>,
    /// Mean of the last segment ÷ mean before it, minus 1.
    #[serde(default)]
    pub steady_shift: Option<f64>,
    /// Share of the steady part's steps in transient bursts away from its level.
    #[serde(default)]
    pub steady_burst_share: Option<f64>,
    /// Median forward time of the steady part's steps, milliseconds.
    #[serde(default)]
    pub steady_step_ms: Option<f64>,
}

impl SteadyFigures {
    /// The figures of `rounds` (measured rounds, in order); empty with fewer than two rounds
    /// or fewer than 10 comparable steps.
    pub fn of<'a>(rounds: impl IntoIterator<Item = &'a RoundRecord>) -> Self {
        let rounds: Vec<&RoundRecord> = rounds.into_iter().collect();
        let len = rounds.iter().map(|r| r.steps.len()).min().unwrap_or(0);
        if rounds.len() < 2 {
            return Self::default();
        }
        // Step positions that are the same decode-only step in every round.
        let same: Vec<usize> = (0..len)
            .filter(|&k| {
                let first = &rounds[0].steps[k];
                first.prefill_tokens == 0
                    && first.decode_tokens > 0
                    && rounds.iter().all(|r| {
                        let s = &r.steps[k];
                        s.prefill_tokens == 0
                            && (s.seqs, s.decode_tokens) == (first.seqs, first.decode_tokens)
                    })
            })
            .collect();
        let reference: Vec<f64> = same
            .iter()
            .map(|&k| {
                let v: Vec<f64> = rounds.iter().map(|r| r.steps[k].forward_s).collect();
                median(&v).unwrap_or(0.0)
            })
            .collect();
        if reference.iter().any(|m| *m <= 0.0) {
            return Self::default();
        }
        let raw: Vec<f64> = rounds
            .iter()
            .flat_map(|r| same.iter().map(|&k| r.steps[k].forward_s * 1e3))
            .collect();
        let x: Vec<f64> = rounds
            .iter()
            .flat_map(|r| {
                same.iter()
                    .zip(&reference)
                    .map(|(&k, m)| r.steps[k].forward_s / m)
            })
            .collect();
        let steps = x.len() as u64;
        let Some(st) = analyse(&x) else {
            return Self {
                steady_steps: steps,
                ..Self::default()
            };
        };
        Self {
            steady_shape: match st.shape {
                Shape::Flat => "flat",
                Shape::Warmup => "warmup",
                Shape::Slowdown => "slowdown",
                Shape::NoSteadyState => "no-steady-state",
            }
            .into(),
            steady_steps: steps,
            steady_per_round: same.len() as u64,
            steady_from_step: Some(st.from as u64),
            steady_shift: st.shift,
            steady_burst_share: st.burst_share,
            steady_step_ms: median(&raw[st.from.min(raw.len())..]),
        }
    }

    /// For people, short: `flat over 405 decode steps, 4.91 ms med`, `warm-up until step 9
    /// of 390 (round 1), 20 % slower; …`, `8 % slower from step …`, `no steady state …`; none
    /// when not judged.
    pub fn describe(&self) -> Option<String> {
        let shape = Some(self.steady_shape.as_str()).filter(|s| !s.is_empty())?;
        let (n, from) = (self.steady_steps, self.steady_from_step.unwrap_or(0));
        let round = from / self.steady_per_round.max(1) + 1;
        let pct = self.steady_shift.map_or(0.0, |s| s.abs() * 100.0);
        let step_ms = self
            .steady_step_ms
            .map_or("n/a".into(), |m| format!("{m:.2} ms"));
        let at = format!("step {} of {n} (round {round})", from + 1);
        let bursts = match self.steady_burst_share {
            Some(b) if b >= 0.005 => format!(" ({:.0} % in bursts)", b * 100.0),
            _ => String::new(),
        };
        Some(match shape {
            "flat" => format!("flat over {n} decode steps, {step_ms} med{bursts}"),
            "warmup" => format!(
                "warm-up until {at}, {pct:.0} % slower; steady {step_ms} med{bursts}; add --warmup"
            ),
            "slowdown" => format!(
                "{pct:.0} % slower from {at} on; steady {step_ms} med; check thermals, other work"
            ),
            _ => format!(
                "no steady state over {n} decode steps{bursts}; retest with more --warmup, quiet"
            ),
        })
    }
}

#[cfg(test)]
#[path = "steady_tests.rs"]
mod tests;
