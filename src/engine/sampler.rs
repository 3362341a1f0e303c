//! Picking the next token from logits: greedy (argmax, lowest id on ties) by default, or
//! temperature / top-k / top-p sampling driven by a seeded RNG so runs are reproducible.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::SamplingConfig;

/// A sampler with its own RNG stream (one per sequence keeps batched runs reproducible).
pub(crate) struct Sampler {
    cfg: SamplingConfig,
    rng: StdRng,
}

impl Sampler {
    pub(crate) fn new(cfg: &SamplingConfig) -> Self {
        Self {
            cfg: cfg.clone(),
            rng: StdRng::seed_from_u64(cfg.seed),
        }
    }

    /// The next token for these logits.
    pub(crate) fn sample(&mut self, logits: &[f32]) -> u32 {
        let u = if self.cfg.temperature > 0.0 {
            self.rng.random::<f64>()
        } else {
            0.0
        };
        sample(logits, &self.cfg, u)
    }
}

impl Sampler {
    /// Whether tokens are drawn (temperature above 0) rather than picked greedily.
    pub(crate) fn draws(&self) -> bool {
        self.cfg.temperature > 0.0
    }

    /// The distribution this sampler draws from for `logits` (after temperature, top-k and
    /// top-p), dense over the vocabulary and summing to 1.
    pub(crate) fn probs(&self, logits: &[f32]) -> Vec<f64> {
        let cand = candidates(logits, &self.cfg);
        let total: f64 = cand.iter().map(|c| c.1).sum();
        let mut p = vec![0.0; logits.len()];
        if total > 0.0 {
            for (id, w) in cand {
                p[id as usize] = w / total;
            }
        } else {
            p[argmax(logits) as usize] = 1.0;
        }
        p
    }

    /// One uniform draw from [0, 1) of this sampler's stream.
    pub(crate) fn uniform(&mut self) -> f64 {
        self.rng.random::<f64>()
    }
}

/// Pure sampling: `u` in [0, 1) is the uniform draw (ignored when greedy).
pub(crate) fn sample(logits: &[f32], cfg: &SamplingConfig, u: f64) -> u32 {
    if cfg.temperature <= 0.0 {
        return argmax(logits);
    }
    let mut cand = candidates(logits, cfg);
    let total: f64 = cand.iter().map(|c| c.1).sum();
    let mut acc = 0.0;
    let target = u * total;
    for &(id, p) in &cand {
        acc += p;
        if target < acc {
            return id;
        }
    }
    cand.pop().map(|c| c.0).unwrap_or_else(|| argmax(logits))
}

/// Index of the largest logit; the lowest index wins ties; NaN never wins.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    best as u32
}

/// Tokens left after temperature, top-k and top-p, with unnormalised probabilities, most
/// likely first.
fn candidates(logits: &[f32], cfg: &SamplingConfig) -> Vec<(u32, f64)> {
    let max = logits
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut cand: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .map(|(i, &v)| (i as u32, ((v as f64 - max) / cfg.temperature).exp()))
        .collect();
    cand.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if cfg.top_k > 0 {
        cand.truncate(cfg.top_k);
    }
    if cfg.top_p < 1.0 {
        let total: f64 = cand.iter().map(|c| c.1).sum();
        let mut acc = 0.0;
        let keep = cand.iter().position(|c| {
            acc += c.1 / total;
            acc >= cfg.top_p
        });
        if let Some(k) = keep {
            cand.truncate(k + 1);
        }
    }
    cand
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(temperature: f64, top_k: usize, top_p: f64) -> SamplingConfig {
        SamplingConfig {
            temperature,
            top_k,
            top_p,
            seed: 7,
        }
    }

    #[test]
    fn greedy_is_argmax_lowest_on_ties_and_skips_nan() {
        assert_eq!(sample(&[0.1, 3.0, 3.0, -1.0], &cfg(0.0, 0, 1.0), 0.99), 1);
        assert_eq!(argmax(&[f32::NAN, -5.0, -4.0]), 2);
    }

    #[test]
    fn top_k_one_is_greedy_whatever_the_draw() {
        for u in [0.0, 0.3, 0.999] {
            assert_eq!(sample(&[1.0, 5.0, 2.0], &cfg(1.0, 1, 1.0), u), 1);
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_covering_set() {
        // probabilities ≈ [0.665, 0.245, 0.090] at temperature 1.
        let logits = [2.0, 1.0, 0.0];
        let c = candidates(&logits, &cfg(1.0, 0, 0.8));
        assert_eq!(c.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1]);
        // Draws land in proportion: u near 1 picks the second kept token, never the third.
        assert_eq!(sample(&logits, &cfg(1.0, 0, 0.8), 0.999), 1);
        assert_eq!(sample(&logits, &cfg(1.0, 0, 0.8), 0.0), 0);
    }

    #[test]
    fn temperature_sampling_follows_the_distribution() {
        let logits = [0.0f32, (3.0f32).ln()]; // p = [0.25, 0.75]
        let mut s = Sampler::new(&cfg(1.0, 0, 1.0));
        let ones = (0..4000).filter(|_| s.sample(&logits) == 1).count();
        assert!(
            (2800..3200).contains(&ones),
            "{ones} of 4000 draws picked p=0.75"
        );
    }

    #[test]
    fn same_seed_same_stream() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32 * 0.3).collect();
        let run = || {
            let mut s = Sampler::new(&cfg(0.8, 20, 0.95));
            (0..30).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
