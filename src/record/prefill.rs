//! The record of a `tokfire prefill`: the grid asked for (prompt lengths, depths, cached
//! shares, prefill chunks), the seed of the generated prompts, and every measured sample of
//! every cell. What is derived — a cell's median and spread, its prefill rate, the cost model
//! `TTFT ≈ a + b·n + c·n²` fitted over the lengths — is computed here (pure), not stored twice.

use serde::{Deserialize, Serialize};

use crate::measure::sentinel::RoundSentinel;
use crate::measure::stats;

/// Everything a prefill run keeps beside the run's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillRecord {
    /// Seed of the generated prompts (token ids drawn from the model's vocabulary).
    pub seed: u64,
    /// The grid as asked: new prompt tokens, tokens already in the context, the percentage of
    /// the new prompt held in the prefix cache, and prefill chunk sizes.
    pub lengths: Vec<usize>,
    pub depths: Vec<usize>,
    pub cached_pct: Vec<u32>,
    pub chunks: Vec<usize>,
    /// Measured samples per cell, after `warmup` unrecorded ones.
    pub samples: usize,
    pub warmup: usize,
    /// `--prompts`: the workload (`name@version`) the prompt tokens were cut from; none when
    /// they were drawn from the vocabulary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
    /// `--cold-start`: cells at depth 0, nothing cached, also timed a fresh process's start.
    #[serde(default)]
    pub cold_start: bool,
    /// The cells as run, in grid order (a stopped run keeps those it finished).
    pub cells: Vec<CellRecord>,
}

/// One point of the grid and its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    /// New prompt tokens (llama-bench's `-p`).
    pub length: usize,
    /// Tokens of an earlier turn already in the context (llama-bench's `-d`), held in the
    /// prefix cache and copied into the sequence's KV cache, not prefilled.
    pub depth: usize,
    /// Percentage of the new prompt asked to be in the prefix cache (whole 16-token blocks
    /// are; the samples say how many tokens were).
    pub cached_pct: u32,
    /// `--prefill-chunk`: most prompt tokens of the sequence in one forward.
    pub chunk: usize,
    pub samples: Vec<PrefillSample>,
    /// Why the cell has no samples, when it was not run (past the model's context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// What else the machine did while the cell ran (the OS's counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<RoundSentinel>,
    /// `--cold-start`: a fresh process's start on the cell's first measured prompt (the model
    /// file in the page cache): spawn → loaded → warm → first token, or why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<Box<crate::record::cold::StartRecord>>,
}

/// One measured request: depth + length tokens submitted, one token generated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrefillSample {
    /// Submission → first token: restoring cached rows, the prefill forwards, the first
    /// sample (the same TTFT as every other verb's).
    pub ttft_s: f64,
    /// Tokens copied from the prefix cache (the depth and the cached share of the prompt).
    pub reused_tokens: usize,
    /// Tokens the forwards computed (submitted − reused).
    pub prefilled_tokens: usize,
    /// Wall time of the forward passes alone, seconds.
    pub forward_s: f64,
    /// Forward passes (steps) the prefill took.
    pub steps: usize,
}

impl CellRecord {
    fn ttfts(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.ttft_s).collect()
    }

    /// Median TTFT, seconds.
    pub fn ttft_median(&self) -> Option<f64> {
        stats::median(&self.ttfts())
    }

    /// Fastest and slowest TTFT, seconds.
    pub fn ttft_range(&self) -> Option<(f64, f64)> {
        let t = self.ttfts();
        Some((stats::min(&t)?, stats::max(&t)?))
    }

    /// Median prefill rate: computed tokens ÷ TTFT, per sample (llama-bench's `pp` t/s, with
    /// restoring cached rows and the first sample inside the interval); none from a zero one.
    pub fn tok_s_median(&self) -> Option<f64> {
        let rates: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.ttft_s > 0.0)
            .map(|s| s.prefilled_tokens as f64 / s.ttft_s)
            .collect();
        stats::median(&rates)
    }

    /// Median of the tokens reused from the prefix cache (equal in every sample of a cell).
    pub fn reused_median(&self) -> Option<usize> {
        let v: Vec<f64> = self
            .samples
            .iter()
            .map(|s| s.reused_tokens as f64)
            .collect();
        stats::median(&v).map(|x| x as usize)
    }
}

/// `TTFT ≈ a + b·n + c·n²` over the cold, depth-0 cells of one chunk size (least squares on
/// their median TTFTs), and each term's share at the largest length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostFit {
    /// Seconds, seconds per token, seconds per token².
    pub a: f64,
    pub b: f64,
    pub c: f64,
    /// The largest length fitted.
    pub n_max: usize,
    /// Lengths (points) fitted.
    pub points: usize,
}

impl CostFit {
    /// The fit at `n` tokens, seconds.
    pub fn at(&self, n: f64) -> f64 {
        self.a + self.b * n + self.c * n * n
    }

    /// Shares of the fixed, linear and quadratic terms at the largest length (they sum to 1);
    /// none when a term came out negative (the noise is larger than that term) or the fit is 0.
    pub fn shares(&self) -> Option<[f64; 3]> {
        let n = self.n_max as f64;
        let terms = [self.a, self.b * n, self.c * n * n];
        let total: f64 = terms.iter().sum();
        if terms.iter().any(|t| *t < 0.0) || total <= 0.0 {
            return None;
        }
        Some(terms.map(|t| t / total))
    }
}

impl PrefillRecord {
    /// The cost model over the cold, depth-0 cells of `chunk` with samples: none with fewer
    /// than three distinct lengths (three unknowns).
    pub fn fit(&self, chunk: usize) -> Option<CostFit> {
        let points: Vec<(f64, f64)> = self
            .cells
            .iter()
            .filter(|c| c.depth == 0 && c.cached_pct == 0 && c.chunk == chunk)
            .filter_map(|c| Some((c.length as f64, c.ttft_median()?)))
            .collect();
        let (a, b, c) = quadratic_fit(&points)?;
        Some(CostFit {
            a,
            b,
            c,
            n_max: points.iter().map(|p| p.0 as usize).max()?,
            points: points.len(),
        })
    }
}

/// Least squares `y ≈ a + b·x + c·x²`: none with fewer than three distinct `x` or a singular
/// system. `x` is scaled to its largest value first, so 8192² does not swamp the normal
/// equations.
pub fn quadratic_fit(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let mut xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let scale = *xs.last()?;
    if xs.len() < 3 || scale <= 0.0 {
        return None;
    }
    // Normal equations M·[a b c] = v over u = x / scale.
    let mut m = [[0.0f64; 3]; 3];
    let mut v = [0.0f64; 3];
    for &(x, y) in points {
        let u = x / scale;
        let pow = [1.0, u, u * u];
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += pow[i] * pow[j];
            }
            v[i] += pow[i] * y;
        }
    }
    let [a, b, c] = solve3(m, v)?;
    Some((a, b / scale, c / (scale * scale)))
}

/// Gaussian elimination with partial pivoting on a 3×3 system.
fn solve3(mut m: [[f64; 3]; 3], mut v: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        for row in col + 1..3 {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (x, p) in m[row].iter_mut().zip(pivot_row).skip(col) {
                *x -= f * p;
            }
            v[row] -= f * v[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let rest: f64 = (row + 1..3).map(|k| m[row][k] * x[k]).sum();
        x[row] = (v[row] - rest) / m[row][row];
    }
    x.iter().all(|t| t.is_finite()).then_some(x)
}

#[cfg(test)]
#[path = "prefill_tests.rs"]
mod tests;
