//! A machine's calibration (`tokfire calibrate`): A/A pairs — two identical arms, rounds
//! interleaved as in `ab` — give each metric's noise floor on this machine (how far B ÷ A moves
//! when nothing changed) and the measured false-positive rate of `ab`'s rule at a chosen
//! `--min-effect` (the share of A/A pairs it called keep or revert). Saved as a machine profile
//! keyed by CPU, kernels and threads, which `ab` reads to warn when `--min-effect` is below what
//! the machine can resolve. Pure: pairs of arms in, profile out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ab::{Decision, Metric};
use super::arms::round_figures;
use super::RunRecord;
use crate::measure::stats::median;

/// Layout version of the profile file.
pub const FORMAT: u32 = 1;

/// One metric's noise on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// |B ÷ A − 1| of the pairs' medians: median and largest over pairs (fractions).
    pub ab_change_median: f64,
    pub ab_change_max: f64,
    /// Within-arm noise (MAD ÷ median), median over all arms (fraction).
    pub within_arm: f64,
}

/// The profile a calibration saves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub tokfire_calibration: u32,
    pub created_utc: String,
    /// What the profile is valid for.
    pub cpu_model: String,
    pub kernels: String,
    pub threads: usize,
    pub model_sha256: String,
    pub workload: String,
    /// A/A pairs run, measured rounds per arm, and the `--min-effect` judged at.
    pub pairs: usize,
    pub rounds: usize,
    pub min_effect: f64,
    /// Pairs `ab`'s rule called keep or revert (false positives: nothing changed).
    pub false_positives: usize,
    /// Measured rounds the sentinel flagged, of all measured rounds.
    pub disturbed_rounds: usize,
    pub measured_rounds: usize,
    /// Per metric key (`decode`, `ttft`, …).
    pub floors: BTreeMap<String, Floor>,
}

/// `decode`, `prefill`, … as `--expect` spells them.
pub fn key(m: Metric) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Profile {
    /// The profile of `pairs` (arm A, arm B with its verdict); `who` fills the identity.
    pub fn of(pairs: &[[RunRecord; 2]], min_effect: f64, created_utc: String) -> Option<Self> {
        let first = &pairs.first()?[1];
        let mut floors = BTreeMap::new();
        for m in Metric::ALL {
            let mut change = Vec::new();
            let mut within = Vec::new();
            for [a, b] in pairs {
                let of = |r: &RunRecord| -> Vec<f64> {
                    round_figures(r).iter().filter_map(|f| m.of(f)).collect()
                };
                let (va, vb) = (of(a), of(b));
                if let (Some(ma), Some(mb)) = (median(&va), median(&vb)) {
                    if ma > 0.0 {
                        change.push((mb / ma - 1.0).abs());
                    }
                }
                for v in [&va, &vb] {
                    if let (Some(med), Some(mad)) = (median(v), crate::measure::stats::mad(v)) {
                        if med > 0.0 {
                            within.push(mad / med);
                        }
                    }
                }
            }
            if let (Some(cm), Some(w)) = (median(&change), median(&within)) {
                let max = change.iter().copied().fold(0.0, f64::max);
                floors.insert(
                    key(m),
                    Floor {
                        ab_change_median: cm,
                        ab_change_max: max,
                        within_arm: w,
                    },
                );
            }
        }
        let verdicts = pairs
            .iter()
            .filter_map(|[_, b]| b.ab()?.verdict.as_ref().map(|v| v.decision));
        let sentinels = pairs.iter().flatten().filter_map(|r| r.ab());
        let (mut disturbed, mut measured) = (0, 0);
        for a in sentinels {
            measured += a.rounds.len();
            disturbed += a
                .rounds
                .iter()
                .filter(|r| r.sentinel.as_ref().is_some_and(|s| s.disturbed))
                .count();
        }
        Some(Self {
            tokfire_calibration: FORMAT,
            created_utc,
            cpu_model: first.machine.cpu_model.clone(),
            kernels: first.runtime.kernels.clone(),
            threads: first.runtime.threads,
            model_sha256: first.model.sha256.clone(),
            workload: format!("{}@{}", first.workload.name, first.workload.version),
            pairs: pairs.len(),
            rounds: first.config.rounds,
            min_effect,
            false_positives: verdicts.filter(|d| *d != Decision::Retest).count(),
            disturbed_rounds: disturbed,
            measured_rounds: measured,
            floors,
        })
    }

    /// Whether the profile describes this machine and runtime.
    pub fn matches(&self, cpu_model: &str, kernels: &str, threads: usize) -> bool {
        self.cpu_model == cpu_model && self.kernels == kernels && self.threads == threads
    }

    /// The warning `ab` prints when `min_effect` is below the A/A movement of `metric` here.
    pub fn warning(&self, metric: Metric, min_effect: f64) -> Option<String> {
        let f = self.floors.get(&key(metric))?;
        (min_effect < f.ab_change_max).then(|| {
            format!(
                "--min-effect {:.1} % is below what this machine resolves for {}: in calibration \
                 ({}, {} A/A pairs) identical arms moved up to {:.1} %; raise --min-effect or \
                 calibrate again on a quieter machine",
                min_effect.abs() * 100.0,
                metric.label(),
                self.created_utc,
                self.pairs,
                f.ab_change_max * 100.0
            )
        })
    }

    /// The upper end of the 95 % Wilson interval of the false-positive rate.
    pub fn false_positive_upper(&self) -> f64 {
        let n = self.pairs.max(1) as f64;
        let p = self.false_positives as f64 / n;
        let z = 1.96_f64;
        let centre = p + z * z / (2.0 * n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        ((centre + half) / (1.0 + z * z / n)).min(1.0)
    }
}
