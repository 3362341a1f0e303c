//! The dense f16/bf16 kernels against an f64 reference on random matrices: every level this CPU
//! has, both element types, row counts on and off the 16-row groups and the tiles' multiples,
//! T = 1…13 and past a token block, enough work to run in parallel. Results agree within
//! `TOL × sum |w_j x_j|`; every level gives the scalar reference's bits (one fused multiply-add
//! per input feature, in order); each token's row is the same bits alone or with the others.

use super::{levels, TOL};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokfire::kernels::dense::{matmul_at, HalfMatrix, HalfType};
use tokfire::kernels::Level;

const TYPES: [HalfType; 2] = [HalfType::F16, HalfType::Bf16];

/// `(n, k)`: row counts inside one group, on and past groups, past the 8-group decode tile.
const SHAPES: [(usize, usize); 8] = [
    (1, 16),
    (7, 37),
    (13, 576),
    (16, 1),
    (33, 64),
    (5, 2048),
    (200, 40),
    (32, 100),
];

fn random(ty: HalfType, n: usize, k: usize, rng: &mut StdRng) -> (HalfMatrix, Vec<f32>) {
    let v: Vec<f32> = (0..n * k).map(|_| rng.random_range(-1.0..1.0)).collect();
    (HalfMatrix::from_f32(ty, n, k, &v).expect("n × k values"), v)
}

fn acts(t: usize, k: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..t * k).map(|_| rng.random_range(-2.0..2.0)).collect()
}

/// Checks `out` against the f64 dot of the matrix's own (rounded) elements with `x`.
fn check(w: &HalfMatrix, x: &[f32], t: usize, out: &[f32], what: &str) {
    let (n, k) = (w.n(), w.k());
    for tok in 0..t {
        for r in 0..n {
            let xr = &x[tok * k..][..k];
            let (dot, mag) = w
                .row(r)
                .iter()
                .zip(xr)
                .fold((0f64, 0f64), |(d, m), (&b, &v)| {
                    let p = f64::from(w.half_type().to_f32(b)) * f64::from(v);
                    (d + p, m + p.abs())
                });
            let got = out[tok * n + r];
            assert!(
                (f64::from(got) - dot).abs() <= f64::from(TOL) * mag + 1e-30,
                "{what}: token {tok} row {r}: {got} against {dot} (magnitude {mag})"
            );
        }
    }
}

#[test]
fn dense_kernels_match_the_f64_dot_at_every_level() {
    let mut rng = StdRng::seed_from_u64(0xde45e);
    for lvl in levels() {
        for ty in TYPES {
            for (n, k) in SHAPES {
                let (w, _) = random(ty, n, k, &mut rng);
                for t in (1..=13).chain([50]) {
                    let x = acts(t, k, &mut rng);
                    let mut out = vec![f32::NAN; t * n];
                    matmul_at(lvl, &w, &x, t, &mut out);
                    check(&w, &x, t, &out, &format!("{lvl} {ty:?} {n}×{k} T={t}"));
                }
            }
        }
    }
}

#[test]
fn every_level_gives_the_scalar_references_bits() {
    let mut rng = StdRng::seed_from_u64(0x5ca1a);
    for ty in TYPES {
        for (n, k) in SHAPES {
            let (w, _) = random(ty, n, k, &mut rng);
            for t in [1, 2, 3, 5, 13, 50] {
                let x = acts(t, k, &mut rng);
                let mut want = vec![f32::NAN; t * n];
                matmul_at(Level::Scalar, &w, &x, t, &mut want);
                for lvl in levels() {
                    let mut got = vec![f32::NAN; t * n];
                    matmul_at(lvl, &w, &x, t, &mut got);
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{lvl} {ty:?} {n}×{k} T={t}");
                }
            }
        }
    }
}

#[test]
fn a_tokens_row_is_the_same_bits_alone_or_in_a_batch() {
    let mut rng = StdRng::seed_from_u64(7);
    for lvl in levels() {
        for ty in TYPES {
            // 301 × 576 × 61 multiply-adds: the parallel path, row tails and token blocks.
            for (n, k, t) in [(301, 576, 61), (13, 100, 7)] {
                let (w, _) = random(ty, n, k, &mut rng);
                let x = acts(t, k, &mut rng);
                let mut all = vec![0f32; t * n];
                matmul_at(lvl, &w, &x, t, &mut all);
                check(&w, &x, t, &all, &format!("{lvl} {ty:?} batch"));
                for tok in 0..t {
                    let mut one = vec![0f32; n];
                    matmul_at(lvl, &w, &x[tok * k..][..k], 1, &mut one);
                    let batch: Vec<u32> = all[tok * n..][..n].iter().map(|v| v.to_bits()).collect();
                    let alone: Vec<u32> = one.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(batch, alone, "{lvl} {ty:?} {n}×{k}: token {tok} of {t}");
                }
            }
        }
    }
}

#[test]
fn half_types_convert_exactly() {
    for bits in (0..=u16::MAX).step_by(7) {
        let f = HalfType::F16.to_f32(bits);
        assert_eq!(f.to_bits(), half::f16::from_bits(bits).to_f32().to_bits());
        // NaNs keep their payload here (half quiets a bf16 NaN): any NaN is right.
        let (b, want) = (
            HalfType::Bf16.to_f32(bits),
            half::bf16::from_bits(bits).to_f32(),
        );
        assert!(b.to_bits() == want.to_bits() || (b.is_nan() && want.is_nan()));
    }
    assert_eq!(HalfType::Bf16.from_f32(1.0), 0x3f80);
    assert_eq!(HalfType::F16.from_f32(1.0), 0x3c00);
    assert!(HalfMatrix::new(HalfType::F16, 2, 3, vec![0; 5]).is_none());
}
