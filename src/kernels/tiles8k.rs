//! The K-quant tile kernels over repacked weights ([`super::repack_k`]): the 8 columns of a
//! tile in the 8 lanes of one register, as [`super::tiles8`] does for the 32-value types.
//!
//! Per super-block and row: each sub-block's integer dot of all 8 columns (dots of broadcast
//! groups of 4 activations), times the 8 columns' scales of that sub-block, summed over the
//! sub-blocks: each lane's exact `sum(sc * dot)`. Q4_K's min term `sum(m * bsum)` and Q6_K's
//! offset `32 * sum(sc * bsum)` come the same way from the activations' 16-value sums. Then
//! `acc = fma(d_w * d_a, sumi, acc)` (and for Q4_K `macc = fma(dmin_w * d_a, msum, macc)`, the
//! result `acc - macc`): the bits of [`super::scalar::dot_row_fused`] at every level.
//!
//! Where the level's dot goes through i16 pairs (AVX2), a Q4_K sub-block's 8 groups (a Q6_K
//! sub-block's pairs of groups) of pair sums are added in i16 and widened by one `vpmaddwd`
//! with the sub-block's scale, in place of a widening per group and an i32 multiply. Gemma 3's
//! `ffn_down` shape, `time_the_layouts` (repack_tests), 8 alternated pairs, T=512 medians:
//! Q4_K 8889 -> 8072 µs, Q6_K 17 837 -> 12 870 µs (a slow phase of this VM; pair ratios 1.10
//! and 1.54).
//!
//! A prefill (8 rows or more) decodes a Q6_K column tile's 6-bit values once for all its row
//! tiles ([`Tiled::DECODES`], 64 registers per tile-block, 16 KiB at Gemma 3's `k` = 2048):
//! `time_the_layouts` Q6_K T=512, 4 alternated pairs, medians 15 008 -> 9 088 µs (pair ratios
//! 1.35-1.84); Gemma 3 prefill 512 (engine bench `--prefill-only --rounds 3`, 3 alternated
//! runs) medians 527.7 -> 570.2 tok/s.

// Tiles index several parallel arrays with one row index.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::quantize::Acts;
use super::repack_k::{Q4K_TILE_BYTES, Q6K_TILE_BYTES};
use super::simd::IDot;
use super::tiles8::{group, Tiled};

/// Q4_K × Q8_K.
pub(crate) struct Q4K;

/// The 8 columns' scales of sub-block `s`, one per i32 lane.
#[inline(always)]
unsafe fn scales(blk: *const u8, s: usize) -> __m256i {
    _mm256_cvtepu8_epi32(_mm_loadl_epi64(blk.add(32 + 8 * s).cast()))
}

/// The low and high nibbles of the 32 bytes at `q`, as values 0..16.
#[inline(always)]
unsafe fn nibbles(q: *const u8, mask: __m256i) -> (__m256i, __m256i) {
    let q = _mm256_loadu_si256(q.cast());
    (
        _mm256_and_si256(q, mask),
        _mm256_and_si256(_mm256_srli_epi16(q, 4), mask),
    )
}

/// A Q4_K sub-block's running dot: where the level's dot goes through i16 pairs, the pair
/// sums added in i16 (8 groups at most 8 x 2 x 15 x 127 = 30 480), else the level's i32 dot.
#[inline(always)]
unsafe fn sub_dot<D: IDot>(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
    match D::I16_PAIRS {
        true => _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s)),
        false => D::dot(acc, u, s),
    }
}

