//! Changepoints in a series of step times: where the mean shifts, found by binary segmentation
//! with a penalised least-squares cost (the mean-shift model of Killick et al.'s PELT paper,
//! searched greedily), and a classification after Barrett et al., "Virtual Machine Warmup Blows
//! Hot and Cold" (OOPSLA 2017): *flat* (steady from the start; short bursts allowed), *warm-up*
//! (slower at first, then steady), *slowdown* (faster at first, then steady and slower) or *no
//! steady state* (steady too late, or too bursty). Pure: numbers in, verdict out.
//!
//! Isolated outliers are clipped first (to a running median ± [`CLIP_SIGMAS`] robust standard
//! deviations). The noise scale is estimated robustly from first differences (σ = 1.4826 · MAD(Δx) / √2, so
//! a mean shift does not inflate it); a split is kept when it lowers the cost by more than
//! [`PENALTY`] · σ² · ln n, both segments have at least [`MIN_SEGMENT`] points and their means
//! differ by at least [`MIN_SHIFT`] (smaller shifts are below what a person would act on).

use super::stats::median;

/// Penalty factor on σ² · ln n per changepoint (BIC would be 2; a little stricter for the heavy
/// tails of step times).
pub const PENALTY: f64 = 3.0;
/// Fewest points in a segment.
pub const MIN_SEGMENT: usize = 5;
/// Smallest relative difference between neighbouring segment means that counts.
pub const MIN_SHIFT: f64 = 0.05;
/// Points beyond this many robust standard deviations from the median are clipped to it first
/// (step times have heavy tails: one preempted step must not look like a new segment).
pub const CLIP_SIGMAS: f64 = 3.0;
/// The steady part must hold at least this share of the series, and bursts less than this
/// share of the steady part.
pub const STEADY_SHARE: f64 = 1.0 / 3.0;

/// How a series behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// No change: steady from the first point.
    Flat,
    /// Settles on a faster last segment.
    Warmup,
    /// Settles on a slower last segment.
    Slowdown,
    /// The last change leaves too short a tail to call steady.
    NoSteadyState,
}

/// The changepoints of a series and what they mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    pub shape: Shape,
    /// Indices where a new segment starts, ascending (empty when flat).
    pub changes: Vec<usize>,
    /// Where the steady part starts (0 when flat).
    pub from: usize,
    /// Mean from `from` on ÷ mean before it, minus 1 (none when steady from the start).
    pub shift: Option<f64>,
    /// Share of the steady part's points in transient bursts away from its level.
    pub burst_share: Option<f64>,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sum of squared deviations from the mean.
fn cost(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum()
}

/// Robust noise scale from first differences.
fn sigma(x: &[f64]) -> f64 {
    let d: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let med = median(&d).unwrap_or(0.0);
    let dev: Vec<f64> = d.iter().map(|v| (v - med).abs()).collect();
    1.4826 * median(&dev).unwrap_or(0.0) / std::f64::consts::SQRT_2
}

/// Half-width of the running median that outliers are clipped against.
const CLIP_HALF_WINDOW: usize = 4;

/// `x` with isolated outliers clipped: each point to its running median (9 points) ± [`CLIP_SIGMAS`]
/// × the robust spread of the residuals. A level shift moves the running median with it, so it
/// survives; a lone slow step does not.
fn clip(x: &[f64]) -> Vec<f64> {
    let local: Vec<f64> = (0..x.len())
        .map(|i| {
            let (a, b) = (
                i.saturating_sub(CLIP_HALF_WINDOW),
                (i + CLIP_HALF_WINDOW + 1).min(x.len()),
            );
            median(&x[a..b]).unwrap_or(x[i])
        })
        .collect();
    let dev: Vec<f64> = x.iter().zip(&local).map(|(v, m)| (v - m).abs()).collect();
    let r = CLIP_SIGMAS * 1.4826 * median(&dev).unwrap_or(0.0);
    if r <= 0.0 {
        return x.to_vec();
    }
    x.iter()
        .zip(&local)
        .map(|(v, m)| v.clamp(m - r, m + r))
        .collect()
}

