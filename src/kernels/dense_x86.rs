//! x86-64 kernels for [`super::dense`]: register tiles of `R` vectors of a row group × `C`
//! tokens, on 256-bit registers (AVX2 + FMA + F16C, 16 registers: a group is two vectors) and on
//! 512-bit ones (AVX-512F/VL, 32 registers: a group is one vector).
//!
//! Per input feature a tile loads each vector's 16-bit weights and widens them (F16C's
//! `vcvtph2ps`, or bf16 zero-extended and shifted into an f32's upper half), then multiplies
//! them into every token's accumulators with that token's activation broadcast from memory:
//! `R` loads serve `R × C` multiply-adds and the activations are read one value at a time,
//! so neither stream limits a prefill tile (2 × 12 on 512-bit registers, 2 × 6 on 256-bit).
//! Decode reads the weights once (8 groups at a time for one token on 512-bit registers),
//! prefetching each stream a fixed distance ahead.
//!
//! Every output is one fused multiply-add per input feature in order, the reference's sequence.

use std::arch::x86_64::*;
use std::ops::Range;

use super::dense::{HalfMatrix, HalfType, GROUP};
use super::matmul::OutPtr;

/// Tokens per block: a block's activations stay in cache while every tile of the chunk passes
/// over them (48 × k 4-byte values: 110 KB at k = 576).
const TOKEN_BLOCK: usize = 48;

/// How far ahead of its loads a decode tile prefetches, in input features (32 bytes each):
/// 1 KB per stream, 8 KB for an 8-group tile, well inside L1.
const PREFETCH_FEATURES: usize = 32;

/// A register width: its lane count and the operations a tile needs.
trait Reg {
    type V: Copy;
    const LANES: usize;
    unsafe fn zero() -> Self::V;
    /// The value at `p` in every lane.
    unsafe fn splat(p: *const f32) -> Self::V;
    /// `LANES` 16-bit weights at `p` as f32: bf16 when `BF`, else f16.
    unsafe fn load_w<const BF: bool>(p: *const u16) -> Self::V;
    unsafe fn fma(a: Self::V, b: Self::V, acc: Self::V) -> Self::V;
    unsafe fn store(p: *mut f32, v: Self::V);
}

/// 256-bit registers (AVX2, FMA, F16C).
struct R256;
/// 512-bit registers (AVX-512F and VL).
struct R512;

impl Reg for R256 {
    type V = __m256;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        _mm256_setzero_ps()
    }
    #[inline(always)]
    unsafe fn splat(p: *const f32) -> __m256 {
        _mm256_broadcast_ss(&*p)
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
    unsafe fn store(p: *mut f32, v: __m256) {
        _mm256_storeu_ps(p, v)
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
    unsafe fn splat(p: *const f32) -> __m512 {
        _mm512_set1_ps(*p)
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
    unsafe fn store(p: *mut f32, v: __m512) {
        _mm512_storeu_ps(p, v)
    }
}

/// What a tile reads: the matrix, the activations and the output.
#[derive(Clone, Copy)]
struct Job<'a> {
    w: &'a HalfMatrix,
    x: &'a [f32],
    out: OutPtr,
}

/// Groups `groups` of the output for every token, on 256-bit registers.
pub(super) fn matmul_groups_avx2(
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    groups: Range<usize>,
    out: OutPtr,
) {
    assert!(
        super::has_avx2() && x.len() == t * w.k() && groups.end <= w.groups(),
        "dense avx2 kernel out of shape or unsupported; this is a bug"
    );
    let job = Job { w, x, out };
    // SAFETY: the CPU has AVX2, FMA and F16C (asserted); every pointer a tile forms stays in
    // groups `groups` of `w` and tokens `0..t` of `x` (asserted shapes).
    unsafe {
        match w.half_type() {
            HalfType::F16 => walk256::<false>(job, t, groups),
            HalfType::Bf16 => walk256::<true>(job, t, groups),
        }
    }
}

/// Groups `groups` of the output for every token, on 512-bit registers.
pub(super) fn matmul_groups_avx512(
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    groups: Range<usize>,
    out: OutPtr,
) {
    assert!(
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && x.len() == t * w.k()
            && groups.end <= w.groups(),
        "dense avx512 kernel out of shape or unsupported; this is a bug"
    );
    let job = Job { w, x, out };
    // SAFETY: as in `matmul_groups_avx2`, with AVX-512F and VL present.
    unsafe {
        match w.half_type() {
            HalfType::F16 => walk512::<false>(job, t, groups),
            HalfType::Bf16 => walk512::<true>(job, t, groups),
        }
    }
}

/// A tile function: the outputs of the groups from `g..` for tokens `j..` (its shape is its own).
type TileFn = unsafe fn(&Job, usize, usize);

/// A tile shape for a walk: groups per tile, and `tiles[c - 1]` for `c` tokens.
struct Plan<'a> {
    groups: usize,
    tiles: &'a [TileFn],
}