/// A [`sub_dot`] times the 8 columns' scales `sc` (one per i32 lane, below 2^15), in i32:
/// i16 sums widened by one `vpmaddwd` with the scale in both halves of each lane.
#[inline(always)]
unsafe fn scaled<D: IDot>(dot: __m256i, sc: __m256i) -> __m256i {
    match D::I16_PAIRS {
        true => _mm256_madd_epi16(dot, _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16))),
        false => _mm256_mullo_epi32(dot, sc),
    }
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
            if r0 == 0 {
                super::tiles8::prefetch_ahead(blk, Self::BYTES);
            }
            let mut sumi = [_mm256_setzero_si256(); R];
            for g in 0..4 {
                let (mut lo, mut hi) = ([_mm256_setzero_si256(); R], [_mm256_setzero_si256(); R]);
                for c in 0..8 {
                    let (q_lo, q_hi) = nibbles(blk.add(160 + (8 * g + c) * 32), mask);
                    for r in 0..R {
                        let a = acts
                            .qs
                            .as_ptr()
                            .add((r0 + r) * acts.k + b * 256 + 64 * g + 4 * c);
                        lo[r] = sub_dot::<D>(lo[r], q_lo, group(a));
                        hi[r] = sub_dot::<D>(hi[r], q_hi, group(a.add(32)));
                    }
                }
                let (s_lo, s_hi) = (scales(blk, 2 * g), scales(blk, 2 * g + 1));
                for r in 0..R {
                    let p = _mm256_add_epi32(scaled::<D>(lo[r], s_lo), scaled::<D>(hi[r], s_hi));
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

/// Q6_K × Q8_K.
pub(crate) struct Q6K;

/// The 8 columns' i16 scale pairs of sub-blocks `2p`, `2p + 1`, one pair per i32 lane.
#[inline(always)]
unsafe fn scale_pairs(blk: *const u8, p: usize) -> __m256i {
    _mm256_cvtepi8_epi16(_mm_loadu_si128(blk.add(16 + 16 * p).cast()))
}

/// Each column's `sum over sub-blocks s of sc_s * bsum_s` for the activations' 16 sums `bs`.
#[inline(always)]
unsafe fn scale_sum(blk: *const u8, bs: *const i16) -> __m256i {
    let mut sum = _mm256_setzero_si256();
    for half in 0..2 {
        let sums = _mm256_broadcastsi128_si256(_mm_loadu_si128(bs.add(8 * half).cast()));
        let p = 4 * half;
        let s01 = _mm256_add_epi32(
            _mm256_madd_epi16(scale_pairs(blk, p), _mm256_shuffle_epi32::<0x00>(sums)),
            _mm256_madd_epi16(scale_pairs(blk, p + 1), _mm256_shuffle_epi32::<0x55>(sums)),
        );
        let s23 = _mm256_add_epi32(
            _mm256_madd_epi16(scale_pairs(blk, p + 2), _mm256_shuffle_epi32::<0xAA>(sums)),
            _mm256_madd_epi16(scale_pairs(blk, p + 3), _mm256_shuffle_epi32::<0xFF>(sums)),
        );
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(s01, s23));
    }
    sum
}

/// The 6-bit values of quarter `q` (values `32q + l..`) of a 128-value half, for the 4-byte
/// chunk `l / 4`: `ql_a` is the chunk of `ql[l]`, `ql_b` of `ql[l + 32]`, `qh` of `qh[l]`.
#[inline(always)]
unsafe fn q6_values(q: usize, ql_a: __m256i, ql_b: __m256i, qh: __m256i) -> __m256i {
    let (m4, hi2) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x30));
    let (low, high) = match q {
        0 => (ql_a, _mm256_slli_epi16(qh, 4)),
        1 => (ql_b, _mm256_slli_epi16(qh, 2)),
        2 => (_mm256_srli_epi16(ql_a, 4), qh),
        _ => (_mm256_srli_epi16(ql_b, 4), _mm256_srli_epi16(qh, 2)),
    };
    _mm256_or_si256(_mm256_and_si256(low, m4), _mm256_and_si256(high, hi2))
}

/// Value registers of a Q6_K tile-block: 2 halves × 4 quarters × 8 chunks of 4 values.
const Q6K_REGS: usize = 64;

/// Register `(4n + q) * 8 + l4` of the Q6_K tile-block at `blk`: half `n`, quarter `q`, chunk
/// `l4` of 8 columns' 6-bit values.
#[inline(always)]
unsafe fn q6_register(blk: *const u8, n: usize, q: usize, l4: usize) -> __m256i {
    let chunk = |at: usize, c: usize| _mm256_loadu_si256(blk.add(at + 32 * c).cast::<__m256i>());
    q6_values(
        q,
        chunk(144, 16 * n + l4),
        chunk(144, 16 * n + 8 + l4),
        chunk(1168, 8 * n + l4),
    )
}

impl Tiled for Q6K {
    const BYTES: usize = Q6K_TILE_BYTES;
    /// A prefill decodes the 6-bit values (3 loads, 2 shifts, 2 masks and an or per register)
    /// once per column tile.
    const DECODES: bool = true;
    const REGS: usize = Q6K_REGS;

    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize>(w: *const u8, acts: &Acts, r0: usize) -> [__m256; R] {
        q6_tile::<D, R>(w, acts, r0, |blk, _, n, q, l4| q6_register(blk, n, q, l4))
    }

