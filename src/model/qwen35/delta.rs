//! The Gated DeltaNet layer's sequence mixing on the CPU, one sequence's tokens at a time, in
//! the recurrent form llama.cpp's CPU backend computes (`ggml_ssm_conv`, then its fused
//! `ggml_gated_delta_net`): a causal conv1d with SiLU over the mixed q/k/v channels, per-head
//! L2 normalization of q and k, then per value head the delta rule
//! `S ← e^g·S; S ← S + β·(v − S k) kᵀ; o = S q / √state`, and the output's RMSNorm gated by
//! `silu(z)`. Each sequence carries its conv window and state matrices between steps
//! ([`super::super::recurrent::LayerState`]), so a prompt split into chunks gives the result of
//! one chunk. Long runs of a prefill take the chunked form instead ([`super::chunked`]), which
//! computes the same per 64-token chunk with matrix products.

use std::ops::Range;

use rayon::prelude::*;

use super::super::recurrent::LayerState;
use super::chunked::Heads;

/// The shape of one Gated DeltaNet layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeltaDims {
    pub k_heads: usize,
    pub v_heads: usize,
    /// Size of a key head and of a value head.
    pub state: usize,
    pub kernel: usize,
    /// RMS epsilon (the L2 norms and the output norm).
    pub eps: f32,
}

impl DeltaDims {
    /// Conv channels: q and k of every key head, then v of every value head.
    pub(crate) fn channels(&self) -> usize {
        (2 * self.k_heads + self.v_heads) * self.state
    }
}

/// One sequence's inputs to the layer, `n` tokens.
pub(crate) struct SeqMix<'a> {
    /// The mixed projections before the conv, `[n, channels]`.
    pub mixed: &'a [f32],
    /// Log decay per token and value head, `[n, v_heads]` (≤ 0).
    pub g: &'a [f32],
    /// Write strength per token and value head, `[n, v_heads]`, in (0, 1).
    pub beta: &'a [f32],
}

/// The causal conv1d and SiLU over `x` (`[n, channels]`), continuing `window` (the previous
/// kernel − 1 inputs, oldest first), which then holds the last kernel − 1 inputs.
/// `w` is `[channels, kernel]`, its first tap applied to the oldest input. Also returns the
/// inputs the conv read (`[kernel − 1 + n, channels]`): the window after token t is its rows
/// t + 1 to t + kernel − 1.
pub(crate) fn conv_silu(
    x: &[f32],
    w: &[f32],
    window: &mut [f32],
    d: &DeltaDims,
) -> (Vec<f32>, Vec<f32>) {
    let (c, k) = (d.channels(), d.kernel);
    let n = x.len() / c;
    let mut input = Vec::with_capacity((k - 1 + n) * c);
    input.extend_from_slice(window);
    input.extend_from_slice(x);
    // Taps by position, `[kernel, channels]`, so the inner loop runs along the channels.
    let mut taps = vec![0f32; k * c];
    for (ch, row) in w.chunks_exact(k).enumerate() {
        for (i, tap) in row.iter().enumerate() {
            taps[i * c + ch] = *tap;
        }
    }
    let mut out = vec![0f32; n * c];
    for (t, row) in out.chunks_exact_mut(c).enumerate() {
        for (i, tap) in taps.chunks_exact(c).enumerate() {
            let x = &input[(t + i) * c..][..c];
            for ((o, x), w) in row.iter_mut().zip(x).zip(tap) {
                *o += x * w;
            }
        }
        row.iter_mut().for_each(|y| *y /= 1.0 + (-*y).exp());
    }
    window.copy_from_slice(&input[n * c..]);
    (out, input)
}

/// `x / sqrt(Σx² + eps)`, as llama.cpp's `build_gdn_l2_norm` (an RMSNorm with eps / n, scaled
/// by 1 / √n).
fn l2_normalize(x: &mut [f32], eps: f32) {
    let n = x.len() as f32;
    let sum: f64 = x.iter().map(|v| f64::from(v * v)).sum();
    let scale = 1.0 / ((sum as f32) / n + eps / n).sqrt() / n.sqrt();
    x.iter_mut().for_each(|v| *v *= scale);
}

