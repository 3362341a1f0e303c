//! Our quantized matmul kernels against the scalar reference on random GGUF blocks: every
//! SIMD level this CPU has, T = 1…17, odd column counts. Float results agree within
//! `TOL × sum |w_j a_j|` (the dot's magnitude, so cancellation cannot hide an error); with
//! unit scales the results are exact integers and must be bit-equal; each row's result is
//! bit-identical whatever T and whichever rows share the call. Also runs the default model
//! with the scalar level forced; [`dense`] tests the dense f16/bf16 kernels.

mod common;
#[path = "kernels/dense.rs"]
mod dense;

use half::f16;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokfire::kernels::blocks::{dequantize_row, QType};
use tokfire::kernels::matmul::matmul_at;
use tokfire::kernels::quantize::Acts;
use tokfire::kernels::{scalar, Level, QMatrix, Runtime};

/// Relative tolerance against the dot's magnitude. f32 has a 6e-8 unit roundoff; a dot of k
/// values sums ≤ k/32 + 8 rounded terms in a different order per level, so 2e-5 leaves a
/// wide margin for k ≤ 2048 while catching any wrong block or lane (errors of order 1).
const TOL: f32 = 2e-5;

const TYPES: [QType; 6] = [
    QType::Q4_1,
    QType::Q8_0,
    QType::Q4_0,
    QType::Q5_0,
    QType::Q4K,
    QType::Q6K,
];

/// `(n, k)` shapes for a type: odd column counts; k a whole number of blocks.
fn shapes(q: QType) -> Vec<(usize, usize)> {
    if q.block_len() == 256 {
        vec![(1, 256), (7, 512), (13, 768), (9, 2048)]
    } else {
        vec![(1, 32), (7, 96), (13, 576), (37, 64), (9, 1536)]
    }
}

fn levels() -> Vec<Level> {
    Level::ALL.into_iter().filter(|l| l.available()).collect()
}

/// Byte ranges of a block's f16 fields.
fn f16_fields(q: QType) -> &'static [usize] {
    match q {
        QType::Q4_0 | QType::Q5_0 | QType::Q8_0 => &[0],
        QType::Q4_1 | QType::Q4K => &[0, 2],
        QType::Q6K => &[208],
    }
}

/// `n` rows of `k` values of random blocks; scales from `scale(rng, field)`.
fn random_matrix(
    q: QType,
    n: usize,
    k: usize,
    rng: &mut StdRng,
    scale: impl Fn(&mut StdRng, usize) -> f32,
) -> QMatrix {
    let blocks = n * k / q.block_len();
    let mut bytes = vec![0u8; blocks * q.block_bytes()];
    rng.fill(bytes.as_mut_slice());
    for blk in bytes.chunks_exact_mut(q.block_bytes()) {
        for (i, &at) in f16_fields(q).iter().enumerate() {
            let v = f16::from_f32(scale(rng, i));
            blk[at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
    }
    QMatrix::new(q, n, k, bytes).expect("whole blocks")
}

fn random_scales(rng: &mut StdRng, field: usize) -> f32 {
    if field == 0 {
        rng.random_range(0.001..0.05)
    } else {
        rng.random_range(-0.2..0.2)
    }
}

fn random_x(t: usize, k: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..t * k).map(|_| rng.random_range(-3.0f32..3.0)).collect()
}

fn run(level: Level, w: &QMatrix, x: &[f32], t: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; t * w.n()];
    matmul_at(level, w, x, t, &mut out);
    out
}

/// The scalar reference dots and each element's magnitude `sum |w_j a_j|` (dequantized).
fn reference(w: &QMatrix, x: &[f32], t: usize) -> (Vec<f32>, Vec<f32>) {
    let (n, k, q) = (w.n(), w.k(), w.qtype());
    let mut acts = Acts::default();
    acts.quantize(q.act_type(), x, t, k);
    let row_bytes = w.bytes().len() / n;
    let (mut dots, mut mags) = (vec![0.0; t * n], vec![0.0; t * n]);
    let mut wf = vec![0f32; k];
    for c in 0..n {
        let wr = &w.bytes()[c * row_bytes..(c + 1) * row_bytes];
        dequantize_row(q, wr, &mut wf);
        for r in 0..t {
            dots[r * n + c] = scalar::dot_row(q, wr, &acts, r);
            let bl = acts.block_len();
            mags[r * n + c] = (0..k)
                .map(|j| (wf[j] * acts.qs[r * k + j] as f32 * acts.d[r * (k / bl) + j / bl]).abs())
                .sum();
        }
    }
    (dots, mags)
}

