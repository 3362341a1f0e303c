//! x86-64 tile kernels shared by the AVX2 and AVX-512 VNNI levels, generic over the one
//! instruction that differs: the u8 × i8 → i32 dot of 4-byte groups ([`IDot`]).
//!
//! Everything here is `#[inline(always)]` and only ever inlined into a level's
//! `#[target_feature]` entry point, which supplies the instruction set.
//!
//! A tile is R activation rows × C weight columns over all k. Per (row, column) the order of
//! operations is fixed: for each block in order, the block's integer dot as 8 i32 lanes, to
//! f32, times the broadcast `d_w * d_a`, fused-added into that pair's own accumulator; then a
//! fixed horizontal sum, plus any per-block offset terms summed in block order. R and C only
//! decide how many pairs run side by side, so results do not depend on T or tiling.

// Tiles and blocks index several parallel arrays with one row/column/value index.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;
use std::ops::Range;

use super::blocks::QType;
use super::matmul::OutPtr;
use super::quantize::Acts;

/// The u8 × i8 dot of 4-byte groups into i32 lanes, added to `acc`.
pub(crate) trait IDot {
    /// `acc + sum over each 4-byte group of u * s` (u unsigned, s signed) per i32 lane.
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i;
    /// Whether `dot` is `vpmaddubsw` into i16 pairs, then a widening `vpmaddwd`: a kernel may
    /// then add several pair sums in i16 and widen once, exact while they fit.
    const I16_PAIRS: bool = false;
}

/// What a weight type's tile kernel sees.
pub(crate) struct Ctx<'a> {
    /// First byte of weight row 0.
    pub w: *const u8,
    /// Bytes per weight row.
    pub row_bytes: usize,
    pub acts: &'a Acts,
    pub out: OutPtr,
}

impl<'a> Ctx<'a> {
    /// The context for columns up to `cols_end` of `qtype` weights `w`; panics (a bug) if `w`
    /// does not hold those rows.
    pub(crate) fn new(
        qtype: QType,
        w: &[u8],
        acts: &'a Acts,
        out: OutPtr,
        cols_end: usize,
    ) -> Self {
        let row_bytes = acts.blocks() * qtype.block_bytes();
        assert!(
            w.len() >= cols_end * row_bytes,
            "weights too short; this is a bug"
        );
        Self {
            w: w.as_ptr(),
            row_bytes,
            acts,
            out,
        }
    }
}

/// A weight type's R × C tile.
pub(crate) trait Tile {
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize);
}

/// Runs columns `cols` for all rows: C-wide column tiles × 4-row tiles and the remainders, or
/// for T ≤ 4 (decode steps) C1-wide column tiles × all T rows. Small T is bound by memory
/// bandwidth, and the hardware prefetchers stream one column (a contiguous GGUF row) at a time
/// far better than several interleaved ones (measured on Zen 5: 18.7 GB/s at C1 = 1 against
/// 5.6 GB/s at 4 columns for the 49152 × 576 Q8_0 head on one thread), so C1 = 1 there.
#[inline(always)]
pub(crate) unsafe fn run<K: Tile, D: IDot, const C: usize, const C1: usize>(
    ctx: &Ctx,
    cols: Range<usize>,
) {
    let rows = ctx.acts.rows;
    let mut c0 = cols.start;
    if rows <= 4 {
        while c0 + C1 <= cols.end {
            row_tiles::<K, D, C1>(ctx, rows, c0);
            c0 += C1;
        }
    }
    while c0 + C <= cols.end {
        row_tiles::<K, D, C>(ctx, rows, c0);
        c0 += C;
    }
    while c0 < cols.end {
        row_tiles::<K, D, 1>(ctx, rows, c0);
        c0 += 1;
    }
}

#[inline(always)]
unsafe fn row_tiles<K: Tile, D: IDot, const C: usize>(ctx: &Ctx, rows: usize, c0: usize) {
    let mut r0 = 0;
    while r0 + 4 <= rows {
        K::tile::<D, 4, C>(ctx, r0, c0);
        r0 += 4;
    }
    match rows - r0 {
        1 => K::tile::<D, 1, C>(ctx, r0, c0),
        2 => K::tile::<D, 2, C>(ctx, r0, c0),
        3 => K::tile::<D, 3, C>(ctx, r0, c0),
        _ => {}
    }
}

