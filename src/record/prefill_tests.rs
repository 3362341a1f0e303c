//! Unit tests of `crate::record::prefill`.

use super::*;

fn sample(ttft_s: f64, prefilled: usize) -> PrefillSample {
    PrefillSample {
        ttft_s,
        reused_tokens: 0,
        prefilled_tokens: prefilled,
        forward_s: ttft_s * 0.9,
        steps: 1,
    }
}

fn cell(length: usize, depth: usize, cached_pct: u32, ttfts: &[f64]) -> CellRecord {
    CellRecord {
        length,
        depth,
        cached_pct,
        chunk: 256,
        samples: ttfts.iter().map(|&t| sample(t, length)).collect(),
        skipped: None,
        sentinel: None,
        cold_start: None,
    }
}

fn record(cells: Vec<CellRecord>) -> PrefillRecord {
    PrefillRecord {
        seed: 1,
        lengths: vec![],
        depths: vec![0],
        cached_pct: vec![0],
        chunks: vec![256],
        samples: 3,
        warmup: 1,
        cold_start: false,
        prompts: None,
        cells,
    }
}

#[test]
fn the_fit_is_exact_on_a_planted_quadratic() {
    let (a, b, c) = (0.02, 4e-3, 5e-7);
    let cells = [128, 512, 2048, 8192]
        .iter()
        .map(|&n| {
            let t = a + b * n as f64 + c * (n * n) as f64;
            // The median is the planted value; the others straddle it.
            cell(n, 0, 0, &[t * 1.1, t, t * 0.95])
        })
        .collect();
    let fit = record(cells).fit(256).unwrap();
    assert!((fit.a - a).abs() < 1e-9, "{fit:?}");
    assert!((fit.b - b).abs() < 1e-12, "{fit:?}");
    assert!((fit.c - c).abs() < 1e-15, "{fit:?}");
    assert_eq!((fit.n_max, fit.points), (8192, 4));
    let s = fit.shares().unwrap();
    let n = 8192.0;
    let total = a + b * n + c * n * n;
    assert!((s[2] - c * n * n / total).abs() < 1e-9);
    assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

#[test]
fn the_fit_reads_only_cold_depth_zero_cells_and_needs_three_lengths() {
    let mut cells = vec![cell(128, 0, 0, &[0.1]), cell(512, 0, 0, &[0.4])];
    // Cached and deep cells are other curves: they must not complete the fit.
    cells.push(cell(2048, 0, 90, &[0.3]));
    cells.push(cell(2048, 1024, 0, &[2.0]));
    assert_eq!(record(cells.clone()).fit(256), None);
    cells.push(cell(2048, 0, 0, &[1.7]));
    assert!(record(cells).fit(256).is_some());
}

#[test]
fn a_negative_term_has_no_share() {
    // Falling time per token: the fitted quadratic term is negative.
    let cells = vec![
        cell(100, 0, 0, &[1.0]),
        cell(200, 0, 0, &[1.8]),
        cell(400, 0, 0, &[2.6]),
    ];
    let fit = record(cells).fit(256).unwrap();
    assert!(fit.c < 0.0);
    assert_eq!(fit.shares(), None);
}

#[test]
fn cell_figures_are_medians_and_never_a_rate_from_zero() {
    let mut c = cell(512, 0, 0, &[0.5, 0.25, 1.0]);
    assert_eq!(c.ttft_median(), Some(0.5));
    assert_eq!(c.ttft_range(), Some((0.25, 1.0)));
    assert_eq!(c.tok_s_median(), Some(1024.0));
    c.samples = vec![sample(0.0, 512)];
    assert_eq!(c.tok_s_median(), None);
    c.samples.clear();
    assert_eq!(c.ttft_median(), None);
}
