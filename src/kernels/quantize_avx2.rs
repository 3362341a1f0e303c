//! Activation blocks quantized with AVX2 intrinsics: the same values as
//! [`super::quantize`]'s portable functions, whose compiled loops spent most of their time on
//! the per-value NaN handling of `f32::max` and `as i8` (7 % of a Gemma 3 prefill profile).
//!
//! Value for value: the maximum magnitude ignores NaNs (`vmaxps` keeps its second operand
//! when the first is NaN), rounding is the portable one (half away from zero as
//! `trunc(t + copysign(0.49999997, t))`, as LLVM lowers `round`; ties to even for Q8_K), a NaN
//! product becomes 0 as `as i8` makes it, and the saturating packs clamp as `as i8` and
//! `min(127)` do (products stay within ±127.0001 whenever they are finite).

use std::arch::x86_64::*;

use super::blocks::{QK, QK_K};

/// The largest `|x|` over `v` (NaNs ignored, 0 for none).
#[inline(always)]
unsafe fn amax(v: &[__m256]) -> f32 {
    let magnitude = _mm256_set1_ps(-0.0);
    let mut m = _mm256_setzero_ps();
    for &x in v {
        m = _mm256_max_ps(_mm256_andnot_ps(magnitude, x), m);
    }
    let h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    let h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    let h = _mm_max_ss(h, _mm_movehdup_ps(h));
    _mm_cvtss_f32(h)
}

/// `t` with NaN lanes set to 0.
#[inline(always)]
unsafe fn nan_to_zero(t: __m256) -> __m256 {
    _mm256_and_ps(_mm256_cmp_ps(t, t, _CMP_ORD_Q), t)
}

/// 32 values (already integral, within ±127.0001 or 0) into 32 bytes in order, saturating.
#[inline(always)]
unsafe fn pack(r: [__m256; 4]) -> __m256i {
    let i: [__m256i; 4] = r.map(|x| _mm256_cvttps_epi32(x));
    let a = _mm256_packs_epi32(i[0], i[1]);
    let b = _mm256_packs_epi32(i[2], i[3]);
    let p = _mm256_packs_epi16(a, b);
    _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
}

/// Sums of each 4 consecutive signed bytes of `q`, as 8 i32 in order.
#[inline(always)]
unsafe fn sums_of_4(q: __m256i) -> __m256i {
    let pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
    _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
}

/// Rounds half away from zero (`f32::round`) lanes of magnitude below 2^23.
#[inline(always)]
unsafe fn round_away(t: __m256) -> __m256 {
    let half = _mm256_set1_ps(0.49999997);
    let sign = _mm256_and_ps(t, _mm256_set1_ps(-0.0));
    let biased = _mm256_add_ps(t, _mm256_or_ps(half, sign));
    _mm256_round_ps(biased, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
}

/// One Q8_0 / Q8_1 block of [`QK`] values: the values into `qs`, their sums of 4 into
/// `sum4`; returns the scale `amax / 127` (before any f16 rounding) and the values' sum.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn q8_block(xs: &[f32], qs: &mut [i8], sum4: &mut [i32; 8]) -> (f32, i32) {
    assert!(
        xs.len() == QK && qs.len() == QK,
        "Q8 block of {}; this is a bug",
        xs.len()
    );
    let v: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(xs.as_ptr().add(8 * i)));
    let d = amax(&v) / 127.0;
    let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
    let q = pack(v.map(|x| nan_to_zero(round_away(_mm256_mul_ps(x, id)))));
    _mm256_storeu_si256(qs.as_mut_ptr().cast(), q);
    _mm256_storeu_si256(sum4.as_mut_ptr().cast(), sums_of_4(q));
    (d, sum4.iter().sum())
}

/// One Q8_K block of [`QK_K`] values into `qs` and its 16 sums of 16 into `bsums`, given the
/// first value of the largest magnitude `max` (non-zero); the caller returns `1 / iscale`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn q8k_block(xs: &[f32], max: f32, qs: &mut [i8], bsums: &mut [i16]) -> f32 {
    assert!(
        xs.len() == QK_K && qs.len() == QK_K && bsums.len() == 16,
        "Q8_K block of {}; this is a bug",
        xs.len()
    );
    let iscale = -127.0 / max;
    let s = _mm256_set1_ps(iscale);
    for c in 0..QK_K / 32 {
        let v: [__m256; 4] =
            std::array::from_fn(|i| _mm256_loadu_ps(xs.as_ptr().add(32 * c + 8 * i)));
        let r = v.map(|x| {
            let t = _mm256_round_ps(
                _mm256_mul_ps(s, x),
                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
            );
            nan_to_zero(t)
        });
        let q = pack(r);
        _mm256_storeu_si256(qs.as_mut_ptr().add(32 * c).cast(), q);
        let mut s4 = [0i32; 8];
        _mm256_storeu_si256(s4.as_mut_ptr().cast(), sums_of_4(q));
        bsums[2 * c] = (s4[0] + s4[1] + s4[2] + s4[3]) as i16;
        bsums[2 * c + 1] = (s4[4] + s4[5] + s4[6] + s4[7]) as i16;
    }
    iscale
}
