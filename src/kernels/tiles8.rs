//! x86-64 kernels over repacked weights ([`super::repack`]): an R-row × 8-column tile per
//! call, the 8 columns in the 8 lanes of one register, generic over the u8 × i8 dot of the
//! level ([`IDot`]). Everything is `#[inline(always)]` into the level's `#[target_feature]`
//! entry point (`avx2::tiles_cols`, `avx512::tiles_cols`).
//!
//! Per block and row: the exact integer sum of each column (8 dots of a broadcast group of 4
//! activations, in two chains; on AVX2 a 4- or 5-bit block's i16 pair sums added before one or
//! two widenings), then `acc = fma(d_w * d_a, sumi, acc)` (then
//! `acc = fma(m_w, s_a, acc)` for Q4_1), as [`super::scalar::dot_row_fused`] computes it, so
//! the results are that reference's bits.

// Tiles index several parallel arrays with one row/column index.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;
use std::ops::Range;

use super::matmul::OutPtr;
use super::quantize::Acts;
use super::repack::COLS;
use super::simd::IDot;

/// A block type's tile-block: where its scales are and how its 8 registers of values dot.
pub(crate) trait Kind {
    /// Bytes of one tile-block (8 blocks).
    const BYTES: usize;
    /// The 8 value registers of the tile-block at `blk`, register `g` for activation group `g`.
    unsafe fn values(blk: *const u8) -> [__m256i; 8];
    /// `acc + sum over each lane's 4 bytes of w * a` for value register `w` and a broadcast
    /// group of 4 activations `a`.
    unsafe fn dot<D: IDot>(acc: __m256i, w: __m256i, a: __m256i) -> __m256i;
    /// How many groups' i16 pair sums (`vpmaddubsw` of the values as u8 and activations,
    /// |a| ≤ 127) fit in an i16 when added (values ≤ 15: 8 × 2 × 15 × 127 = 30480; ≤ 31: 4);
    /// 1 where `dot` is not that product of the values themselves.
    const I16_GROUPS: usize;
    /// Whether a prefill's `run` decodes a column tile's values once for all its row tiles
    /// ([`Tiled::DECODES`]): where `values` costs more than loading 8 registers back. Q5_0
    /// (its bit 4 moved in per group): `time_the_layouts` T=512, 5 alternated pairs, median
    /// pair ratio 1.19; Gemma 3 prefill 512 (engine bench, 4 × 3 rounds alternated) medians
    /// 553.4 -> 598.6 tok/s. Q4_0 and Q4_1 (a mask and a shift) showed no gain beyond noise.
    const DECODES: bool = false;
    /// The integer sum's starting value for activation block `i` (an offset's correction).
    unsafe fn start(acts: &Acts, i: usize) -> __m256i;
    /// `acc` with the block's float term beyond `(d_w * d_a) * sumi` fused in, if any.
    unsafe fn extra(acc: __m256, blk: *const u8, acts: &Acts, i: usize) -> __m256;
}

/// 16 bytes of 8 columns' chunks of 4 nibble bytes, as 8 registers of values 0..16: low
/// nibbles are groups 0..4, high nibbles groups 4..8.
#[inline(always)]
unsafe fn nibble_values(qs: *const u8) -> [__m256i; 8] {
    let mask = _mm256_set1_epi8(0x0F);
    let mut v = [_mm256_setzero_si256(); 8];
    for i in 0..4 {
        let q = _mm256_loadu_si256(qs.add(i * 32).cast());
        v[i] = _mm256_and_si256(q, mask);
        v[i + 4] = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
    }
    v
}

/// Q4_0 × Q8_0: unsigned nibbles, the offset 8 subtracted as `-8 * sum(a)` up front.
pub(crate) struct Q4_0;

impl Kind for Q4_0 {
    const I16_GROUPS: usize = 8;
    const BYTES: usize = 18 * COLS;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> [__m256i; 8] {
        nibble_values(blk.add(16))
    }
    #[inline(always)]
    unsafe fn dot<D: IDot>(acc: __m256i, w: __m256i, a: __m256i) -> __m256i {
        D::dot(acc, w, a)
    }
    #[inline(always)]
    unsafe fn start(acts: &Acts, i: usize) -> __m256i {
        _mm256_set1_epi32(-8 * *acts.sums.get_unchecked(i))
    }
    #[inline(always)]
    unsafe fn extra(acc: __m256, _: *const u8, _: &Acts, _: usize) -> __m256 {
        acc
    }
}

