//! The AVX2 + FMA + F16C level: [`super::simd`] tiles with the u8 × i8 dot done by
//! `vpmaddubsw` (pairs into i16) then `vpmaddwd` by ones (into i32). Inputs never saturate
//! the i16 pairs: weights are at most 31 (Q4/Q5) or |w| ≤ 128 (Q8_0), activations |a| ≤ 127.
//! 16 ymm registers: tiles of 4 rows × 2 columns. The repacked tiles add a 4- or 5-bit block's
//! pair sums in i16 before widening ([`tiles8`]): a 512-token prefill of the default model
//! (Q4_1) went from 709.2 / 681.6 to 805.6 / 841.2 tok/s (engine bench, medians of 5, two
//! runs each), Gemma 3 (its Q5_0 matrices) from 717.5 / 697.2 to 738.9 / 757.8 (medians of 3).

use std::arch::x86_64::*;
use std::ops::Range;

use super::blocks::QType;
use super::kquants;
use super::matmul::OutPtr;
use super::quantize::Acts;
use super::simd::{self, Ctx, IDot, Tile};
use super::tiles8;

struct Maddubs;

impl IDot for Maddubs {
    const I16_PAIRS: bool = true;
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        let pairs = _mm256_maddubs_epi16(u, s);
        _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn run<K: Tile>(ctx: &Ctx, cols: Range<usize>) {
    simd::run::<K, Maddubs, 2, 1>(ctx, cols)
}

/// Columns `cols` of `out = acts · Wᵀ`.
pub(crate) fn matmul_cols(qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    assert!(
        super::has_avx2(),
        "AVX2 kernel on a CPU without AVX2; this is a bug"
    );
    let ctx = Ctx::new(qtype, w, acts, out, cols.end);
    // SAFETY: the CPU has the features (asserted); `w` holds every row in `cols` (asserted);
    // `acts` holds `rows` rows of `blocks` blocks; `out` is `[rows, n]` with n ≥ cols.end.
    unsafe {
        match qtype {
            QType::Q4_1 => run::<simd::Q4_1>(&ctx, cols),
            QType::Q8_0 => run::<simd::Q8_0>(&ctx, cols),
            QType::Q4_0 => run::<simd::Offset<simd::Q4_0>>(&ctx, cols),
            QType::Q5_0 => run::<simd::Offset<simd::Q5_0>>(&ctx, cols),
            QType::Q4K => run::<kquants::Q4K>(&ctx, cols),
            QType::Q6K => run::<kquants::Q6K>(&ctx, cols),
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tiles<K: tiles8::Tiled>(w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    tiles8::run::<K, Maddubs, 4>(w, acts, cols, out)
}

/// Columns `cols` of `out = acts · Wᵀ` for repacked weights `w` ([`super::repack`]).
pub(crate) fn tiles_cols(qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    assert!(
        super::has_avx2(),
        "AVX2 kernel on a CPU without AVX2; this is a bug"
    );
    // SAFETY: the CPU has the features (asserted); `tiles8::run` checks that `w` holds every
    // tile of `cols`; `acts` holds `rows` rows of `blocks` blocks; `out` is `[rows, n]`.
    unsafe {
        match qtype {
            QType::Q4_0 => tiles::<tiles8::Q4_0>(w, acts, cols, out),
            QType::Q4_1 => tiles::<tiles8::Q4_1>(w, acts, cols, out),
            QType::Q5_0 => tiles::<tiles8::Q5_0>(w, acts, cols, out),
            QType::Q8_0 => tiles::<tiles8::Q8_0>(w, acts, cols, out),
            QType::Q4K => tiles::<super::tiles8k::Q4K>(w, acts, cols, out),
            QType::Q6K => tiles::<super::tiles8k::Q6K>(w, acts, cols, out),
        }
    }
}