/// Tokens from which a run of the delta rule takes the chunked form (shorter runs, decode and
/// verify steps, take the recurrent form).
const CHUNKED_FROM: usize = 32;

/// The layer's mixing for one sequence: conv, L2 norms, the delta rule per value head,
/// returning the attention output `[n, v_heads · state]` before the gated norm and the states
/// after each token of `at` (indices into the `n` tokens, ascending), and advancing `st`.
/// Runs of at least [`CHUNKED_FROM`] tokens between the tokens of `at` take the chunked form
/// ([`super::chunked`]), the rest the recurrent form.
pub(crate) fn mix(
    seq: &SeqMix,
    conv_w: &[f32],
    st: &mut LayerState,
    d: &DeltaDims,
    at: &[usize],
) -> (Vec<f32>, Vec<LayerState>) {
    let (conv, input) = conv_silu(seq.mixed, conv_w, &mut st.conv, d);
    let (c, s, hk, hv) = (d.channels(), d.state, d.k_heads, d.v_heads);
    let n = conv.len() / c;
    // q and k of every token, normalized per head: [n, hk, s] each.
    let mut q = Vec::with_capacity(n * hk * s);
    let mut k = Vec::with_capacity(n * hk * s);
    for row in conv.chunks_exact(c) {
        q.extend_from_slice(&row[..hk * s]);
        k.extend_from_slice(&row[hk * s..2 * hk * s]);
    }
    q.chunks_exact_mut(s).for_each(|h| l2_normalize(h, d.eps));
    k.chunks_exact_mut(s).for_each(|h| l2_normalize(h, d.eps));
    let x = Heads {
        q: &q,
        k: &k,
        conv: &conv,
        g: seq.g,
        beta: seq.beta,
    };
    let at: Vec<usize> = at.iter().copied().filter(|&t| t < n).collect();
    let mut out = vec![0f32; n * hv * s];
    let mut kept = Vec::with_capacity(at.len());
    for (range, chunked) in runs(n, &at) {
        let snaps: Vec<usize> = at.iter().copied().filter(|t| range.contains(t)).collect();
        if chunked {
            super::chunked::run(&x, d, range, &mut st.ssm, &mut out);
            kept.extend(snaps.iter().map(|_| st.ssm.clone()));
        } else {
            kept.extend(recurrent(&x, d, range, &snaps, &mut st.ssm, &mut out));
        }
    }
    let window = (d.kernel - 1) * c;
    let states = at
        .iter()
        .zip(kept)
        .map(|(&t, ssm)| LayerState {
            conv: input[(t + 1) * c..][..window].to_vec(),
            ssm,
        })
        .collect();
    (out, states)
}

/// Splits `n` tokens into runs, each true when it takes the chunked form: every token of `at`
/// ends a run (its state is kept); a stretch of at least [`CHUNKED_FROM`] tokens between them
/// is chunked, consecutive shorter ones make one recurrent run.
fn runs(n: usize, at: &[usize]) -> Vec<(Range<usize>, bool)> {
    let mut ends: Vec<usize> = at.iter().map(|t| t + 1).collect();
    ends.push(n);
    ends.dedup();
    let mut out: Vec<(Range<usize>, bool)> = Vec::new();
    let mut from = 0;
    for end in ends.into_iter().filter(|&e| e > 0) {
        let chunked = end - from >= CHUNKED_FROM;
        match out.last_mut() {
            Some((r, false)) if !chunked => r.end = end,
            _ => out.push((from..end, chunked)),
        }
        from = end;
    }
    out
}