/// Q5_0 × Q8_0: nibbles with their rearranged high bits as bit 4 ([`super::repack`]), the
/// offset 16 subtracted as `-16 * sum(a)` up front.
pub(crate) struct Q5_0;

impl Kind for Q5_0 {
    const I16_GROUPS: usize = 4;
    const DECODES: bool = true;
    const BYTES: usize = 22 * COLS;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> [__m256i; 8] {
        let mut v = nibble_values(blk.add(48));
        let h = _mm256_loadu_si256(blk.add(16).cast());
        let bit4 = _mm256_set1_epi8(0x10);
        // Group g's bits are bit g of each byte; moved to bit 4.
        v[0] = _mm256_or_si256(v[0], _mm256_and_si256(_mm256_slli_epi32(h, 4), bit4));
        v[1] = _mm256_or_si256(v[1], _mm256_and_si256(_mm256_slli_epi32(h, 3), bit4));
        v[2] = _mm256_or_si256(v[2], _mm256_and_si256(_mm256_slli_epi32(h, 2), bit4));
        v[3] = _mm256_or_si256(v[3], _mm256_and_si256(_mm256_slli_epi32(h, 1), bit4));
        v[4] = _mm256_or_si256(v[4], _mm256_and_si256(h, bit4));
        v[5] = _mm256_or_si256(v[5], _mm256_and_si256(_mm256_srli_epi32(h, 1), bit4));
        v[6] = _mm256_or_si256(v[6], _mm256_and_si256(_mm256_srli_epi32(h, 2), bit4));
        v[7] = _mm256_or_si256(v[7], _mm256_and_si256(_mm256_srli_epi32(h, 3), bit4));
        v
    }
    #[inline(always)]
    unsafe fn dot<D: IDot>(acc: __m256i, w: __m256i, a: __m256i) -> __m256i {
        D::dot(acc, w, a)
    }
    #[inline(always)]
    unsafe fn start(acts: &Acts, i: usize) -> __m256i {
        _mm256_set1_epi32(-16 * *acts.sums.get_unchecked(i))
    }
    #[inline(always)]
    unsafe fn extra(acc: __m256, _: *const u8, _: &Acts, _: usize) -> __m256 {
        acc
    }
}

/// Q4_1 × Q8_1: unsigned nibbles, plus `m_w * s_a` per block.
pub(crate) struct Q4_1;

impl Kind for Q4_1 {
    const I16_GROUPS: usize = 8;
    const BYTES: usize = 20 * COLS;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> [__m256i; 8] {
        nibble_values(blk.add(32))
    }
    #[inline(always)]
    unsafe fn dot<D: IDot>(acc: __m256i, w: __m256i, a: __m256i) -> __m256i {
        D::dot(acc, w, a)
    }
    #[inline(always)]
    unsafe fn start(_: &Acts, _: usize) -> __m256i {
        _mm256_setzero_si256()
    }
    #[inline(always)]
    unsafe fn extra(acc: __m256, blk: *const u8, acts: &Acts, i: usize) -> __m256 {
        let m = _mm256_cvtph_ps(_mm_loadu_si128(blk.add(16).cast()));
        _mm256_fmadd_ps(m, _mm256_set1_ps(*acts.s.get_unchecked(i)), acc)
    }
}

/// Q8_0 × Q8_0: signed × signed as `|w|` × `sign(a, w)`.
pub(crate) struct Q8_0;

impl Kind for Q8_0 {
    const I16_GROUPS: usize = 1;
    const BYTES: usize = 34 * COLS;
    #[inline(always)]
    unsafe fn values(blk: *const u8) -> [__m256i; 8] {
        let mut v = [_mm256_setzero_si256(); 8];
        for g in 0..8 {
            v[g] = _mm256_loadu_si256(blk.add(16 + g * 32).cast());
        }
        v
    }
    #[inline(always)]
    unsafe fn dot<D: IDot>(acc: __m256i, w: __m256i, a: __m256i) -> __m256i {
        D::dot(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w))
    }
    #[inline(always)]
    unsafe fn start(_: &Acts, _: usize) -> __m256i {
        _mm256_setzero_si256()
    }
    #[inline(always)]
    unsafe fn extra(acc: __m256, _: *const u8, _: &Acts, _: usize) -> __m256 {
        acc
    }
}