/// `[f::<BF, R, c>, …]` for each listed token count `c`: a walk's table of tile functions.
macro_rules! tiles {
    ($f:ident, $bf:ident, $r:literal; $($c:literal)+) => {
        [$($f::<$bf, $r, $c> as TileFn),+]
    };
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn walk256<const BF: bool>(job: Job, t: usize, groups: Range<usize>) {
    let many = Plan {
        groups: 1,
        tiles: &tiles!(tile256, BF, 2; 1 2 3 4 5 6),
    };
    let one = Plan {
        groups: 3,
        tiles: &tiles!(tile256, BF, 6; 1),
    };
    walk(&job, t, groups, &one, &many, &many)
}

#[target_feature(enable = "avx512f,avx512vl,avx2,fma,f16c")]
unsafe fn walk512<const BF: bool>(job: Job, t: usize, groups: Range<usize>) {
    let one = Plan {
        groups: 8,
        tiles: &tiles!(tile512, BF, 8; 1),
    };
    let many = Plan {
        groups: 2,
        tiles: &tiles!(tile512, BF, 2; 1 2 3 4 5 6 7 8 9 10 11 12),
    };
    let single = Plan {
        groups: 1,
        tiles: &tiles!(tile512, BF, 1; 1 2 3 4 5 6 7 8 9 10 11 12),
    };
    walk(&job, t, groups, &one, &many, &single)
}

/// Every token block over `groups`: `one`'s tiles for a single token, `many`'s otherwise, and
/// groups left past the plan's multiple in `single`'s one-group tiles.
#[inline(always)]
unsafe fn walk(job: &Job, t: usize, groups: Range<usize>, one: &Plan, many: &Plan, single: &Plan) {
    for tb in (0..t).step_by(TOKEN_BLOCK) {
        let toks = tb..(tb + TOKEN_BLOCK).min(t);
        let plan = if toks.len() == 1 { one } else { many };
        let mut g = groups.start;
        while g + plan.groups <= groups.end {
            group_tile(job, g, toks.clone(), plan.tiles);
            g += plan.groups;
        }
        for g in g..groups.end {
            group_tile(job, g, toks.clone(), single.tiles);
        }
    }
}

/// Groups from `g` for tokens `toks`: tiles as wide as `tiles` has, the rest in one narrower.
#[inline(always)]
unsafe fn group_tile(job: &Job, g: usize, toks: Range<usize>, tiles: &[TileFn]) {
    let mut j = toks.start;
    while j < toks.end {
        let c = (toks.end - j).min(tiles.len());
        tiles[c - 1](job, g, j);
        j += c;
    }
}

/// One register tile on 256-bit registers (`R` vectors: `R / 2` groups), compiled on its own
/// (inlined into a larger function its accumulators spill).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline(never)]
unsafe fn tile256<const BF: bool, const R: usize, const C: usize>(job: &Job, g: usize, j: usize) {
    tile::<R256, BF, R, C>(job, g, j)
}

/// One register tile on 512-bit registers (`R` vectors, one group each), compiled on its own.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma,f16c")]
#[inline(never)]
unsafe fn tile512<const BF: bool, const R: usize, const C: usize>(job: &Job, g: usize, j: usize) {
    tile::<R512, BF, R, C>(job, g, j)
}

/// Outputs of the `R` vectors of rows from group `g0` for tokens `j..j + C`.
#[inline(always)]
unsafe fn tile<S: Reg, const BF: bool, const R: usize, const C: usize>(
    job: &Job,
    g0: usize,
    j: usize,
) {
    let k = job.w.k();
    let per_group = GROUP / S::LANES;
    // Vector `i`: group `g0 + i / per_group`, lanes from `(i % per_group) · LANES`; each input
    // feature moves it `GROUP` elements on.
    let wp: [*const u16; R] = std::array::from_fn(|i| {
        let group = job.w.group(g0 + i / per_group).as_ptr();
        group.add(i % per_group * S::LANES)
    });
    let xp: [*const f32; C] = std::array::from_fn(|c| job.x.as_ptr().add((j + c) * k));
    let mut acc = [[S::zero(); C]; R];
    for kk in 0..k {
        // A decode tile streams its weights once: each vector's stream is prefetched
        // `PREFETCH_FEATURES` input features ahead (past a group's end, into the next group,
        // which follows it in memory), one prefetch per 64-byte line (two input features).
        if C <= 3 && kk % 2 == 0 {
            for &w in &wp {
                let ahead = w.wrapping_add((kk + PREFETCH_FEATURES) * GROUP);
                _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
            }
        }
        let wv: [S::V; R] = std::array::from_fn(|i| S::load_w::<BF>(wp[i].add(kk * GROUP)));
        for (c, &x) in xp.iter().enumerate() {
            let xv = S::splat(x.add(kk));
            for (acc, &w) in acc.iter_mut().zip(&wv) {
                acc[c] = S::fma(w, xv, acc[c]);
            }
        }
    }
    let n = job.w.n();
    let mut lanes = [0f32; GROUP];
    for (i, acc) in acc.iter().enumerate() {
        let row0 = (g0 + i / per_group) * GROUP + i % per_group * S::LANES;
        for (c, &a) in acc.iter().enumerate() {
            S::store(lanes.as_mut_ptr(), a);
            for (l, &v) in lanes[..S::LANES].iter().enumerate() {
                if row0 + l < n {
                    job.out.write(j + c, row0 + l, v);
                }
            }
        }
    }
}