#[test]
fn every_level_matches_the_scalar_reference_for_t_1_to_17() {
    let mut rng = StdRng::seed_from_u64(4);
    for q in TYPES {
        for (n, k) in shapes(q) {
            let w = random_matrix(q, n, k, &mut rng, random_scales);
            for t in 1..=17 {
                let x = random_x(t, k, &mut rng);
                let (want, mag) = reference(&w, &x, t);
                for level in levels() {
                    let got = run(level, &w, &x, t);
                    for i in 0..t * n {
                        let err = (got[i] - want[i]).abs();
                        assert!(
                            err <= TOL * mag[i] + 1e-6,
                            "{q:?} {level} n={n} k={k} t={t} elem {i}: {} vs scalar {} (|w||a| {})",
                            got[i],
                            want[i],
                            mag[i]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn integer_parts_are_exact_with_unit_scales() {
    let mut rng = StdRng::seed_from_u64(5);
    for q in TYPES {
        let (n, k) = (11, 768);
        // d = 1, m = 0: every result is an exact integer below 2^24.
        let w = random_matrix(q, n, k, &mut rng, |_, f| if f == 0 { 1.0 } else { 0.0 });
        for t in [1, 3, 5] {
            // Integers in -127..=127 with 127 in every block: the activation scale is exactly 1.
            let mut x: Vec<f32> = (0..t * k)
                .map(|_| rng.random_range(-127i32..=127) as f32)
                .collect();
            x.iter_mut().step_by(32).for_each(|v| *v = 127.0);
            let want = run(Level::Scalar, &w, &x, t);
            for v in &want {
                assert_eq!(v.fract(), 0.0, "scalar result {v} is not an integer");
            }
            for level in levels() {
                assert_eq!(run(level, &w, &x, t), want, "{q:?} {level} t={t}");
            }
        }
    }
}

#[test]
fn each_row_is_bit_identical_whatever_shares_the_call() {
    let mut rng = StdRng::seed_from_u64(6);
    for q in TYPES {
        // Enough columns to go parallel, odd so every tail path runs.
        let (n, k) = (1031, 512);
        let w = random_matrix(q, n, k, &mut rng, random_scales);
        let t = 17;
        let x = random_x(t, k, &mut rng);
        for level in levels() {
            let all = run(level, &w, &x, t);
            for r in 0..t {
                let alone = run(level, &w, &x[r * k..(r + 1) * k], 1);
                assert!(
                    alone
                        .iter()
                        .zip(&all[r * n..(r + 1) * n])
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{q:?} {level}: row {r} differs between T={t} and T=1"
                );
            }
            let pair = run(level, &w, &x[5 * k..7 * k], 2);
            assert_eq!(pair, all[5 * n..7 * n], "{q:?} {level}: rows 5-6 as T=2");
        }
    }
}

/// The block types with tile kernels over repacked weights.
const TILED: [QType; 6] = [
    QType::Q4_0,
    QType::Q4_1,
    QType::Q5_0,
    QType::Q8_0,
    QType::Q4K,
    QType::Q6K,
];

/// `(n, k)` shapes of whole tiles for a tiled type.
fn tiled_shapes(q: QType) -> Vec<(usize, usize)> {
    if q.block_len() == 256 {
        vec![(8, 256), (24, 512), (40, 768), (16, 2048)]
    } else {
        vec![(8, 32), (24, 96), (40, 576), (16, 1536)]
    }
}

/// [`scalar::dot_row_fused`] of every row of `w` against every row of `x`.
fn fused_reference(w: &QMatrix, x: &[f32], t: usize) -> Vec<f32> {
    let (n, k, q) = (w.n(), w.k(), w.qtype());
    let mut acts = Acts::default();
    acts.quantize(q.act_type(), x, t, k);
    let mut out = vec![0.0; t * n];
    for c in 0..n {
        for r in 0..t {
            out[r * n + c] = scalar::dot_row_fused(q, &w.row(c), &acts, r);
        }
    }
    out
}

#[test]
fn repacked_weights_give_their_references_bits_at_every_level() {
    let mut rng = StdRng::seed_from_u64(7);
    for q in TILED {
        for (n, k) in tiled_shapes(q) {
            let w = random_matrix(q, n, k, &mut rng, random_scales);
            let tiles = w.repacked().expect("whole tiles of a tiled type repack");
            assert!(tiles.is_repacked() && !w.is_repacked());
            for c in 0..n {
                assert_eq!(tiles.row(c), w.row(c), "{q:?} n={n} k={k}: row {c} rebuilt");
            }
            for t in [1, 2, 3, 4, 5, 8, 13, 17] {
                let x = random_x(t, k, &mut rng);
                let want = fused_reference(&w, &x, t);
                let (rows, mag) = reference(&w, &x, t);
                for level in levels() {
                    let got = run(level, &tiles, &x, t);
                    assert!(
                        got.iter()
                            .zip(&want)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{q:?} {level} n={n} k={k} t={t}: repacked differs from its reference"
                    );
                    for i in 0..t * n {
                        let err = (got[i] - rows[i]).abs();
                        assert!(err <= TOL * mag[i] + 1e-6, "{q:?} {level} elem {i}: {err}");
                    }
                }
            }
        }
    }
}

#[test]
fn repacked_tiles_sum_the_largest_products_exactly() {
    // Every weight byte 0xFF (4-bit values 15, Q5_0's 31, Q8_0's -1, Q6_K's 63; sub-block
    // scales 63, Q6_K's -1) with unit block scales, and activations of ±127 in every lane: the
    // largest integer sums a block's products reach, which the AVX2 tiles add in i16 before
    // widening.
    for q in TILED {
        let (n, k) = (16, 512);
        let mut bytes = vec![0xFFu8; n * k / q.block_len() * q.block_bytes()];
        for blk in bytes.chunks_exact_mut(q.block_bytes()) {
            for (i, &at) in f16_fields(q).iter().enumerate() {
                let v = f16::from_f32(if i == 0 { 1.0 } else { 0.0 });
                blk[at..at + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
        let w = QMatrix::new(q, n, k, bytes).expect("whole blocks");
        let tiles = w.repacked().expect("whole tiles of a tiled type repack");
        for sign in [127.0f32, -127.0] {
            // 9 rows: two row tiles (decoded once where a kind decodes) and one alone.
            let t = 9;
            let x = vec![sign; t * k];
            let want = fused_reference(&w, &x, t);
            for level in levels() {
                let got = run(level, &tiles, &x, t);
                assert_eq!(got, want, "{q:?} {level} activations {sign}");
            }
        }
    }
}

#[test]
fn only_whole_tiles_of_tiled_types_repack() {
    let mut rng = StdRng::seed_from_u64(8);
    let odd = random_matrix(QType::Q8_0, 12, 64, &mut rng, random_scales);
    assert!(
        odd.repacked().is_none(),
        "12 rows are not whole 8-row tiles"
    );
}

#[test]
fn quantized_activations_round_trip_within_half_a_step() {
    let mut rng = StdRng::seed_from_u64(7);
    let (t, k) = (3, 768);
    let x = random_x(t, k, &mut rng);
    for q in TYPES {
        let mut acts = Acts::default();
        acts.quantize(q.act_type(), &x, t, k);
        let bl = acts.block_len();
        for (j, &v) in x.iter().enumerate() {
            let d = acts.d[j / bl];
            let back = acts.qs[j] as f32 * d;
            let d = d.abs();
            // q was rounded with the unrounded scale; d is stored through f16 (2^-11 relative).
            assert!(
                (back - v).abs() <= d * (0.5 + 127.0 / 2048.0),
                "{q:?} value {j}: {v} → {back}"
            );
        }
    }
}

#[test]
fn level_names_round_trip_and_a_runtime_at_an_unavailable_level_is_refused() {
    for l in Level::ALL {
        assert_eq!(l.to_string().parse::<Level>().unwrap(), l);
        let rt = Runtime::new(1, l);
        assert_eq!(rt.is_ok(), l.available());
        if let Ok(rt) = rt {
            // The level is the runtime's, on its workers only.
            assert_eq!(rt.install(tokfire::kernels::level), l);
        }
    }
    assert_eq!(tokfire::kernels::level(), tokfire::kernels::detect());
    assert!(Runtime::new(0, Level::Scalar).is_err());
    assert!("avx9".parse::<Level>().is_err());
    assert!(tokfire::kernels::detect().available());
}

/// llama.cpp's greedy continuation of "The capital of France is" up to step 14, where its
/// top-2 logits are a near tie (gap < 0.5) that our 8-bit activations may flip (see
/// `real_model.rs`).
const PARIS: [u32; 14] = [
    7042, 30, 198, 198, 504, 1797, 1918, 553, 253, 2155, 282, 4723, 216, 35,
];

#[test]
fn scalar_level_runs_the_default_model_like_llama_cpp() {
    // The model runs on a scalar runtime's workers; the other tests pass their level explicitly.
    let rt = Runtime::new(2, Level::Scalar).unwrap();
    let m = common::load(
        &common::default_model_path(),
        tokfire::config::WeightDType::Q,
    );
    let prompt = m.tokenizer.encode("The capital of France is").unwrap();
    let ours = rt.install(|| common::solo(&m.model, &prompt, PARIS.len()));
    assert_eq!(ours.tokens, PARIS, "scalar kernels vs llama.cpp");
}

#[test]
fn scalar_reference_equals_dequantized_weights_times_dequantized_activations() {
    // Ties the reference to the block layouts (ggml's dequantize_row_*): the same dot in f64
    // on dequantized values. Q4_1 also rounds its `s = d * sum` through f16 (2^-11 relative).
    let mut rng = StdRng::seed_from_u64(8);
    for q in TYPES {
        let (n, k, t) = (5, 256, 3);
        let w = random_matrix(q, n, k, &mut rng, random_scales);
        let x = random_x(t, k, &mut rng);
        let (dots, mags) = reference(&w, &x, t);
        let mut acts = Acts::default();
        acts.quantize(q.act_type(), &x, t, k);
        let bl = acts.block_len();
        let mut wf = vec![0f32; k];
        for c in 0..n {
            let row = w.bytes().len() / n;
            dequantize_row(q, &w.bytes()[c * row..(c + 1) * row], &mut wf);
            for r in 0..t {
                let exact: f64 = (0..k)
                    .map(|j| {
                        let a = acts.qs[r * k + j] as f64 * acts.d[(r * k + j) / bl] as f64;
                        wf[j] as f64 * a
                    })
                    .sum();
                let (got, mag) = (dots[r * n + c] as f64, mags[r * n + c] as f64);
                assert!(
                    (got - exact).abs() <= 1e-3 * mag + 1e-6,
                    "{q:?} ({r},{c}): {got} vs {exact}"
                );
            }
        }
    }
}

#[test]
fn the_default_model_repacked_gives_the_same_bits_at_every_level_and_ids_to_a_near_tie() {
    let path = common::default_model_path();
    let mut cfg = common::model_config(&path, tokfire::config::WeightDType::Q);
    cfg.repack = tokfire::config::Repack::Off;
    let rows = tokfire::model::load(&cfg, tokfire::model::Kernels::Ours).unwrap();
    cfg.repack = tokfire::config::Repack::On;
    let tiles = tokfire::model::load(&cfg, tokfire::model::Kernels::Ours).unwrap();
    let split = tiles.split.as_ref().unwrap();
    assert!(
        split.repacked_bytes > 0 && split.repack_s > 0.0,
        "{split:?}"
    );
    let prompt = rows.tokenizer.encode("The capital of France is").unwrap();
    let scalar = Runtime::new(2, Level::Scalar).unwrap();
    let want = scalar.install(|| common::solo(&tiles.model, &prompt, PARIS.len()));
    assert_eq!(want.tokens, PARIS, "repacked, scalar level, vs llama.cpp");
    for level in levels() {
        let rt = Runtime::new(2, level).unwrap();
        let got = rt.install(|| common::solo(&tiles.model, &prompt, PARIS.len()));
        assert_eq!(got.tokens, want.tokens, "{level}");
        for (step, (a, b)) in got.logits.iter().zip(&want.logits).enumerate() {
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same,
                "{level}: step {step}: repacked logits differ from the scalar level's"
            );
        }
        // The layouts round each block's sum differently: greedy ids agree up to a near tie
        // (step 5 is one: 1797 or 2988, about 0.1 apart), and may part there.
        let plain = rt.install(|| common::solo(&rows.model, &prompt, PARIS.len()));
        let parted = plain
            .tokens
            .iter()
            .zip(&got.tokens)
            .position(|(a, b)| a != b);
        if let Some(s) = parted {
            let l = &got.logits[s];
            let gap = l[got.tokens[s] as usize] - l[plain.tokens[s] as usize];
            assert!(
                gap < 0.5,
                "{level}: row layout leaves the repacked ids at step {s}, {gap} from a tie"
            );
        }
    }
}
