//! x86-64 kernels for [`super::dense`]: one generic register tile of `R` weight rows × `C`
//! tokens, instantiated on 256-bit registers (AVX2 + FMA + F16C, 16 registers: tiles of 4 × 2)
//! and on 512-bit ones (AVX-512F, 32 registers: 4 × 5, or 8 × 1 for a single token). Per step
//! of the register width along `k` the tile converts each row's weights once (F16C's
//! `vcvtph2ps`, or bf16 widened and shifted into an f32's upper half) and multiplies them into
//! every token's activations, so a weight load serves `C` multiply-adds.
//!
//! An output element is the same sequence of operations in every tile shape (one lane-wise
//! fused multiply-add per step, a fixed horizontal sum, the tail of `k` in order), so T and the
//! tiling never change its bits.

use std::arch::x86_64::*;
use std::ops::Range;

use super::dense::{HalfMatrix, HalfType};
use super::matmul::OutPtr;

/// Tokens per block: a block's activations stay in cache while every row tile of the chunk
/// passes over them (48 × k 4-byte values: 110 KB at k = 576).
const TOKEN_BLOCK: usize = 48;

/// A register width: its lane count and the operations a tile needs.
trait Reg {
    type V: Copy;
    const LANES: usize;
    unsafe fn zero() -> Self::V;
    unsafe fn load(p: *const f32) -> Self::V;
    /// `LANES` 16-bit weights at `p` as f32: bf16 when `BF`, else f16.
    unsafe fn load_w<const BF: bool>(p: *const u16) -> Self::V;
    unsafe fn fma(a: Self::V, b: Self::V, acc: Self::V) -> Self::V;
    unsafe fn hsum(v: Self::V) -> f32;
}

/// 256-bit registers (AVX2, FMA, F16C).
struct R256;
/// 512-bit registers (AVX-512F).
struct R512;

impl Reg for R256 {
    type V = __m256;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        _mm256_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn load_w<const BF: bool>(p: *const u16) -> __m256 {
        let h = _mm_loadu_si128(p.cast());
        match BF {
            true => _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h))),
            false => _mm256_cvtph_ps(h),
        }
    }
    #[inline(always)]
    unsafe fn fma(a: __m256, b: __m256, acc: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, acc)
    }
    #[inline(always)]
    unsafe fn hsum(v: __m256) -> f32 {
        super::simd::hsum(v)
    }
}

impl Reg for R512 {
    type V = __m512;
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        _mm512_setzero_ps()
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn load_w<const BF: bool>(p: *const u16) -> __m512 {
        let h = _mm256_loadu_si256(p.cast());
        match BF {
            true => _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h))),
            false => _mm512_cvtph_ps(h),
        }
    }
    #[inline(always)]
    unsafe fn fma(a: __m512, b: __m512, acc: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, acc)
    }
    #[inline(always)]
    unsafe fn hsum(v: __m512) -> f32 {
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
        let s = _mm256_add_ps(_mm512_castps512_ps256(v), hi);
        super::simd::hsum(s)
    }
}

/// What a tile reads: the matrix, the activations and the output.
#[derive(Clone, Copy)]
struct Job<'a> {
    w: &'a HalfMatrix,
    x: &'a [f32],
    out: OutPtr,
}

/// Rows `rows` of the output for every token, on 256-bit registers.
pub(super) fn matmul_rows_avx2(
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    rows: Range<usize>,
    out: OutPtr,
) {
    assert!(
        super::has_avx2() && x.len() == t * w.k() && rows.end <= w.n(),
        "dense avx2 kernel out of shape or unsupported; this is a bug"
    );
    let job = Job { w, x, out };
    // SAFETY: the CPU has AVX2, FMA and F16C (asserted); every pointer a tile forms stays in
    // rows `rows` of `w` and tokens `0..t` of `x` (asserted shapes).
    unsafe {
        match w.half_type() {
            HalfType::F16 => walk256::<false>(job, t, rows),
            HalfType::Bf16 => walk256::<true>(job, t, rows),
        }
    }
}

