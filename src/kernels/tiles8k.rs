//! The Q4_K tile kernel over repacked weights ([`super::repack_k`]): the 8 columns of a tile in
//! the 8 lanes of one register, as [`super::tiles8`] does for the 32-value types.
//!
//! Per super-block and row: each sub-block's integer dot of all 8 columns (8 dots of a
//! broadcast group of 4 activations), times the 8 columns' scales of that sub-block, summed
//! over the 8 sub-blocks: each lane's exact `sum(sc * dot)`; the min term `sum(m * bsum)` the
//! same way from the activations' 16-value sums. Then `acc = fma(d_w * d_a, sumi, acc)` and
//! `macc = fma(dmin_w * d_a, msum, macc)`, and the column's result is `acc - macc`: the bits
//! of [`super::scalar::dot_row_fused`] at every level.

use std::arch::x86_64::*;

use super::quantize::Acts;
use super::repack_k::Q4K_TILE_BYTES;
use super::simd::IDot;
use super::tiles8::{group, Tiled};

/// Q4_K × Q8_K.
pub(crate) struct Q4K;

/// The 8 columns' scales of sub-block `s`, one per i32 lane.
#[inline(always)]
unsafe fn scales(blk: *const u8, s: usize) -> __m256i {
    _mm256_cvtepu8_epi32(_mm_loadl_epi64(blk.add(32 + 8 * s).cast()))
}

/// Each column's `sum over sub-blocks s of m_s * bsum_s` for the activations' 16 sums `bs`.
#[inline(always)]
unsafe fn min_sum(blk: *const u8, bs: *const i16) -> __m256i {
    // The 8 sub-block sums as 4 i16 pairs, both 128-bit halves alike.
    let sums = _mm_hadd_epi16(
        _mm_loadu_si128(bs.cast()),
        _mm_loadu_si128(bs.add(8).cast()),
    );
    let sums = _mm256_broadcastsi128_si256(sums);
    let mins = |p: usize| _mm256_cvtepu8_epi16(_mm_loadu_si128(blk.add(96 + 16 * p).cast()));
    let s01 = _mm256_add_epi32(
        _mm256_madd_epi16(mins(0), _mm256_shuffle_epi32::<0x00>(sums)),
        _mm256_madd_epi16(mins(1), _mm256_shuffle_epi32::<0x55>(sums)),
    );
    let s23 = _mm256_add_epi32(
        _mm256_madd_epi16(mins(2), _mm256_shuffle_epi32::<0xAA>(sums)),
        _mm256_madd_epi16(mins(3), _mm256_shuffle_epi32::<0xFF>(sums)),
    );
    _mm256_add_epi32(s01, s23)
}

impl Tiled for Q4K {
    const BYTES: usize = Q4K_TILE_BYTES;

    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize>(w: *const u8, acts: &Acts, r0: usize) -> [__m256; R] {
        let nb = acts.blocks();
        let mask = _mm256_set1_epi8(0x0F);
        let (mut acc, mut macc) = ([_mm256_setzero_ps(); R], [_mm256_setzero_ps(); R]);
        for b in 0..nb {
            let blk = w.add(b * Self::BYTES);
            let mut sumi = [_mm256_setzero_si256(); R];
            for g in 0..4 {
                let (mut lo, mut hi) = ([_mm256_setzero_si256(); R], [_mm256_setzero_si256(); R]);
                for c in 0..8 {
                    let q = _mm256_loadu_si256(blk.add(160 + (8 * g + c) * 32).cast());
                    let q_lo = _mm256_and_si256(q, mask);
                    let q_hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
                    for r in 0..R {
                        let a = acts
                            .qs
                            .as_ptr()
                            .add((r0 + r) * acts.k + b * 256 + 64 * g + 4 * c);
                        lo[r] = D::dot(lo[r], q_lo, group(a));
                        hi[r] = D::dot(hi[r], q_hi, group(a.add(32)));
                    }
                }
                let (s_lo, s_hi) = (scales(blk, 2 * g), scales(blk, 2 * g + 1));
                for r in 0..R {
                    let p = _mm256_add_epi32(
                        _mm256_mullo_epi32(lo[r], s_lo),
                        _mm256_mullo_epi32(hi[r], s_hi),
                    );
                    sumi[r] = _mm256_add_epi32(sumi[r], p);
                }
            }
            let d = _mm256_cvtph_ps(_mm_loadu_si128(blk.cast()));
            let dmin = _mm256_cvtph_ps(_mm_loadu_si128(blk.add(16).cast()));
            for r in 0..R {
                let i = (r0 + r) * nb + b;
                let da = _mm256_set1_ps(*acts.d.get_unchecked(i));
                let sumf = _mm256_cvtepi32_ps(sumi[r]);
                acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), sumf, acc[r]);
                let msum = _mm256_cvtepi32_ps(min_sum(blk, acts.bsums.as_ptr().add(i * 16)));
                macc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dmin, da), msum, macc[r]);
            }
        }
        std::array::from_fn(|r| _mm256_sub_ps(acc[r], macc[r]))
    }
}
