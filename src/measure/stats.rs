//! Small pure statistics over raw samples. Every function sorts its own copy, so callers keep
//! their samples in the order they were taken. Median as the midpoint of the two central values
//! for even counts (the usual definition, as in hyperfine's `statistics.rs`).

/// The median, or `None` for no samples. NaN samples are ignored.
pub fn median(samples: &[f64]) -> Option<f64> {
    let v = sorted(samples);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The median of samples given as (value, how many times), or `None` when the counts sum to
/// 0; the same as [`median`] of the expanded list, without expanding it. NaN values ignored.
pub fn weighted_median(samples: &[(f64, u64)]) -> Option<f64> {
    let mut v: Vec<(f64, u64)> = (samples.iter().copied())
        .filter(|(x, n)| !x.is_nan() && *n > 0)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u128 = v.iter().map(|s| u128::from(s.1)).sum();
    // The value at 0-based rank r of the expanded list.
    let at = |r: u128| {
        let mut seen = 0u128;
        v.iter().find(|s| {
            seen += u128::from(s.1);
            seen > r
        })
    };
    match total {
        0 => None,
        t if t % 2 == 1 => at(t / 2).map(|s| s.0),
        t => Some((at(t / 2 - 1)?.0 + at(t / 2)?.0) / 2.0),
    }
}

/// The smallest sample, or `None`.
pub fn min(samples: &[f64]) -> Option<f64> {
    sorted(samples).first().copied()
}

/// The largest sample, or `None`.
pub fn max(samples: &[f64]) -> Option<f64> {
    sorted(samples).last().copied()
}

/// The nearest-rank percentile `p` (0..=100), or `None`. Only meaningful with enough samples:
/// callers show the slowest sample instead below [`MIN_FOR_P95`] samples.
pub(crate) fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    let v = sorted(samples);
    if v.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v.get(rank.min(v.len()) - 1).copied()
}

/// Fewer samples than this get "slowest" rather than a p95.
pub(crate) const MIN_FOR_P95: usize = 20;

/// The tail of a sample set: p95 with enough samples, else the slowest (largest) sample.
pub(crate) fn tail(samples: &[f64]) -> Option<(f64, &'static str)> {
    if samples.len() >= MIN_FOR_P95 {
        percentile(samples, 95.0).map(|v| (v, "p95"))
    } else {
        max(samples).map(|v| (v, "slowest"))
    }
}

/// The median absolute deviation from the median, or `None` for no samples (a spread that a
/// few outliers do not move; × 1.4826 estimates σ for normal data, as in hyperfine's
/// `outlier_detection.rs`).
pub(crate) fn mad(samples: &[f64]) -> Option<f64> {
    let m = median(samples)?;
    let dev: Vec<f64> = samples.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error below 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let t = x + 7.5;
    let s: f64 = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// The regularised incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes
/// §6.4).
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    let cf = |x: f64, a: f64, b: f64| {
        let tiny = 1e-300;
        let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
        d = 1.0 / if d.abs() < tiny { tiny } else { d };
        let mut h = d;
        for m in 1..300 {
            let m = m as f64;
            for num in [
                m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
                -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
            ] {
                d = 1.0 + num * d;
                d = 1.0 / if d.abs() < tiny { tiny } else { d };
                c = 1.0 + num / c;
                c = if c.abs() < tiny { tiny } else { c };
                h *= d * c;
            }
            if (d * c - 1.0).abs() < 1e-12 {
                break;
            }
        }
        h
    };
    if x < (a + 1.0) / (a + b + 2.0) {
        front * cf(x, a, b) / a
    } else {
        1.0 - front * cf(1.0 - x, b, a) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * inc_beta(df / (df + t * t), df / 2.0, 0.5);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (bisection on [`t_cdf`]).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (-1e6, 1e6);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Holm's step-down procedure: which of the p-values are rejected at family-wise level
/// `alpha` (Holm 1979). Same order as `p`.
pub fn holm(p: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![false; p.len()];
    for (rank, &i) in order.iter().enumerate() {
        if p[i] > alpha / (p.len() - rank) as f64 {
            break;
        }
        out[i] = true;
    }
    out
}

#[cfg(test)]
mod distribution_tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_table() {
        for (df, want) in [(1.0, 12.706), (4.0, 2.776), (9.0, 2.262), (30.0, 2.042)] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 2e-3, "df {df}: {got} vs {want}");
        }
        assert!((t_quantile(0.995, 4.0) - 4.604).abs() < 2e-3);
        assert!(t_quantile(0.5, 7.0).abs() < 1e-6);
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_keep() {
        assert_eq!(
            holm(&[0.01, 0.04, 0.03, 0.2], 0.05),
            [true, false, false, false]
        );
        assert_eq!(holm(&[0.001, 0.012, 0.02], 0.05), [true, true, true]);
        assert_eq!(holm(&[0.3], 0.05), [false]);
        assert!(holm(&[], 0.05).is_empty());
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
