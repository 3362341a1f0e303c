//! Unit tests of `crate::spec::rejection`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const P: [f64; 4] = [0.5, 0.25, 0.15, 0.10];

/// An acceptance rule under test.
type Rule = fn(&[u32], DraftDist, &[Vec<f64>], &mut dyn FnMut() -> f64) -> Vec<u32>;

/// A drafter distribution unlike the target's, different per position.
fn q_rows(k: usize) -> Vec<Vec<f64>> {
    (0..k)
        .map(|i| {
            if i % 2 == 0 {
                vec![0.1, 0.2, 0.3, 0.4]
            } else {
                vec![0.7, 0.1, 0.1, 0.1]
            }
        })
        .collect()
}

/// The first two tokens of `n` generations, each made by repeated speculative steps of `k`
/// drafts against a target whose distribution is `P` at every position; `rule` is the
/// acceptance rule under test. Returns the joint frequencies of (token 1, token 2).
fn joint(n: usize, k: usize, certain: bool, rule: Rule) -> [[f64; 4]; 4] {
    let mut rng = StdRng::seed_from_u64(7);
    let q = q_rows(k);
    let p: Vec<Vec<f64>> = vec![P.to_vec(); k + 1];
    let mut counts = [[0usize; 4]; 4];
    for _ in 0..n {
        let mut got = Vec::new();
        while got.len() < 2 {
            let draft: Vec<u32> = (0..k)
                .map(|i| {
                    if certain {
                        // A deterministic drafter: always proposes token 2, then 0, …
                        [2, 0][i % 2]
                    } else {
                        draw(&q[i], rng.random()).unwrap()
                    }
                })
                .collect();
            let dist = if certain {
                DraftDist::Certain
            } else {
                DraftDist::Probs(&q)
            };
            let mut u = || rng.random::<f64>();
            got.extend(rule(&draft, dist, &p, &mut u));
        }
        counts[got[0] as usize][got[1] as usize] += 1;
    }
    counts.map(|row| row.map(|c| c as f64 / n as f64))
}

/// Largest deviation from P ⊗ P in units of the cell's binomial standard error.
fn worst_sigma(freq: &[[f64; 4]; 4], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for a in 0..4 {
        for b in 0..4 {
            let pi = P[a] * P[b];
            let se = (pi * (1.0 - pi) / n as f64).sqrt();
            worst = worst.max((freq[a][b] - pi).abs() / se);
        }
    }
    worst
}

/// Tolerance: every one of the 16 cells of the joint distribution of the first two output
/// tokens within 4.5 binomial standard errors of P ⊗ P (for a correct rule a miss has
/// probability below 16 × 7e-6 per run; the seed makes the run reproducible).
const SIGMAS: f64 = 4.5;
const N: usize = 60_000;

#[test]
fn sampled_acceptance_keeps_the_targets_distribution() {
    for k in [1, 3] {
        for certain in [false, true] {
            let f = joint(N, k, certain, accept_sampled);
            let w = worst_sigma(&f, N);
            assert!(w < SIGMAS, "k {k}, certain {certain}: {w:.1} sigma off");
        }
    }
}

/// Keeping every draft (no rejection) follows the drafter, not the target: the same test
/// must catch it, so the test above can fail.
#[test]
fn the_statistical_test_catches_a_biased_rule() {
    fn keep_all(d: &[u32], _: DraftDist, p: &[Vec<f64>], u: &mut dyn FnMut() -> f64) -> Vec<u32> {
        let mut out = d.to_vec();
        out.push(draw(&p[d.len()], u()).unwrap());
        out
    }
    let f = joint(N, 2, false, keep_all);
    assert!(worst_sigma(&f, N) > SIGMAS * 4.0);
}

#[test]
fn point_rules() {
    let p = vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
    // The target is certain of token 1: a draft of 1 is kept, then 2 follows.
    assert_eq!(
        accept_sampled(&[1], DraftDist::Certain, &p, &mut || 0.99),
        vec![1, 2]
    );
    // A draft of 0 the target never picks is rejected; the residual is the target's 1.
    assert_eq!(
        accept_sampled(&[0], DraftDist::Certain, &p, &mut || 0.0),
        vec![1]
    );
    assert_eq!(draw(&[0.0, 0.0], 0.5), None);
    assert_eq!(draw(&[0.0, 2.0, 2.0], 0.49), Some(1));
    assert_eq!(draw(&[0.0, 2.0, 2.0], 0.51), Some(2));
    assert_eq!(draw(&[1.0, 0.0], 0.999_999_9), Some(0));
}