/// Rows `rows` of the output for every token, on 512-bit registers.
pub(super) fn matmul_rows_avx512(
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    rows: Range<usize>,
    out: OutPtr,
) {
    assert!(
        is_x86_feature_detected!("avx512f") && x.len() == t * w.k() && rows.end <= w.n(),
        "dense avx512 kernel out of shape or unsupported; this is a bug"
    );
    let job = Job { w, x, out };
    // SAFETY: as in `matmul_rows_avx2`, with AVX-512F present.
    unsafe {
        match w.half_type() {
            HalfType::F16 => walk512::<false>(job, t, rows),
            HalfType::Bf16 => walk512::<true>(job, t, rows),
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn walk256<const BF: bool>(job: Job, t: usize, rows: Range<usize>) {
    let four: [TileFn; 2] = [tile256::<BF, 4, 1>, tile256::<BF, 4, 2>];
    let one: [TileFn; 2] = [tile256::<BF, 1, 1>, tile256::<BF, 1, 2>];
    for tb in (0..t).step_by(TOKEN_BLOCK) {
        let toks = tb..(tb + TOKEN_BLOCK).min(t);
        let mut r = rows.start;
        while r + 4 <= rows.end {
            row_tile(&job, r, toks.clone(), &four);
            r += 4;
        }
        for r in r..rows.end {
            row_tile(&job, r, toks.clone(), &one);
        }
    }
}

#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn walk512<const BF: bool>(job: Job, t: usize, rows: Range<usize>) {
    let four: [TileFn; 5] = [
        tile512::<BF, 4, 1>,
        tile512::<BF, 4, 2>,
        tile512::<BF, 4, 3>,
        tile512::<BF, 4, 4>,
        tile512::<BF, 4, 5>,
    ];
    let one: [TileFn; 5] = [
        tile512::<BF, 1, 1>,
        tile512::<BF, 1, 2>,
        tile512::<BF, 1, 3>,
        tile512::<BF, 1, 4>,
        tile512::<BF, 1, 5>,
    ];
    for tb in (0..t).step_by(TOKEN_BLOCK) {
        let toks = tb..(tb + TOKEN_BLOCK).min(t);
        let mut r = rows.start;
        if toks.len() == 1 {
            while r + 8 <= rows.end {
                tile512::<BF, 8, 1>(&job, r, toks.start);
                r += 8;
            }
        }
        while r + 4 <= rows.end {
            row_tile(&job, r, toks.clone(), &four);
            r += 4;
        }
        for r in r..rows.end {
            row_tile(&job, r, toks.clone(), &one);
        }
    }
}

/// A tile function: the outputs of rows `r..` for tokens `j..` (its shape is its own).
type TileFn = unsafe fn(&Job, usize, usize);

/// Rows from `r` for tokens `toks`: tiles as wide as `tiles` has (`tiles[c - 1]` covers `c`
/// tokens), the rest in one narrower tile.
#[inline(always)]
unsafe fn row_tile(job: &Job, r: usize, toks: Range<usize>, tiles: &[TileFn]) {
    let mut j = toks.start;
    while j < toks.end {
        let c = (toks.end - j).min(tiles.len());
        tiles[c - 1](job, r, j);
        j += c;
    }
}

/// One register tile on 256-bit registers, compiled on its own (inlined into a larger function
/// its accumulators spill).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline(never)]
unsafe fn tile256<const BF: bool, const R: usize, const C: usize>(job: &Job, r: usize, j: usize) {
    tile::<R256, BF, R, C>(job, r, j)
}

/// One register tile on 512-bit registers, compiled on its own.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
#[inline(never)]
unsafe fn tile512<const BF: bool, const R: usize, const C: usize>(job: &Job, r: usize, j: usize) {
    tile::<R512, BF, R, C>(job, r, j)
}

/// Outputs of rows `r..r + R` for tokens `j..j + C`.
#[inline(always)]
unsafe fn tile<S: Reg, const BF: bool, const R: usize, const C: usize>(
    job: &Job,
    r: usize,
    j: usize,
) {
    let k = job.w.k();
    let body = k - k % S::LANES;
    let wp: [*const u16; R] = std::array::from_fn(|i| job.w.row(r + i).as_ptr());
    let xp: [*const f32; C] = std::array::from_fn(|c| job.x.as_ptr().add((j + c) * k));
    let mut acc = [[S::zero(); C]; R];
    let mut kk = 0;
    while kk < body {
        // The next row tile's weights, as far ahead as this tile reads: a decode step streams
        // each row once, and short rows end before the hardware prefetcher has ramped up.
        for &w in &wp {
            _mm_prefetch::<_MM_HINT_T0>(w.wrapping_add(R * k + kk).cast());
        }
        let wv: [S::V; R] = std::array::from_fn(|i| S::load_w::<BF>(wp[i].add(kk)));
        let xv: [S::V; C] = std::array::from_fn(|c| S::load(xp[c].add(kk)));
        for (acc, &w) in acc.iter_mut().zip(&wv) {
            for (a, &x) in acc.iter_mut().zip(&xv) {
                *a = S::fma(w, x, *a);
            }
        }
        kk += S::LANES;
    }
    let ty = job.w.half_type();
    for (i, acc) in acc.iter().enumerate() {
        for (c, &a) in acc.iter().enumerate() {
            let mut s = S::hsum(a);
            for kk in body..k {
                s += ty.to_f32(*wp[i].add(kk)) * *xp[c].add(kk);
            }
            job.out.write(j + c, r + i, s);
        }
    }
}