/// The delta rule token by token over `range`, advancing `ssm` and writing the outputs into
/// `out`; returns the state after each token of `snaps` (ascending, inside `range`).
fn recurrent(
    x: &Heads,
    d: &DeltaDims,
    range: Range<usize>,
    snaps: &[usize],
    ssm: &mut [f32],
    out: &mut [f32],
) -> Vec<Vec<f32>> {
    let (c, s, hk, hv) = (d.channels(), d.state, d.k_heads, d.v_heads);
    let scale = 1.0 / (s as f32).sqrt();
    let len = range.len();
    let per_head: Vec<(Vec<f32>, Vec<f32>)> = ssm
        .par_chunks_mut(s * s)
        .enumerate()
        .map(|(h, m)| {
            let kh = h % hk;
            let mut o = vec![0f32; len * s];
            let mut kept = Vec::with_capacity(snaps.len() * s * s);
            let mut next = snaps.iter().peekable();
            for (i, t) in range.clone().enumerate() {
                let qt = &x.q[(t * hk + kh) * s..][..s];
                let kt = &x.k[(t * hk + kh) * s..][..s];
                let vt = &x.conv[t * c + 2 * hk * s + h * s..][..s];
                let decay = super::chunked::decay(x.g[t * hv + h]);
                let beta = x.beta[t * hv + h];
                // Row j of the state is value dimension j: each row is decayed, read against
                // k, written by its own delta and read against q while it sits in L1.
                for (j, row) in m.chunks_exact_mut(s).enumerate() {
                    let d = (vt[j] - decay_dot(row, decay, kt)) * beta;
                    o[i * s + j] = update_dot(row, kt, d, qt) * scale;
                }
                if next.next_if_eq(&&t).is_some() {
                    kept.extend_from_slice(m);
                }
            }
            (o, kept)
        })
        .collect();
    for (h, (o, _)) in per_head.iter().enumerate() {
        for (i, t) in range.clone().enumerate() {
            out[(t * hv + h) * s..][..s].copy_from_slice(&o[i * s..][..s]);
        }
    }
    (0..snaps.len())
        .map(|i| {
            per_head
                .iter()
                .flat_map(|(_, kept)| kept[i * s * s..][..s * s].iter().copied())
                .collect()
        })
        .collect()
}

/// Lanes of the row kernels' accumulators (one AVX register of f32; the compiler vectorizes
/// the fixed-width inner loops).
const LANES: usize = 8;

/// `row *= decay`, then `row · k`.
fn decay_dot(row: &mut [f32], decay: f32, k: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let tail = row.len() / LANES * LANES;
    for (r, kk) in row.chunks_exact_mut(LANES).zip(k.chunks_exact(LANES)) {
        for i in 0..LANES {
            r[i] *= decay;
            acc[i] += r[i] * kk[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, kk) in row[tail..].iter_mut().zip(&k[tail..]) {
        *x *= decay;
        sum += *x * kk;
    }
    sum
}

/// `row += d · k`, then `row · q`.
fn update_dot(row: &mut [f32], k: &[f32], d: f32, q: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let tail = row.len() / LANES * LANES;
    for ((r, kk), qq) in row
        .chunks_exact_mut(LANES)
        .zip(k.chunks_exact(LANES))
        .zip(q.chunks_exact(LANES))
    {
        for i in 0..LANES {
            r[i] += kk[i] * d;
            acc[i] += r[i] * qq[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for ((x, kk), qq) in row[tail..].iter_mut().zip(&k[tail..]).zip(&q[tail..]) {
        *x += kk * d;
        sum += *x * qq;
    }
    sum
}

/// The output's per-head RMSNorm (weight `norm`, `[state]`) times `silu(z)`, in place on `o`
/// (`[n, v_heads · state]`, as `z`).
pub(crate) fn gated_norm(o: &mut [f32], z: &[f32], norm: &[f32], eps: f32) {
    let s = norm.len();
    for (head, zh) in o.chunks_exact_mut(s).zip(z.chunks_exact(s)) {
        let mean: f64 = head.iter().map(|v| f64::from(v * v)).sum::<f64>() / s as f64;
        let scale = 1.0 / ((mean as f32) + eps).sqrt();
        for ((x, w), g) in head.iter_mut().zip(norm).zip(zh) {
            *x = *x * scale * w * (g / (1.0 + (-g).exp()));
        }
    }
}

/// `softplus(alpha + dt_bias) · a` per token and value head (`a` = −exp(A_log), as the file
/// stores it): the log decay. Softplus is linear above 20, as ggml's.
pub(crate) fn decay(alpha: &mut [f32], dt_bias: &[f32], a: &[f32]) {
    for row in alpha.chunks_exact_mut(a.len()) {
        for ((x, b), a) in row.iter_mut().zip(dt_bias).zip(a) {
            let y = *x + b;
            let sp = if y > 20.0 { y } else { y.exp().ln_1p() };
            *x = sp * a;
        }
    }
}

#[cfg(test)]
#[path = "delta_tests.rs"]
mod tests;