/// Fixed-order horizontal sum of 8 lanes.
#[inline(always)]
pub(crate) unsafe fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Writes the tile's sums: `out[r0 + r][c0 + c] = hsum(acc[r][c])`.
#[inline(always)]
pub(crate) unsafe fn store<const R: usize, const C: usize>(
    ctx: &Ctx,
    r0: usize,
    c0: usize,
    acc: &[[__m256; C]; R],
) {
    for c in 0..C {
        for r in 0..R {
            ctx.out.write(r0 + r, c0 + c, hsum(acc[r][c]));
        }
    }
}

/// The f16 at `p` (any alignment), converted and broadcast to 8 lanes.
#[inline(always)]
pub(crate) unsafe fn bcast_f16(p: *const u8) -> __m256 {
    let bits = p.cast::<i16>().read_unaligned();
    _mm256_cvtph_ps(_mm_set1_epi16(bits))
}

/// The f16 at `p` (any alignment) as f32.
#[inline(always)]
pub(crate) unsafe fn f16_at(p: *const u8) -> f32 {
    half::f16::from_bits(p.cast::<u16>().read_unaligned()).to_f32()
}

/// 16 bytes of nibbles at `p` as 32 bytes: low nibbles (values 0..16), then high (16..32).
#[inline(always)]
pub(crate) unsafe fn nibbles(p: *const u8) -> __m256i {
    let q = _mm_loadu_si128(p.cast());
    let both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
}

/// The 32 activation values of block `b` of row `r`.
#[inline(always)]
pub(crate) unsafe fn act_block(acts: &Acts, r: usize, b: usize) -> __m256i {
    _mm256_loadu_si256(acts.qs.as_ptr().add(r * acts.k + b * 32).cast())
}

/// Adds `acc[r][c] += (dw[c] * da) * f32(sumi)`.
#[inline(always)]
pub(crate) unsafe fn fma_block(acc: &mut __m256, dw: __m256, da: __m256, sumi: __m256i) {
    *acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(sumi), *acc);
}

/// Q4_1 × Q8_1: `sum_b (d_w d_a) sumi_b + sum_b m_w s_a`.
pub(crate) struct Q4_1;

impl Tile for Q4_1 {
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize) {
        let acts = ctx.acts;
        let nb = acts.blocks();
        let col = |c: usize| ctx.w.add((c0 + c) * ctx.row_bytes);
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        for b in 0..nb {
            let mut wq = [_mm256_setzero_si256(); C];
            let mut dw = [_mm256_setzero_ps(); C];
            for c in 0..C {
                let blk = col(c).add(b * 20);
                wq[c] = nibbles(blk.add(4));
                dw[c] = bcast_f16(blk);
            }
            for r in 0..R {
                let a = act_block(acts, r0 + r, b);
                let da = _mm256_set1_ps(*acts.d.get_unchecked((r0 + r) * nb + b));
                for c in 0..C {
                    let sumi = D::dot(_mm256_setzero_si256(), wq[c], a);
                    fma_block(&mut acc[r][c], dw[c], da, sumi);
                }
            }
        }
        for c in 0..C {
            let mut ms = [0f32; R];
            for b in 0..nb {
                let m = f16_at(col(c).add(b * 20 + 2));
                for r in 0..R {
                    ms[r] += m * *acts.s.get_unchecked((r0 + r) * nb + b);
                }
            }
            for r in 0..R {
                ctx.out.write(r0 + r, c0 + c, hsum(acc[r][c]) + ms[r]);
            }
        }
    }
}

/// Q8_0 × Q8_0: `sum_b (d_w d_a) sumi_b`, signed × signed via `|w|` and `sign(a, w)`.
pub(crate) struct Q8_0;

