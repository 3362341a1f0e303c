use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::model::recurrent::LayerState;

fn dims() -> DeltaDims {
    DeltaDims {
        k_heads: 2,
        v_heads: 4,
        state: 5,
        kernel: 4,
        eps: 1e-6,
    }
}

fn random(n: usize, rng: &mut StdRng, range: std::ops::Range<f32>) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(range.clone())).collect()
}

fn fresh(d: &DeltaDims) -> LayerState {
    LayerState {
        conv: vec![0.0; (d.kernel - 1) * d.channels()],
        ssm: vec![0.0; d.v_heads * d.state * d.state],
    }
}

/// The layer in f64 with the state as an explicit matrix `S[v][k]`, written from the delta
/// rule's definition: the reference the slice code must equal.
fn reference(mixed: &[f32], g: &[f32], beta: &[f32], w: &[f32], d: &DeltaDims) -> Vec<f64> {
    let (c, s, hk, hv, k) = (d.channels(), d.state, d.k_heads, d.v_heads, d.kernel);
    let n = mixed.len() / c;
    let x = |t: isize, ch: usize| match t < 0 {
        true => 0.0,
        false => f64::from(mixed[t as usize * c + ch]),
    };
    let conv: Vec<Vec<f64>> = (0..n)
        .map(|t| {
            (0..c)
                .map(|ch| {
                    let y: f64 = (0..k)
                        .map(|i| {
                            x(t as isize - (k - 1 - i) as isize, ch) * f64::from(w[ch * k + i])
                        })
                        .sum();
                    y / (1.0 + (-y).exp())
                })
                .collect()
        })
        .collect();
    let unit = |v: &[f64]| {
        let norm = (v.iter().map(|x| x * x).sum::<f64>() + f64::from(d.eps)).sqrt();
        v.iter().map(|x| x / norm).collect::<Vec<f64>>()
    };
    let mut out = vec![0f64; n * hv * s];
    for h in 0..hv {
        let kh = h % hk;
        let mut m = vec![vec![0f64; s]; s];
        for t in 0..n {
            let q = unit(&conv[t][kh * s..][..s]);
            let kk = unit(&conv[t][hk * s + kh * s..][..s]);
            let v = &conv[t][2 * hk * s + h * s..][..s];
            let decay = f64::from(g[t * hv + h]).exp();
            let b = f64::from(beta[t * hv + h]);
            for row in m.iter_mut() {
                row.iter_mut().for_each(|x| *x *= decay);
            }
            let sk: Vec<f64> = m
                .iter()
                .map(|row| row.iter().zip(&kk).map(|(a, b)| a * b).sum())
                .collect();
            for j in 0..s {
                for i in 0..s {
                    m[j][i] += b * (v[j] - sk[j]) * kk[i];
                }
            }
            for j in 0..s {
                let o: f64 = m[j].iter().zip(&q).map(|(a, b)| a * b).sum();
                out[(t * hv + h) * s + j] = o / (s as f64).sqrt();
            }
        }
    }
    out
}

/// All the inputs as one sequence's mix.
fn all_tokens<'a>(mixed: &'a [f32], g: &'a [f32], beta: &'a [f32]) -> SeqMix<'a> {
    SeqMix { mixed, g, beta }
}

/// Tokens `r` of the inputs as one sequence's mix.
fn tokens<'a>(
    mixed: &'a [f32],
    g: &'a [f32],
    beta: &'a [f32],
    d: &DeltaDims,
    r: std::ops::Range<usize>,
) -> SeqMix<'a> {
    let (c, hv) = (d.channels(), d.v_heads);
    SeqMix {
        mixed: &mixed[r.start * c..r.end * c],
        g: &g[r.start * hv..r.end * hv],
        beta: &beta[r.start * hv..r.end * hv],
    }
}

fn inputs(n: usize, seed: u64, d: &DeltaDims) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mixed = random(n * d.channels(), &mut rng, -1.5..1.5);
    let g = random(n * d.v_heads, &mut rng, -1.0..-0.01);
    let beta = random(n * d.v_heads, &mut rng, 0.05..0.95);
    let w = random(d.channels() * d.kernel, &mut rng, -0.8..0.8);
    (mixed, g, beta, w)
}