    #[inline(always)]
    unsafe fn decode(w: *const u8, nb: usize, out: &mut [__m256i]) {
        for (b, regs) in out[..Q6K_REGS * nb].chunks_exact_mut(Q6K_REGS).enumerate() {
            let blk = w.add(b * Self::BYTES);
            for (i, reg) in regs.iter_mut().enumerate() {
                *reg = q6_register(blk, i / 32, i / 8 % 4, i % 8);
            }
        }
    }

    #[inline(always)]
    unsafe fn tile_decoded<D: IDot, const R: usize>(
        w: *const u8,
        vals: &[__m256i],
        acts: &Acts,
        r0: usize,
    ) -> [__m256; R] {
        let vals = vals.as_ptr();
        q6_tile::<D, R>(w, acts, r0, |_, b, n, q, l4| {
            vals.add(Q6K_REGS * b + (4 * n + q) * 8 + l4).read()
        })
    }
}

/// [`Tiled::tile`] of Q6_K, the value register of block `b`, half `n`, quarter `q`, chunk
/// `l4` from `values(blk, b, n, q, l4)`.
#[inline(always)]
unsafe fn q6_tile<D: IDot, const R: usize>(
    w: *const u8,
    acts: &Acts,
    r0: usize,
    values: impl Fn(*const u8, usize, usize, usize, usize) -> __m256i,
) -> [__m256; R] {
    let nb = acts.blocks();
    let mut acc = [_mm256_setzero_ps(); R];
    for b in 0..nb {
        let blk = w.add(b * Q6K::BYTES);
        if r0 == 0 {
            super::tiles8::prefetch_ahead(blk, Q6K::BYTES);
        }
        let mut sumi = [_mm256_setzero_si256(); R];
        for n in 0..2 {
            for q in 0..4 {
                // Sub-blocks 8n + 2q (chunks 0..4) and 8n + 2q + 1 (chunks 4..8).
                for part in 0..2 {
                    let values = |l4: usize| values(blk, b, n, q, l4);
                    let at = |r: usize, l4: usize| {
                        let at = b * 256 + 128 * n + 32 * q + 4 * l4;
                        group(acts.qs.as_ptr().add((r0 + r) * acts.k + at))
                    };
                    // The pair of sub-block 8n + 2q + part.
                    let pair = scale_pairs(blk, 4 * n + q);
                    if D::I16_PAIRS {
                        // Two groups' pair sums added in i16 (at most 2 x 2 x 63 x 127 =
                        // 32 004), widened by a multiply with the scale in both halves.
                        let sc = match part {
                            0 => {
                                _mm256_shufflehi_epi16::<0xA0>(_mm256_shufflelo_epi16::<0xA0>(pair))
                            }
                            _ => {
                                _mm256_shufflehi_epi16::<0xF5>(_mm256_shufflelo_epi16::<0xF5>(pair))
                            }
                        };
                        for l4 in (4 * part..4 * part + 4).step_by(2) {
                            let (v0, v1) = (values(l4), values(l4 + 1));
                            for r in 0..R {
                                let p = _mm256_add_epi16(
                                    _mm256_maddubs_epi16(v0, at(r, l4)),
                                    _mm256_maddubs_epi16(v1, at(r, l4 + 1)),
                                );
                                sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p, sc));
                            }
                        }
                        continue;
                    }
                    let mut s = [_mm256_setzero_si256(); R];
                    for l4 in 4 * part..4 * part + 4 {
                        let v = values(l4);
                        for r in 0..R {
                            s[r] = D::dot(s[r], v, at(r, l4));
                        }
                    }
                    // Its i16 half sign-extended.
                    let sc = match part {
                        0 => _mm256_srai_epi32(_mm256_slli_epi32(pair, 16), 16),
                        _ => _mm256_srai_epi32(pair, 16),
                    };
                    for r in 0..R {
                        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_mullo_epi32(s[r], sc));
                    }
                }
            }
        }
        let d = _mm256_cvtph_ps(_mm_loadu_si128(blk.cast()));
        for r in 0..R {
            let i = (r0 + r) * nb + b;
            let offset = scale_sum(blk, acts.bsums.as_ptr().add(i * 16));
            let sumi = _mm256_sub_epi32(sumi[r], _mm256_slli_epi32(offset, 5));
            let da = _mm256_set1_ps(*acts.d.get_unchecked(i));
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(sumi), acc[r]);
        }
    }
    acc
}
