//! x86-64 tiles for the K-quants against Q8_K activations (256-value super-blocks), after
//! ggml's AVX2 `vec_dot_q4_K_q8_K` / `vec_dot_q6_K_q8_K`: the unsigned values are dotted with
//! `vpmaddubsw` (pairs into i16, no saturation: ≤ 63 × 127 × 2), the 16-bit pair sums are
//! weighted by the sub-block scales with `vpmaddwd` into i32 lanes, exact per super-block; then
//! `d_w * d_a` scales the lanes into the f32 accumulator. Q4_K's min term uses the activation
//! `bsums`; Q6_K's offset of 32 is removed per pair (`maddubs(32, a)`).
//!
//! Used by both x86 levels (VNNI gains little over these i16 pair sums here).

// Tiles and blocks index several parallel arrays with one row/column/value index.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

use super::blocks::scale_min_k4;
use super::simd::{self, bcast_f16, f16_at, hsum, Ctx, IDot, Tile};

/// The 32 activation values at offset `off` of row `r`, block `b`.
#[inline(always)]
unsafe fn acts32(ctx: &Ctx, r: usize, b: usize, off: usize) -> __m256i {
    _mm256_loadu_si256(
        ctx.acts
            .qs
            .as_ptr()
            .add(r * ctx.acts.k + b * 256 + off)
            .cast(),
    )
}

/// The sum of 4 i32 lanes (exact: the min sums stay far inside i32).
#[inline(always)]
unsafe fn hsum_i32x4(v: __m128i) -> i32 {
    let v = _mm_add_epi32(v, _mm_unpackhi_epi64(v, v));
    _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 1)))
}

/// Q4_K × Q8_K.
pub(crate) struct Q4K;

impl Tile for Q4K {
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize) {
        let acts = ctx.acts;
        let nb = acts.blocks();
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let mut mins_acc = [[0f32; C]; R];
        for b in 0..nb {
            let blk = |c: usize| ctx.w.add((c0 + c) * ctx.row_bytes + b * 144);
            let mut sc = [[0i16; 8]; C];
            let mut mn = [_mm_setzero_si128(); C];
            for c in 0..C {
                let scales: [u8; 12] = blk(c).add(4).cast::<[u8; 12]>().read_unaligned();
                let mut m = [0i16; 8];
                for j in 0..8 {
                    let (s, mj) = scale_min_k4(j, &scales);
                    (sc[c][j], m[j]) = (s as i16, mj as i16);
                }
                mn[c] = _mm_loadu_si128(m.as_ptr().cast());
            }
            let mut sumi = [[_mm256_setzero_si256(); C]; R];
            for g in 0..4 {
                let mut lo = [_mm256_setzero_si256(); C];
                let mut hi = [_mm256_setzero_si256(); C];
                for c in 0..C {
                    let q = _mm256_loadu_si256(blk(c).add(16 + g * 32).cast());
                    lo[c] = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
                    hi[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0x0F));
                }
                for r in 0..R {
                    let a_lo = acts32(ctx, r0 + r, b, g * 64);
                    let a_hi = acts32(ctx, r0 + r, b, g * 64 + 32);
                    for c in 0..C {
                        let s_lo = _mm256_set1_epi16(sc[c][2 * g]);
                        let s_hi = _mm256_set1_epi16(sc[c][2 * g + 1]);
                        let p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo[c], a_lo), s_lo);
                        let p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi[c], a_hi), s_hi);
                        sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_add_epi32(p_lo, p_hi));
                    }
                }
            }
            for r in 0..R {
                let row = (r0 + r) * nb + b;
                let da = *acts.d.get_unchecked(row);
                // Sub-block j's activation sum, bsums[2j] + bsums[2j + 1] (|sum| ≤ 32 · 128).
                let bs = acts.bsums.as_ptr().add(row * 16);
                let bs = _mm_hadd_epi16(
                    _mm_loadu_si128(bs.cast()),
                    _mm_loadu_si128(bs.add(8).cast()),
                );
                for c in 0..C {
                    let dw = _mm256_mul_ps(bcast_f16(blk(c)), _mm256_set1_ps(da));
                    acc[r][c] = _mm256_fmadd_ps(dw, _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
                    let msum = hsum_i32x4(_mm_madd_epi16(mn[c], bs));
                    mins_acc[r][c] += (f16_at(blk(c).add(2)) * da) * msum as f32;
                }
            }
        }
        for r in 0..R {
            for c in 0..C {
                ctx.out
                    .write(r0 + r, c0 + c, hsum(acc[r][c]) - mins_acc[r][c]);
            }
        }
    }
}

/// Q6_K × Q8_K.
pub(crate) struct Q6K;

impl Tile for Q6K {
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize) {
        let acts = ctx.acts;
        let nb = acts.blocks();
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let m4 = _mm256_set1_epi8(0x0F);
        let m2 = _mm256_set1_epi8(0x03);
        for b in 0..nb {
            let blk = |c: usize| ctx.w.add((c0 + c) * ctx.row_bytes + b * 210);
            let mut sumi = [[_mm256_setzero_si256(); C]; R];
            for quarter in 0..8 {
                let (h, q) = (quarter / 4, quarter % 4);
                let mut vals = [_mm256_setzero_si256(); C];
                let mut scale = [_mm256_setzero_si256(); C];
                for c in 0..C {
                    let p = blk(c);
                    let ql = _mm256_loadu_si256(p.add(h * 64 + (q & 1) * 32).cast());
                    let qh = _mm256_loadu_si256(p.add(128 + h * 32).cast());
                    let ql = if q < 2 { ql } else { _mm256_srli_epi16(ql, 4) };
                    let qh = _mm256_sll_epi16(
                        _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * q as i32)), m2),
                        _mm_cvtsi32_si128(4),
                    );
                    vals[c] = _mm256_or_si256(_mm256_and_si256(ql, m4), qh);
                    let s = p.add(192 + h * 8 + 2 * q).cast::<i8>();
                    scale[c] = _mm256_set_m128i(
                        _mm_set1_epi16(*s.add(1) as i16),
                        _mm_set1_epi16(*s as i16),
                    );
                }
                for r in 0..R {
                    let a = acts32(ctx, r0 + r, b, h * 128 + q * 32);
                    let a32 = _mm256_maddubs_epi16(_mm256_set1_epi8(32), a);
                    for c in 0..C {
                        let p = _mm256_sub_epi16(_mm256_maddubs_epi16(vals[c], a), a32);
                        sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_madd_epi16(p, scale[c]));
                    }
                }
            }
            for r in 0..R {
                let da = _mm256_set1_ps(*acts.d.get_unchecked((r0 + r) * nb + b));
                for c in 0..C {
                    let dw = _mm256_mul_ps(bcast_f16(blk(c).add(208)), da);
                    acc[r][c] = _mm256_fmadd_ps(dw, _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
                }
            }
        }
        simd::store(ctx, r0, c0, &acc);
    }
}
