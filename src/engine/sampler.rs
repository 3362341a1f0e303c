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

/// The greedy pick (one function for the sampler and the drafters, in `model` so `spec` needs
/// no import of `engine`).
pub use crate::model::vmath::argmax;

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
#[path = "sampler_tests.rs"]
mod tests;
