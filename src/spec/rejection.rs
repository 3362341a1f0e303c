//! The sampled acceptance rule of speculative decoding (Leviathan, Kalman and Matias 2023, "Fast
//! Inference from Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating Large
//! Language Model Decoding with Speculative Sampling"): draft token dᵢ drawn from the drafter's
//! distribution qᵢ is kept with probability min(1, pᵢ(dᵢ) / qᵢ(dᵢ)), pᵢ being the target's; the
//! first rejected position is resampled from the normalised max(0, pᵢ − qᵢ); when every draft
//! is kept, one more token is drawn from p_k. Each output token is then distributed exactly as
//! the target's own sampling would have drawn it. A drafter that proposes deterministically
//! (prompt lookup, a greedy draft model) has a point mass for qᵢ. Pure: the uniform draws come
//! from the caller, so it is tested alone.

/// The drafter's distribution at each draft position.
#[derive(Debug, Clone, Copy)]
pub enum DraftDist<'a> {
    /// The drafter chose each token with certainty (qᵢ is a point mass at dᵢ).
    Certain,
    /// qᵢ over the vocabulary, one row per draft position (rows sum to 1).
    Probs(&'a [Vec<f64>]),
}

/// `draft` holds d₁..d_k; `p` the target's distributions after each fed position (`p[0]`
/// follows the sequence's last known token, `p[i]` follows dᵢ), so `p` has `k + 1` rows summing
/// to 1. `uniform` yields independent draws from [0, 1). Returns the kept drafts followed by
/// one token drawn by the rule: at least one token, at most `k + 1`.
pub fn accept_sampled(
    draft: &[u32],
    q: DraftDist<'_>,
    p: &[Vec<f64>],
    uniform: &mut dyn FnMut() -> f64,
) -> Vec<u32> {
    debug_assert_eq!(
        p.len(),
        draft.len() + 1,
        "one target row per fed position; this is a bug"
    );
    let mut out = Vec::with_capacity(draft.len() + 1);
    for (i, &d) in draft.iter().enumerate() {
        let pd = p[i].get(d as usize).copied().unwrap_or(0.0);
        let qd = match q {
            DraftDist::Certain => 1.0,
            DraftDist::Probs(q) => q[i].get(d as usize).copied().unwrap_or(0.0),
        };
        // qd == 0 cannot be drawn by the drafter; treat it as certain acceptance of nothing.
        let keep = qd > 0.0 && uniform() < (pd / qd).min(1.0);
        if keep {
            out.push(d);
            continue;
        }
        let residual: Vec<f64> = match q {
            DraftDist::Certain => p[i]
                .iter()
                .enumerate()
                .map(|(t, &v)| if t == d as usize { 0.0 } else { v })
                .collect(),
            DraftDist::Probs(q) => p[i]
                .iter()
                .zip(&q[i])
                .map(|(&a, &b)| (a - b).max(0.0))
                .collect(),
        };
        out.push(draw(&residual, uniform()).unwrap_or_else(|| {
            draw(&p[i], uniform()).expect("the target's row has mass; this is a bug")
        }));
        return out;
    }
    let last = &p[draft.len()];
    out.push(draw(last, uniform()).expect("the target's row has mass; this is a bug"));
    out
}

/// The token at which the cumulative weight passes `u` × total (none when the total is 0).
pub fn draw(weights: &[f64], u: f64) -> Option<u32> {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || total.is_nan() {
        return None;
    }
    let target = u * total;
    let mut acc = 0.0;
    let mut last = None;
    for (t, &w) in weights.iter().enumerate() {
        if w <= 0.0 {
            continue;
        }
        acc += w;
        last = Some(t as u32);
        if target < acc {
            return last;
        }
    }
    last
}

#[cfg(test)]
#[path = "rejection_tests.rs"]
mod tests;