#[test]
fn the_delta_rule_equals_its_definition_in_f64() {
    let d = dims();
    let (mixed, g, beta, w) = inputs(9, 3, &d);
    let mut st = fresh(&d);
    let seq = all_tokens(&mixed, &g, &beta);
    let (ours, _) = mix(&seq, &w, &mut st, &d, &[]);
    let want = reference(&mixed, &g, &beta, &w, &d);
    let worst = ours
        .iter()
        .zip(&want)
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-5, "largest difference {worst}");
}

#[test]
fn a_sequence_in_chunks_gives_the_one_chunk_result_and_state() {
    let d = dims();
    let n = 11;
    let (mixed, g, beta, w) = inputs(n, 4, &d);
    let mut whole = fresh(&d);
    let seq = all_tokens(&mixed, &g, &beta);
    let (one, _) = mix(&seq, &w, &mut whole, &d, &[]);
    let mut parts = fresh(&d);
    let mut out = Vec::new();
    for (a, b) in [(0, 1), (1, 2), (2, 7), (7, 11)] {
        let seq = tokens(&mixed, &g, &beta, &d, a..b);
        out.extend(mix(&seq, &w, &mut parts, &d, &[]).0);
    }
    assert_eq!(out, one, "outputs");
    assert_eq!(parts, whole, "state after the last token");
}

#[test]
fn decay_is_softplus_times_a_and_linear_past_20() {
    let mut alpha = vec![0.0, 30.0, -3.0];
    decay(&mut alpha, &[0.5, 0.0, 1.0], &[-2.0, -1.0, -0.5]);
    let sp = |x: f32| x.exp().ln_1p();
    assert!((alpha[0] - sp(0.5) * -2.0).abs() < 1e-6);
    assert_eq!(alpha[1], -30.0);
    assert!((alpha[2] - sp(-2.0) * -0.5).abs() < 1e-6);
}

#[test]
fn the_gated_norm_normalizes_each_head_and_gates_it() {
    let mut o = vec![3.0, 4.0, 0.0, 2.0];
    let z = vec![0.0, 50.0, 1.0, 1.0];
    gated_norm(&mut o, &z, &[1.0, 2.0], 0.0);
    // Head 0: rms 5/√2; silu(0) = 0, silu(50) ≈ 50.
    assert_eq!(o[0], 0.0);
    assert!((o[1] - 4.0 / (12.5f32).sqrt() * 2.0 * 50.0).abs() < 1e-3);
    // Head 1: rms √2, silu(1) on both.
    let silu1 = 1.0 / (1.0 + (-1.0f32).exp());
    assert!((o[3] - 2.0 / 2f32.sqrt() * 2.0 * silu1).abs() < 1e-6);
}

#[test]
fn the_snapshots_are_the_states_after_the_tokens_asked() {
    let d = dims();
    let n = 7;
    let (mixed, g, beta, w) = inputs(n, 5, &d);
    let mut st = fresh(&d);
    let seq = all_tokens(&mixed, &g, &beta);
    // An early token (a prefix cache's block end) and the last three (rollback).
    let at = [1, n - 3, n - 2, n - 1];
    let (_, snaps) = mix(&seq, &w, &mut st, &d, &at);
    assert_eq!(snaps.len(), at.len());
    assert_eq!(
        snaps[3], st,
        "the last snapshot is the state after the step"
    );
    for (i, len) in at.iter().map(|t| t + 1).enumerate() {
        let mut alone = fresh(&d);
        let seq = tokens(&mixed, &g, &beta, &d, 0..len);
        mix(&seq, &w, &mut alone, &d, &[]);
        assert_eq!(snaps[i], alone, "the state after {len} tokens");
    }
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max)
}