/// A tile kernel: R rows × the 8 columns of one tile, over all its tile-blocks.
pub(crate) trait Tiled {
    /// Bytes of one tile-block (8 columns × one block).
    const BYTES: usize;
    /// Rows `r0..r0 + R` × the 8 columns of the tile at `w`, one f32 lane per column.
    unsafe fn tile<D: IDot, const R: usize>(w: *const u8, acts: &Acts, r0: usize) -> [__m256; R];
    /// Whether [`Self::decode`] and [`Self::tile_decoded`] exist: `run` then decodes a column
    /// tile's value registers once when it has [`DECODE_MIN_ROWS`] rows or more.
    const DECODES: bool = false;
    /// Value registers per tile-block that [`Self::decode`] writes (8 for a 32-value block).
    const REGS: usize = 8;
    /// The [`Self::REGS`] value registers of each of the `nb` tile-blocks at `w`, to
    /// `out[REGS * b..]`.
    unsafe fn decode(_w: *const u8, _nb: usize, _out: &mut [__m256i]) {
        unreachable!("decode of a tile kind that does not decode; this is a bug")
    }
    /// [`Self::tile`] with the value registers from `vals` ([`Self::decode`] of `w`).
    unsafe fn tile_decoded<D: IDot, const R: usize>(
        w: *const u8,
        _vals: &[__m256i],
        acts: &Acts,
        r0: usize,
    ) -> [__m256; R] {
        Self::tile::<D, R>(w, acts, r0)
    }
}

impl<K: Kind> Tiled for K {
    const BYTES: usize = K::BYTES;
    const DECODES: bool = <K as Kind>::DECODES;
    #[inline(always)]
    unsafe fn tile<D: IDot, const R: usize>(w: *const u8, acts: &Acts, r0: usize) -> [__m256; R] {
        kind_tile::<K, D, R>(w, acts, r0, |blk, _| K::values(blk))
    }
    #[inline(always)]
    unsafe fn decode(w: *const u8, nb: usize, out: &mut [__m256i]) {
        for (b, regs) in out[..8 * nb].chunks_exact_mut(8).enumerate() {
            regs.copy_from_slice(&K::values(w.add(b * K::BYTES)));
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
        kind_tile::<K, D, R>(w, acts, r0, |_, b| {
            vals.add(8 * b).cast::<[__m256i; 8]>().read()
        })
    }
}

/// [`Tiled::tile`] of a [`Kind`], block `b`'s value registers from `values(blk, b)`.
#[inline(always)]
unsafe fn kind_tile<K: Kind, D: IDot, const R: usize>(
    w: *const u8,
    acts: &Acts,
    r0: usize,
    values: impl Fn(*const u8, usize) -> [__m256i; 8],
) -> [__m256; R] {
    let nb = acts.blocks();
    let mut acc = [_mm256_setzero_ps(); R];
    for b in 0..nb {
        let blk = w.add(b * K::BYTES);
        if r0 == 0 {
            prefetch_ahead(blk, K::BYTES);
        }
        let dw = _mm256_cvtph_ps(_mm_loadu_si128(blk.cast()));
        let wq = values(blk, b);
        for r in 0..R {
            let i = (r0 + r) * nb + b;
            let a = acts.qs.as_ptr().add((r0 + r) * acts.k + b * 32);
            let sumi = _mm256_cvtepi32_ps(block_sum::<K, D>(&wq, a, K::start(acts, i)));
            let da = _mm256_set1_ps(*acts.d.get_unchecked(i));
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, da), sumi, acc[r]);
            acc[r] = K::extra(acc[r], blk, acts, i);
        }
    }
    acc
}

/// `start` plus the exact integer dot of one block's 8 value registers with the 32 activations
/// at `a`: in two chains of [`Kind::dot`], or where the level's dot goes through i16 pairs and
/// the kind allows, [`Kind::I16_GROUPS`] groups' pairs added in i16 before each widening (a
/// 4-bit block widens once instead of 8 times). Integer sums: both give the same bits.
#[inline(always)]
unsafe fn block_sum<K: Kind, D: IDot>(wq: &[__m256i; 8], a: *const i8, start: __m256i) -> __m256i {
    const { assert!(K::I16_GROUPS == 1 || (K::I16_GROUPS % 2 == 0 && 8 % K::I16_GROUPS == 0)) };
    let per = K::I16_GROUPS;
    if !D::I16_PAIRS || per < 2 {
        let (mut s0, mut s1) = (start, _mm256_setzero_si256());
        for g in (0..8).step_by(2) {
            s0 = K::dot::<D>(s0, wq[g], group(a.add(4 * g)));
            s1 = K::dot::<D>(s1, wq[g + 1], group(a.add(4 * g + 4)));
        }
        return _mm256_add_epi32(s0, s1);
    }
    let pairs = |g: usize| _mm256_maddubs_epi16(wq[g], group(a.add(4 * g)));
    let mut sum = start;
    for g0 in (0..8).step_by(per) {
        // Two chains of i16 adds, then one.
        let (mut p0, mut p1) = (pairs(g0), pairs(g0 + 1));
        for g in (g0 + 2..g0 + per).step_by(2) {
            p0 = _mm256_add_epi16(p0, pairs(g));
            p1 = _mm256_add_epi16(p1, pairs(g + 1));
        }
        let p = _mm256_add_epi16(p0, p1);
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
    }
    sum
}

