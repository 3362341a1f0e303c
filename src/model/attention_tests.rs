//! Unit tests of `crate::model::attention`.

use super::*;

/// A plain per-query softmax attention: scores, max, exponentials, weighted sum (f64).
fn reference(dims: Dims, sc: Scoring, q: &[f32], s: SegmentRows, kv: &KvSlices) -> Vec<f32> {
    let (hd, group) = (dims.head_dim, dims.heads / dims.kv_heads);
    let mut out = vec![0f32; s.len * dims.heads * hd];
    for i in 0..s.len {
        let pos = s.pos + i;
        let first = sc.window.map_or(0, |w| (pos + 1).saturating_sub(w));
        for h in 0..dims.heads {
            let base = (h / group) * kv.capacity * hd;
            let qh = &q[((s.start + i) * dims.heads + h) * hd..][..hd];
            let scores: Vec<f64> = (first..=pos)
                .map(|j| {
                    let k = &kv.k[base + j * hd..][..hd];
                    let d: f64 = qh.iter().zip(k).map(|(&a, &b)| a as f64 * b as f64).sum();
                    let x = d / sc.divisor as f64;
                    sc.softcap.map_or(x, |c| c as f64 * (x / c as f64).tanh())
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = w.iter().sum();
            let o = &mut out[(i * dims.heads + h) * hd..][..hd];
            for (wj, j) in w.iter().zip(first..=pos) {
                for (x, &v) in o.iter_mut().zip(&kv.v[base + j * hd..][..hd]) {
                    *x += (wj / sum * v as f64) as f32;
                }
            }
        }
    }
    out
}

/// Deterministic values in [-1, 1).
/// `kv`'s keys (`[kv_heads, capacity, hd]`) as a cache keeps them in transposed blocks of `kb`
/// keys ([`key_at`]).
fn kept_blocks(kv: &KvSlices, kv_heads: usize, hd: usize, kb: usize) -> Vec<f32> {
    let (cap, blocks) = (kv.capacity, kv.capacity.div_ceil(kb));
    let mut kept = vec![0f32; kv_heads * blocks * kb * hd];
    for g in 0..kv_heads {
        for p in 0..cap {
            for d in 0..hd {
                let block = (g * blocks + p / kb) * kb * hd;
                kept[block + key_at(hd, p % kb, d)] = kv.k[(g * cap + p) * hd + d];
            }
        }
    }
    kept
}

/// `kv` with the key blocks `kept` ([`kept_blocks`]).
fn with_kept<'a>(kv: KvSlices<'a>, kept: &'a [f32], kb: usize) -> KvSlices<'a> {
    let blocks = kv.capacity.div_ceil(kb);
    KvSlices {
        key_blocks: Some(KeyBlocks {
            data: kept,
            kb,
            blocks,
        }),
        ..kv
    }
}

fn noise(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Attention of rows `rows` of a sequence whose cache holds `cap` keys, as one segment.
fn run_rows(
    dims: Dims,
    sc: Scoring,
    q: &[f32],
    kv: KvSlices,
    rows: std::ops::Range<usize>,
) -> Vec<f32> {
    let qw = dims.heads * dims.head_dim;
    let seg = SegmentRows {
        start: 0,
        len: rows.len(),
        pos: rows.start,
    };
    let mut out = vec![0f32; rows.len() * qw];
    attend_scored(
        dims,
        sc,
        &q[rows.start * qw..rows.end * qw],
        &[(seg, kv)],
        &mut out,
    );
    out
}

#[test]
fn tiled_attention_matches_a_plain_softmax_and_chunks_change_no_bit() {
    // Odd head width (a tail past the 32- and 8-wide chunks), grouped heads, 150 keys (three
    // key blocks, the last partial), windows and soft-caps.
    let dims = Dims {
        heads: 6,
        kv_heads: 2,
        head_dim: 44,
        interleaved: false,
        rot: 44,
    };
    let (t, hd) = (150, dims.head_dim);
    let q = noise(t * dims.heads * hd, 1);
    let (k, v) = (
        noise(dims.kv_heads * t * hd, 2),
        noise(dims.kv_heads * t * hd, 3),
    );
    let kv = KvSlices {
        k: &k,
        v: &v,
        capacity: t,
        key_blocks: None,
    };
    let scorings = [
        Scoring::causal(hd),
        Scoring {
            window: Some(70),
            ..Scoring::causal(hd)
        },
        Scoring {
            softcap: Some(0.5),
            divisor: 0.25,
            window: None,
        },
    ];
    // The same keys as a cache keeps them in transposed blocks.
    let kb = key_block(hd);
    let kept = kept_blocks(&kv, dims.kv_heads, hd, kb);
    let kv_kept = with_kept(kv, &kept, kb);
    for sc in scorings {
        let whole = run_rows(dims, sc, &q, kv, 0..t);
        assert_eq!(
            run_rows(dims, sc, &q, kv_kept, 0..t),
            whole,
            "{sc:?} kept keys"
        );
        assert_eq!(
            run_rows(dims, sc, &q, kv_kept, t - 1..t),
            whole[(t - 1) * dims.heads * hd..],
            "{sc:?} kept keys, last row"
        );
        let seg = SegmentRows {
            start: 0,
            len: t,
            pos: 0,
        };
        let plain = reference(dims, sc, &q, seg, &kv);
        for (i, (a, b)) in whole.iter().zip(&plain).enumerate() {
            assert!(
                (a - b).abs() < 1e-5,
                "{sc:?} element {i}: tiled {a}, plain {b}"
            );
        }
        let qw = dims.heads * hd;
        for split in [1, 63, 64, 65, 149] {
            let mut parts = run_rows(dims, sc, &q, kv, 0..split);
            parts.extend(run_rows(dims, sc, &q, kv, split..t));
            assert_eq!(parts, whole, "{sc:?} split at {split}");
            let one = run_rows(dims, sc, &q, kv, split - 1..split);
            assert_eq!(
                one,
                whole[(split - 1) * qw..split * qw],
                "{sc:?} row {}",
                split - 1
            );
        }
    }
}

#[test]
fn wide_loops_give_the_portable_loops_bits() {
    // Head widths past and between the 512-bit chunks (16, 64) and key blocks of 16 and 32;
    // heads per KV head 1 to 5 (tiles of 4, 3, 2, 1 heads, 8, 4, 1 query vectors).
    if !tiled::wide_here() {
        eprintln!("no AVX-512 here: the 512-bit loops are not run");
        return;
    }
    for (heads, kv_heads, hd, kb) in [
        (6, 2, 44, 16),
        (5, 1, 80, 32),
        (4, 1, 256, 32),
        (9, 3, 64, 64),
    ] {
        let dims = Dims {
            heads,
            kv_heads,
            head_dim: hd,
            interleaved: false,
            rot: hd,
        };
        let (t, pos) = (37, 60);
        let cap = pos + t;
        let q = noise(t * heads * hd, 4);
        let (k, v) = (noise(kv_heads * cap * hd, 5), noise(kv_heads * cap * hd, 6));
        let kv = KvSlices {
            k: &k,
            v: &v,
            capacity: cap,
            key_blocks: None,
        };
        let kept = kept_blocks(&kv, kv_heads, hd, kb);
        let kv_kept = with_kept(kv, &kept, kb);
        let seg = SegmentRows {
            start: 0,
            len: t,
            pos,
        };
        for sc in [
            Scoring::causal(hd),
            Scoring {
                window: Some(45),
                softcap: Some(0.5),
                divisor: 0.25,
            },
        ] {
            let run = |wide, kv| {
                let mut out = vec![0f32; q.len()];
                let tiling = tiled::Tiling {
                    parallel: false,
                    kb,
                    wide,
                };
                tiled::attend_tiled(dims, sc, &q, &[(seg, kv)], &mut out, tiling);
                out
            };
            let portable = run(false, kv);
            for (kv, keys) in [(kv, "own"), (kv_kept, "kept")] {
                assert_eq!(
                    run(true, kv),
                    portable,
                    "{heads}/{kv_heads} heads of {hd}, {sc:?}, {keys} keys"
                );
            }
        }
    }
}

#[test]
fn a_window_sees_only_its_last_keys() {
    // One head of width 8; key j is j·e0 and value j·e1, so a uniform score would give the
    // mean of the visible j in out[1]. With a zero query every visible key scores the same.
    let dims = Dims {
        heads: 1,
        kv_heads: 1,
        head_dim: 8,
        interleaved: false,
        rot: 8,
    };
    let cap = 6;
    let mut k = vec![0f32; cap * 8];
    let mut v = vec![0f32; cap * 8];
    for j in 0..cap {
        k[j * 8] = j as f32;
        v[j * 8 + 1] = j as f32;
    }
    let kv = KvSlices {
        k: &k,
        v: &v,
        capacity: cap,
        key_blocks: None,
    };
    let q = vec![0f32; 8];
    let seg = SegmentRows {
        start: 0,
        len: 1,
        pos: 5,
    };
    let mut out = vec![0f32; 8];
    let windowed = Scoring {
        window: Some(2),
        ..Scoring::causal(8)
    };
    attend_scored(dims, windowed, &q, &[(seg, kv)], &mut out);
    assert!((out[1] - 4.5).abs() < 1e-6, "keys 4 and 5 only: {}", out[1]);
    attend_scored(dims, Scoring::causal(8), &q, &[(seg, kv)], &mut out);
    assert!((out[1] - 2.5).abs() < 1e-6, "keys 0..=5: {}", out[1]);
}

#[test]
fn rope_rotates_pairs_or_halves() {
    let mut x = [1.0, 2.0, 3.0, 4.0];
    rope_head(&mut x, &[0.0, 1.0], &[1.0, 0.0], true);
    assert_eq!(x, [-2.0, 1.0, 3.0, 4.0]);
    let mut y = [1.0, 2.0, 3.0, 4.0];
    rope_head(&mut y, &[0.0, 1.0], &[1.0, 0.0], false);
    assert_eq!(y, [-3.0, 2.0, 1.0, 4.0]);
}

/// Timing aid (not a test of speed): 512 query rows after 4096 cached keys at SmolLM2-135M's
/// shape and Gemma 3 270M's, with key blocks of 16, 32 and 64 keys, portable and 512-bit inner
/// loops (where the CPU has them) side by side (medians of 5).
/// `cargo test --release --lib time_attention -- --ignored --nocapture`.
#[test]
#[ignore]
fn time_attention() {
    let shape = |heads, kv_heads, head_dim| Dims {
        heads,
        kv_heads,
        head_dim,
        interleaved: false,
        rot: head_dim,
    };
    let mut tilings = Vec::new();
    for wide in [false, true]
        .into_iter()
        .filter(|&w| !w || tiled::wide_here())
    {
        for kb in [16, 32, 64] {
            tilings.push(tiled::Tiling {
                parallel: true,
                kb,
                wide,
            });
        }
    }
    for dims in [shape(9, 3, 64), shape(4, 1, 256)] {
        let (cap, rows, hd) = (4608, 512, dims.head_dim);
        let q = noise(rows * dims.heads * hd, 1);
        let (k, v) = (
            noise(dims.kv_heads * cap * hd, 2),
            noise(dims.kv_heads * cap * hd, 3),
        );
        let kv = KvSlices {
            k: &k,
            v: &v,
            capacity: cap,
            key_blocks: None,
        };
        let seg = SegmentRows {
            start: 0,
            len: rows,
            pos: 4096,
        };
        let mut out = vec![0f32; q.len()];
        let mut ms = vec![Vec::new(); tilings.len()];
        for _ in 0..5 {
            for (i, &tiling) in tilings.iter().enumerate() {
                let t = std::time::Instant::now();
                let segs = [(seg, kv)];
                tiled::attend_tiled(dims, Scoring::causal(hd), &q, &segs, &mut out, tiling);
                ms[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (i, t) in tilings.iter().enumerate() {
            ms[i].sort_by(f64::total_cmp);
            let loops = if t.wide { "512-bit" } else { "portable" };
            println!(
                "head dim {hd}, key blocks of {}, {loops}: {:.1} ms",
                t.kb, ms[i][2]
            );
        }
    }
}