impl Tile for Q8_0 {
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize) {
        let acts = ctx.acts;
        let nb = acts.blocks();
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        for b in 0..nb {
            let mut wq = [_mm256_setzero_si256(); C];
            let mut wa = [_mm256_setzero_si256(); C];
            let mut dw = [_mm256_setzero_ps(); C];
            for c in 0..C {
                let blk = ctx.w.add((c0 + c) * ctx.row_bytes + b * 34);
                wq[c] = _mm256_loadu_si256(blk.add(2).cast());
                wa[c] = _mm256_sign_epi8(wq[c], wq[c]);
                dw[c] = bcast_f16(blk);
            }
            for r in 0..R {
                let a = act_block(acts, r0 + r, b);
                let da = _mm256_set1_ps(*acts.d.get_unchecked((r0 + r) * nb + b));
                for c in 0..C {
                    let s = _mm256_sign_epi8(a, wq[c]);
                    let sumi = D::dot(_mm256_setzero_si256(), wa[c], s);
                    fma_block(&mut acc[r][c], dw[c], da, sumi);
                }
            }
        }
        store(ctx, r0, c0, &acc);
    }
}

/// A 32-value block type with unsigned values `q` and `x = d * (q - 2^OFFSET_LOG2)`.
pub(crate) trait OffsetBlock {
    /// Bytes per block; the f16 `d` is at byte 0.
    const BYTES: usize;
    /// log2 of the offset (8 → 3, 16 → 4).
    const OFFSET_LOG2: i32;
    /// The 32 unsigned values of the block at `blk`.
    unsafe fn values(blk: *const u8) -> __m256i;
}

/// Q4_0 × Q8_0 and Q5_0 × Q8_0: the unsigned values dotted with `vpdpbusd`/`vpmaddubsw`
/// starting from `-offset * sum(a)` per 4-value group (precomputed with the activations), so
/// each lane holds the exact `sum (q - offset) a` of its group.
pub(crate) struct Offset<B: OffsetBlock>(std::marker::PhantomData<B>);

impl<B: OffsetBlock> Tile for Offset<B> {
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize, const C: usize>(ctx: &Ctx, r0: usize, c0: usize) {
        let acts = ctx.acts;
        let nb = acts.blocks();
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        for b in 0..nb {
            let mut wq = [_mm256_setzero_si256(); C];
            let mut dw = [_mm256_setzero_ps(); C];
            for c in 0..C {
                let blk = ctx.w.add((c0 + c) * ctx.row_bytes + b * B::BYTES);
                wq[c] = B::values(blk);
                dw[c] = bcast_f16(blk);
            }
            for r in 0..R {
                let a = act_block(acts, r0 + r, b);
                let da = _mm256_set1_ps(*acts.d.get_unchecked((r0 + r) * nb + b));
                let sum4 =
                    _mm256_loadu_si256(acts.sum4.as_ptr().add(((r0 + r) * nb + b) * 8).cast());
                let bias = _mm256_sub_epi32(
                    _mm256_setzero_si256(),
                    _mm256_sll_epi32(sum4, _mm_cvtsi32_si128(B::OFFSET_LOG2)),
                );
                for c in 0..C {
                    let sumi = D::dot(bias, wq[c], a);
                    fma_block(&mut acc[r][c], dw[c], da, sumi);
                }
            }
        }
        store(ctx, r0, c0, &acc);
    }
}

/// Q4_0 blocks: `d`, 16 bytes of nibbles.
pub(crate) struct Q4_0;

impl OffsetBlock for Q4_0 {
    const BYTES: usize = 18;
    const OFFSET_LOG2: i32 = 3;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> __m256i {
        nibbles(blk.add(2))
    }
}

/// Q5_0 blocks: `d`, 32 high bits `qh`, 16 bytes of nibbles.
pub(crate) struct Q5_0;

impl OffsetBlock for Q5_0 {
    const BYTES: usize = 22;
    const OFFSET_LOG2: i32 = 4;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> __m256i {
        let qh = blk.add(2).cast::<i32>().read_unaligned();
        // Byte j gets byte j/8 of qh; OR-ing every bit but bit j%8 leaves all-ones iff it is set.
        let spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(qh),
            _mm256_set_epi64x(
                0x0303030303030303,
                0x0202020202020202,
                0x0101010101010101,
                0,
            ),
        );
        let ones = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
        let high = _mm256_cmpeq_epi8(ones, _mm256_set1_epi64x(-1));
        _mm256_or_si256(
            nibbles(blk.add(6)),
            _mm256_and_si256(high, _mm256_set1_epi8(0x10)),
        )
    }
}