/// Rows from which `run` decodes a column tile's values once ([`Tiled::DECODES`]): a decode
/// step's 1-3 rows unpack them once anyway.
pub(crate) const DECODE_MIN_ROWS: usize = 8;

/// How far ahead of the tile-block being dotted its weights are prefetched, bytes. Only the
/// first row tile of a column tile prefetches (later ones find the tile in cache). Decode
/// streams every weight once; without the hint a decode of 3 sequences spent most of its time
/// waiting on weight loads. Engine bench `--decode-only`, binaries alternated, tok/s: default
/// model 1 sequence 85.7 → 133 (2048 bytes ahead: 110, 8192: 123), 3 sequences 178 → 231;
/// Gemma 3 1 sequence 48.4 → 61.3, 3 sequences 92.0 → 142.0.
pub(crate) const PREFETCH_AHEAD: usize = 4096;

/// Prefetches the `bytes` bytes [`PREFETCH_AHEAD`] past `blk`, one request per cache line
/// (a hint: an address past the weights never faults).
#[inline(always)]
pub(crate) unsafe fn prefetch_ahead(blk: *const u8, bytes: usize) {
    let ahead = blk.wrapping_add(PREFETCH_AHEAD);
    for off in (0..bytes).step_by(64) {
        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(off).cast());
    }
}

/// The 4 activations at `a` broadcast to every lane.
#[inline(always)]
pub(crate) unsafe fn group(a: *const i8) -> __m256i {
    _mm256_set1_epi32(a.cast::<i32>().read_unaligned())
}

/// Writes the columns of tile `c0..c0 + 8` that lie in `cols`.
#[inline(always)]
unsafe fn store<const R: usize>(
    out: OutPtr,
    r0: usize,
    c0: usize,
    cols: &Range<usize>,
    acc: &[__m256; R],
) {
    let mut lanes = [0f32; COLS];
    for r in 0..R {
        _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r]);
        for (j, v) in lanes.iter().enumerate() {
            if cols.contains(&(c0 + j)) {
                out.write(r0 + r, c0 + j, *v);
            }
        }
    }
}

/// Columns `cols` for all rows: for each tile touching `cols`, R-row tiles and the remainder.
#[inline(always)]
pub(crate) unsafe fn run<K: Tiled, D: IDot, const R: usize>(
    w: &[u8],
    acts: &Acts,
    cols: Range<usize>,
    out: OutPtr,
) {
    let tile_bytes = acts.blocks() * K::BYTES;
    const { assert!(R == 4, "the remainder tiles cover fewer than 4 rows") };
    assert!(
        w.len() >= cols.end.div_ceil(COLS) * tile_bytes,
        "repacked weights too short; this is a bug"
    );
    let mut vals = match K::DECODES && acts.rows >= DECODE_MIN_ROWS {
        true => vec![_mm256_setzero_si256(); K::REGS * acts.blocks()],
        false => Vec::new(),
    };
    for t in cols.start / COLS..cols.end.div_ceil(COLS) {
        let wt = w.as_ptr().add(t * tile_bytes);
        let c0 = t * COLS;
        let mut r0 = 0;
        if !vals.is_empty() {
            K::decode(wt, acts.blocks(), &mut vals);
        }
        while r0 + R <= acts.rows {
            let tile = match vals.is_empty() {
                true => K::tile::<D, R>(wt, acts, r0),
                false => K::tile_decoded::<D, R>(wt, &vals, acts, r0),
            };
            store(out, r0, c0, &cols, &tile);
            r0 += R;
        }
        // The remainder in one tile, so the weights are unpacked once for a decode's rows.
        match acts.rows - r0 {
            1 => store(out, r0, c0, &cols, &K::tile::<D, 1>(wt, acts, r0)),
            2 => store(out, r0, c0, &cols, &K::tile::<D, 2>(wt, acts, r0)),
            3 => store(out, r0, c0, &cols, &K::tile::<D, 3>(wt, acts, r0)),
            _ => {}
        }
    }
}
