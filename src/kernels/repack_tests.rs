//! Repacked parts of a stacked matrix whose tiles straddle the column chunks the threads take.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::super::matmul::matmul_at;
use super::super::{Level, QMatrix, QType};

/// `n` rows of random Q8_0 blocks with small scales.
fn matrix(n: usize, k: usize, rng: &mut StdRng) -> QMatrix {
    let mut bytes = vec![0u8; n * k / 32 * 34];
    rng.fill(bytes.as_mut_slice());
    for blk in bytes.chunks_exact_mut(34) {
        let d = half::f16::from_f32(rng.random_range(0.001..0.05));
        blk[..2].copy_from_slice(&d.to_le_bytes());
    }
    QMatrix::new(QType::Q8_0, n, k, bytes).unwrap()
}

#[test]
fn tiles_straddling_thread_chunks_give_the_references_bits() {
    let mut rng = StdRng::seed_from_u64(9);
    let k = 512;
    // 5 rows stay GGUF rows, so the tiles of the next parts start off the 8-column grid the
    // chunks are cut on: chunks end inside tiles, which each side computes whole.
    let (a, b, c) = (
        matrix(5, k, &mut rng),
        matrix(1024, k, &mut rng),
        matrix(16, k, &mut rng),
    );
    let plain = QMatrix::concat(&[&a, &b, &c]).unwrap();
    let tiles = plain.repacked().unwrap();
    let interleaved: Vec<bool> = tiles.parts().iter().map(|p| p.interleaved).collect();
    assert_eq!(interleaved, [false, true, true]);
    let t = 17;
    let x: Vec<f32> = (0..t * k).map(|_| rng.random_range(-3.0f32..3.0)).collect();
    let run = |lvl: Level, w: &QMatrix| {
        let mut out = vec![f32::NAN; t * w.n()];
        matmul_at(lvl, w, &x, t, &mut out);
        out
    };
    // The scalar level runs the tiles' reference, one GGUF row at a time.
    let want = run(Level::Scalar, &tiles);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for lvl in Level::ALL.into_iter().filter(|l| l.available()) {
        let got = pool.install(|| run(lvl, &tiles));
        // Row tiles of the GGUF part run the level's own kernel: compare the tiled parts only.
        for r in 0..t {
            let row = |v: &[f32]| v[r * 1045 + 5..(r + 1) * 1045].to_vec();
            let same = row(&got)
                .iter()
                .zip(row(&want))
                .all(|(g, w)| g.to_bits() == w.to_bits());
            assert!(
                same,
                "{lvl}: row {r} of the repacked parts differs from the reference"
            );
        }
        assert!(
            got.iter().all(|v| v.is_finite()),
            "{lvl}: a column was never written"
        );
    }
}

/// A timing aid, not a test: `cargo test --release --lib -- --ignored time_the_layouts
/// --nocapture` prints the median of GGUF rows against tiles at T = 1, 3 and 512, on all
/// threads at the best level: the 32-value types at the default model's `ffn_up` shape
/// (1536 × 576), the K-quants at Gemma 3 270M's `ffn_down` (640 × 2048; Q6_K has rows only).
#[test]
#[ignore]
fn time_the_layouts() {
    let mut rng = StdRng::seed_from_u64(10);
    let types: [(QType, &[usize]); 6] = [
        (QType::Q4_1, &[0, 2]),
        (QType::Q8_0, &[0]),
        (QType::Q4_0, &[0]),
        (QType::Q5_0, &[0]),
        (QType::Q4K, &[0, 2]),
        (QType::Q6K, &[208]),
    ];
    for (qtype, f16_at) in types {
        let (n, k) = match qtype.block_len() {
            256 => (640, 2048),
            _ => (1536, 576),
        };
        let bb = qtype.block_bytes();
        let mut bytes = vec![0u8; n * k / qtype.block_len() * bb];
        rng.fill(bytes.as_mut_slice());
        for blk in bytes.chunks_exact_mut(bb) {
            for &at in f16_at {
                blk[at..at + 2].copy_from_slice(&half::f16::from_f32(0.01).to_le_bytes());
            }
        }
        let plain = QMatrix::new(qtype, n, k, bytes).unwrap();
        let tiles = plain.repacked();
        for t in [1, 3, 512] {
            let x: Vec<f32> = (0..t * k).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let rows = median_us(&plain, &x, t);
            match &tiles {
                Some(tiles) => {
                    let b = median_us(tiles, &x, t);
                    println!(
                        "{qtype:?} T={t}: rows {rows:.1} µs, tiles {b:.1} µs ({:.2}×)",
                        rows / b
                    );
                }
                None => println!("{qtype:?} T={t}: rows {rows:.1} µs (no tiles)"),
            }
        }
    }
}

/// The median time of `w · x` (T = `t`) at the best level, µs: 2000 calls at T < 4, else 20.
fn median_us(w: &QMatrix, x: &[f32], t: usize) -> f64 {
    let mut out = vec![0f32; t * w.n()];
    let mut s: Vec<f64> = (0..if t < 4 { 2000 } else { 20 })
        .map(|_| {
            let start = std::time::Instant::now();
            matmul_at(super::super::detect(), w, x, t, &mut out);
            start.elapsed().as_secs_f64()
        })
        .collect();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2] * 1e6
}
