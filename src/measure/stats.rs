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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(max(&[1.0, 9.0, 3.0]), Some(9.0));
        assert_eq!(min(&[4.0, 9.0, 3.0]), Some(3.0));
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some(1.0));
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn percentile_nearest_rank_and_tail() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 95.0), Some(19.0));
        assert_eq!(percentile(&v, 100.0), Some(20.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(tail(&v), Some((19.0, "p95")));
        assert_eq!(tail(&[3.0, 1.0, 2.0]), Some((3.0, "slowest")));
        assert_eq!(tail(&[]), None);
    }
}