/// The best single split of `x` (offset `at`) that pays its penalty, recursively.
fn split(x: &[f64], at: usize, penalty: f64, out: &mut Vec<usize>) {
    if x.len() < 2 * MIN_SEGMENT {
        return;
    }
    let whole = cost(x);
    // Prefix sums make every candidate split O(1): cost = Σx² − (Σx)² ÷ n per side.
    let (mut s1, mut s2) = (vec![0.0; x.len() + 1], vec![0.0; x.len() + 1]);
    for (i, v) in x.iter().enumerate() {
        s1[i + 1] = s1[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let side = |a: usize, b: usize| {
        let (n, t) = ((b - a) as f64, s1[b] - s1[a]);
        (s2[b] - s2[a] - t * t / n).max(0.0)
    };
    let n = x.len();
    let best = (MIN_SEGMENT..=n - MIN_SEGMENT)
        .map(|k| (k, side(0, k) + side(k, n)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let Some((k, c)) = best else { return };
    let (a, b) = (mean(&x[..k]), mean(&x[k..]));
    let shift = (b - a).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
    if whole - c <= penalty || shift < MIN_SHIFT {
        return;
    }
    split(&x[..k], at, penalty, out);
    out.push(at + k);
    split(&x[k..], at + k, penalty, out);
}

/// Finds the changepoints of `x` and classifies it; none for a series too short to judge
/// (fewer than 2 × [`MIN_SEGMENT`] points).
///
/// The reference level is the median of the series' second half. Leading segments away from it
/// are the warm-up (slower: [`Shape::Warmup`]) or the level before a slowdown (faster:
/// [`Shape::Slowdown`]); the steady part starts at the first segment within [`MIN_SHIFT`] of the
/// reference. Later segments away from it are transient bursts; when they cover
/// [`STEADY_SHARE`] or more of the steady part, or the steady part is shorter than that share
/// of the series, there is no steady state.
pub fn analyse(x: &[f64]) -> Option<Steady> {
    if x.len() < 2 * MIN_SEGMENT || x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let x = &clip(x);
    let n = x.len();
    let s = sigma(x);
    // A series of identical values has no noise: any shift is real, so the penalty is tiny.
    let penalty = PENALTY * (s * s).max(f64::MIN_POSITIVE) * (n as f64).ln();
    let mut changes = Vec::new();
    split(x, 0, penalty, &mut changes);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(changes.iter().copied())
        .chain([n])
        .collect();
    let segs: Vec<(usize, usize, f64)> = bounds
        .windows(2)
        .map(|w| (w[0], w[1], mean(&x[w[0]..w[1]])))
        .collect();
    let reference = median(&x[n / 2..]).unwrap_or(0.0);
    let off = |m: f64| m / reference.max(f64::MIN_POSITIVE) - 1.0;
    let first = segs.iter().position(|g| off(g.2).abs() <= MIN_SHIFT);
    let from = first.map_or(n, |i| segs[i].0);
    let bursts: usize = first.map_or(0, |i| {
        segs[i..]
            .iter()
            .filter(|g| off(g.2).abs() > MIN_SHIFT)
            .map(|g| g.1 - g.0)
            .sum()
    });
    let steady_len = n - from;
    let shift = (from > 0 && from < n).then(|| mean(&x[from..]) / mean(&x[..from]) - 1.0);
    let shape = if (steady_len as f64) < STEADY_SHARE * n as f64
        || bursts as f64 >= STEADY_SHARE * steady_len as f64
    {
        Shape::NoSteadyState
    } else {
        match shift {
            None => Shape::Flat,
            Some(v) if v < 0.0 => Shape::Warmup,
            Some(_) => Shape::Slowdown,
        }
    };
    Some(Steady {
        shape,
        changes,
        from: from.min(n),
        shift,
        burst_share: (steady_len > 0).then(|| bursts as f64 / steady_len as f64),
    })
}

#[cfg(test)]
#[path = "changepoint_tests.rs"]
mod tests;
