//! The four clocks a person sits through — load, kernel warm-up, prefill, decode — defined once:
//! their wording (shown by `--help` and the README) and the formulas every verb uses (`generate`,
//! `run`, `sweep`), so a figure means the same wherever it is printed.

use serde::{Deserialize, Serialize};

use super::stats;

/// The clock definitions, as `--help` prints them.
pub(crate) const DEFINITIONS: &str = "\
  load     open + read + build weights and tokenizer (fetching a missing model is not counted);
           the page-cache state of the weight files before the load is shown (cold = not resident)
  warm-up  kernel warm-up: the first pure-decode step minus the median of the steady steps of the
           same shape; shown only when it exceeds the steady steps' own spread (3 x 1.4826 x
           MAD, about 3 sigma), else 'none measurable'
  prefill  prompt tokens through the model up to the first output token (time to first token);
           prompt tok/s = prompt tokens / (first token - admission)
  decode   every later token; TPOT = (completion - TTFT) / (output tokens - 1);
           decode tok/s = 1 / TPOT. A rate from fewer than 2 timed tokens or a zero interval is n/a";

/// Kernel warm-up as measured: the first call's excess over the steady steps, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warmup {
    /// The first step was slower than the steady spread: the excess, seconds (> 0).
    Excess { seconds: f64, spread_s: f64 },
    /// The first step was within the steady steps' spread, seconds.
    NoneMeasurable { spread_s: f64 },
}

impl Warmup {
    /// `12.3 ms` or `none measurable (< 0.4 ms spread)`.
    pub(crate) fn label(&self) -> String {
        match *self {
            Self::Excess { seconds, .. } => format!("{:.1} ms", seconds * 1e3),
            Self::NoneMeasurable { spread_s } => {
                format!("none measurable (< {:.1} ms spread)", spread_s * 1e3)
            }
        }
    }
}

/// Kernel warm-up from the first step's time and the steady steps of the same shape (seconds);
/// none with fewer than 2 steady steps.
pub(crate) fn kernel_warmup(first_s: f64, steady_s: &[f64]) -> Option<Warmup> {
    if steady_s.len() < 2 || !first_s.is_finite() {
        return None;
    }
    let med = stats::median(steady_s)?;
    let spread_s = 3.0 * 1.4826 * stats::mad(steady_s)?;
    let excess = first_s - med;
    Some(if excess > spread_s && excess > 0.0 {
        Warmup::Excess {
            seconds: excess,
            spread_s,
        }
    } else {
        Warmup::NoneMeasurable { spread_s }
    })
}

/// `count` events over `seconds` as a rate per second; none for a zero, negative or non-finite
/// interval (never a rate from a zero interval). Callers that time tokens pass only intervals
/// between two timed tokens, so a single token gives no rate.
pub(crate) fn rate(count: usize, seconds: f64) -> Option<f64> {
    (seconds.is_finite() && seconds > 0.0).then(|| count as f64 / seconds)
}

/// A rate for people: `12.3 tok/s` or `n/a (too few tokens)`.
pub(crate) fn rate_label(rate: Option<f64>, unit: &str) -> String {
    rate.map_or("n/a (too few tokens)".into(), |r| format!("{r:.1} {unit}"))
}

#[cfg(test)]
#[path = "clocks_tests.rs"]
mod tests;
