//! The tiled attention's two inner loops on 512-bit registers (AVX-512F), for the kernel level
//! `avx512-vnni`: scores of 8 query vectors × 32 keys and weighted sums of 4 heads × 64
//! elements per register tile (32 registers allow twice the portable tiles' width and depth,
//! so each load serves more multiply-adds). Lane for lane the same arithmetic as
//! [`super::tiled`]'s portable loops: a score is a sequential fused multiply-add over the head
//! dimension, a weighted sum one over the keys in order, so both paths give the same bits.

use std::arch::x86_64::*;
use std::ops::Range;

/// Whether this CPU runs these loops.
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx512f")
}

/// `w[v, k] = q_v · key k` for every query vector `v` and the first `n` keys (in groups of 16)
/// of the transposed block `kt` (`kb` a multiple of 16, groups as [`super::key_at`]), as
/// [`super::tiled`]'s `score_block`.
pub(super) fn score_block(qv: &[&[f32]], kt: &[f32], hd: usize, n: usize, w: &mut [f32]) {
    let kb = kt.len() / hd;
    assert!(
        available() && kb.is_multiple_of(16) && kt.len() == hd * kb && w.len() >= qv.len() * kb,
        "wide attention scores out of shape; this is a bug"
    );
    assert!(
        qv.iter().all(|q| q.len() >= hd),
        "short query vector; this is a bug"
    );
    // The keys scored: whole groups of 16 up to the one holding key `n - 1`.
    let lim = n.min(kb).next_multiple_of(16);
    let mut v = 0;
    // SAFETY: AVX-512F is present, and every pointer the tiles form stays inside `qv[..][..hd]`,
    // `kt` and `w[..qv.len() * kb]` (asserted above).
    unsafe {
        while v + 8 <= qv.len() {
            score_tile::<8>(&qv[v..v + 8], kt, hd, lim, &mut w[v * kb..]);
            v += 8;
        }
        while v + 4 <= qv.len() {
            score_tile::<4>(&qv[v..v + 4], kt, hd, lim, &mut w[v * kb..]);
            v += 4;
        }
        let w = &mut w[v * kb..];
        match qv.len() - v {
            3 => score_tile::<3>(&qv[v..], kt, hd, lim, w),
            2 => score_tile::<2>(&qv[v..], kt, hd, lim, w),
            1 => score_tile::<1>(&qv[v..], kt, hd, lim, w),
            _ => {}
        }
    }
}

/// [`score_block`] for `Q` query vectors and keys `0..lim` (a multiple of 16 within the
/// block): 32 keys at a time, then 16.
#[target_feature(enable = "avx512f")]
unsafe fn score_tile<const Q: usize>(
    qv: &[&[f32]],
    kt: &[f32],
    hd: usize,
    lim: usize,
    w: &mut [f32],
) {
    let mut k0 = 0;
    while k0 + 32 <= lim {
        score_keys::<Q, 2>(qv, kt, hd, k0, w);
        k0 += 32;
    }
    if k0 < lim {
        score_keys::<Q, 1>(qv, kt, hd, k0, w);
    }
}

/// Scores of `Q` query vectors against keys `k0..k0 + 16 Z` of the block.
#[inline(always)]
unsafe fn score_keys<const Q: usize, const Z: usize>(
    qv: &[&[f32]],
    kt: &[f32],
    hd: usize,
    k0: usize,
    w: &mut [f32],
) {
    let kb = kt.len() / hd;
    let q: [*const f32; Q] = std::array::from_fn(|j| qv[j].as_ptr());
    let mut acc = [[_mm512_setzero_ps(); Z]; Q];
    // Keys k0.. are whole groups of 16 ([`super::key_at`]): group z's element d at z * hd * 16
    // + d * 16.
    const { assert!(super::KEY_GROUP == 16) };
    let mut row = kt.as_ptr().add(k0 * hd);
    for d in 0..hd {
        let keys: [__m512; Z] = std::array::from_fn(|z| _mm512_loadu_ps(row.add(z * hd * 16)));
        for (a, q) in acc.iter_mut().zip(&q) {
            let qd = _mm512_set1_ps(*q.add(d));
            for (x, &k) in a.iter_mut().zip(&keys) {
                *x = _mm512_fmadd_ps(qd, k, *x);
            }
        }
        row = row.add(16);
    }
    for (j, a) in acc.iter().enumerate() {
        for (z, &x) in a.iter().enumerate() {
            _mm512_storeu_ps(w.as_mut_ptr().add(j * kb + k0 + 16 * z), x);
        }
    }
}