#[test]
fn runs_end_at_every_snapshot_and_chunk_only_long_stretches() {
    assert_eq!(runs(20, &[]), [(0..20, false)]);
    assert_eq!(runs(200, &[]), [(0..200, true)]);
    // A prefix cache's block end at 64, then rollback snapshots after the last three tokens.
    assert_eq!(
        runs(200, &[63, 196, 197, 198, 199]),
        [(0..64, true), (64..197, true), (197..200, false)]
    );
    // Short stretches between snapshots merge into one recurrent run.
    assert_eq!(runs(40, &[3, 9, 20]), [(0..40, false)]);
    assert_eq!(runs(5, &[4]), [(0..5, false)]);
}

#[test]
fn the_chunked_form_equals_the_definition_and_the_recurrent_form() {
    // Odd sizes: a state of 7, 3 key heads under 6 value heads; 150 tokens = two whole chunks
    // and a part.
    let d = DeltaDims {
        k_heads: 3,
        v_heads: 6,
        state: 7,
        kernel: 4,
        eps: 1e-6,
    };
    let n = 150;
    let (mixed, g, beta, w) = inputs(n, 8, &d);
    let seq = all_tokens(&mixed, &g, &beta);
    let mut st = fresh(&d);
    let (ours, _) = mix(&seq, &w, &mut st, &d, &[]);
    let want = reference(&mixed, &g, &beta, &w, &d);
    let diff = ours
        .iter()
        .zip(&want)
        .map(|(a, b)| (f64::from(*a) - b).abs())
        .fold(0.0, f64::max);
    assert!(
        diff < 2e-5,
        "chunked against f64: largest difference {diff}"
    );
    // The recurrent form, one token at a time, ends in the same state.
    let mut by_token = fresh(&d);
    let mut out = Vec::new();
    for t in 0..n {
        let one = tokens(&mixed, &g, &beta, &d, t..t + 1);
        out.extend(mix(&one, &w, &mut by_token, &d, &[]).0);
    }
    assert!(worst(&out, &ours) < 2e-5, "outputs {}", worst(&out, &ours));
    assert!(
        worst(&st.ssm, &by_token.ssm) < 2e-5,
        "state {}",
        worst(&st.ssm, &by_token.ssm)
    );
    assert_eq!(
        st.conv, by_token.conv,
        "the conv window does not depend on the form"
    );
}

#[test]
fn chunked_runs_keep_the_states_asked_for() {
    let d = dims();
    let n = 130;
    let (mixed, g, beta, w) = inputs(n, 9, &d);
    let seq = all_tokens(&mixed, &g, &beta);
    let at = [47, 95, 127, 128, 129];
    let mut st = fresh(&d);
    let (_, snaps) = mix(&seq, &w, &mut st, &d, &at);
    assert_eq!(snaps.len(), at.len());
    for (snap, t) in snaps.iter().zip(at) {
        let len = t + 1;
        let mut alone = fresh(&d);
        let seq = tokens(&mixed, &g, &beta, &d, 0..len);
        mix(&seq, &w, &mut alone, &d, &[]);
        assert_eq!(snap.conv, alone.conv, "conv window after {len} tokens");
        let diff = worst(&snap.ssm, &alone.ssm);
        assert!(diff < 2e-5, "state after {len} tokens: {diff}");
    }
}

/// Times the two forms on Qwen3.5-0.8B's shape (`cargo test --release -- --ignored
/// time_the_forms --nocapture`): a benchmark aid, not a test.
#[test]
#[ignore = "prints timings"]
fn time_the_forms() {
    let d = DeltaDims {
        k_heads: 16,
        v_heads: 16,
        state: 128,
        kernel: 4,
        eps: 1e-6,
    };
    for n in [64, 256, 256, 256] {
        let (mixed, g, beta, w) = inputs(n, 1, &d);
        let seq = all_tokens(&mixed, &g, &beta);
        let mut st = fresh(&d);
        let t0 = std::time::Instant::now();
        mix(&seq, &w, &mut st, &d, &[]);
        let whole = t0.elapsed();
        // Every token kept forces the recurrent form.
        let all: Vec<usize> = (0..n).collect();
        let mut st = fresh(&d);
        let t0 = std::time::Instant::now();
        mix(&seq, &w, &mut st, &d, &all);
        let by_token = t0.elapsed();
        println!("n {n}: default {whole:?}, recurrent {by_token:?}");
    }
}