/// For each head h of a row, `acc_h += Σ_k w[h, k] · vals[k]` over the visible `keys` of the
/// block, in key order per element, as [`super::tiled`]'s `add_weighted`.
pub(super) fn add_weighted(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let heads = acc.len() / hd;
    assert!(
        available()
            && acc.len() == heads * hd
            && keys.end <= kb
            && w.len() >= heads * kb
            && vals.len() >= keys.len() * hd,
        "wide attention sums out of shape; this is a bug"
    );
    let mut h = 0;
    while h < heads {
        let n = (heads - h).min(4);
        let (a, w) = (&mut acc[h * hd..(h + n) * hd], &w[h * kb..]);
        // SAFETY: AVX-512F is present; the tiles read `w[..n * kb]` at `keys`, `vals[..keys.len()
        // * hd]` and write `a[..n * hd]`, all inside the slices (asserted above).
        unsafe {
            match n {
                4 => heads_sum::<4>(a, hd, kb, w, keys.clone(), vals),
                3 => heads_sum::<3>(a, hd, kb, w, keys.clone(), vals),
                2 => heads_sum::<2>(a, hd, kb, w, keys.clone(), vals),
                _ => heads_sum::<1>(a, hd, kb, w, keys.clone(), vals),
            }
        }
        h += n;
    }
}

/// [`add_weighted`] for `H` heads: 64 elements at a time, then 16, then one.
#[target_feature(enable = "avx512f")]
unsafe fn heads_sum<const H: usize>(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let mut d0 = 0;
    while d0 + 64 <= hd {
        chunk::<H, 4>(acc, hd, kb, d0, w, keys.clone(), vals);
        d0 += 64;
    }
    while d0 + 16 <= hd {
        chunk::<H, 1>(acc, hd, kb, d0, w, keys.clone(), vals);
        d0 += 16;
    }
    for d in d0..hd {
        for h in 0..H {
            let mut a = acc[h * hd + d];
            for (k, row) in keys.clone().zip(vals.chunks_exact(hd)) {
                a = w[h * kb + k].mul_add(row[d], a);
            }
            acc[h * hd + d] = a;
        }
    }
}

/// Elements `d0..d0 + 16 Z` of `H` heads' accumulators over the visible keys.
#[inline(always)]
unsafe fn chunk<const H: usize, const Z: usize>(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    d0: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let at = |h: usize, z: usize| h * hd + d0 + 16 * z;
    let mut a: [[__m512; Z]; H] = std::array::from_fn(|h| {
        std::array::from_fn(|z| _mm512_loadu_ps(acc.as_ptr().add(at(h, z))))
    });
    let mut row = vals.as_ptr().add(d0);
    for k in keys {
        let v: [__m512; Z] = std::array::from_fn(|z| _mm512_loadu_ps(row.add(16 * z)));
        for (h, a) in a.iter_mut().enumerate() {
            let wk = _mm512_set1_ps(*w.get_unchecked(h * kb + k));
            for (x, &v) in a.iter_mut().zip(&v) {
                *x = _mm512_fmadd_ps(wk, v, *x);
            }
        }
        row = row.add(hd);
    }
    for (h, a) in a.iter().enumerate() {
        for (z, &x) in a.iter().enumerate() {
            _mm512_storeu_ps(acc.as_mut_ptr().add(at(h, z)), x);
        }
    }
}
