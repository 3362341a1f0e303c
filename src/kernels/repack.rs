//! Row-interleaved weights ("repacked"): 8 weight rows (output columns) stored block by block
//! side by side, so one 256-bit register holds the same 4 quantized bytes of 8 columns, each in
//! its own 32-bit lane. A tile kernel then dots a broadcast group of 4 activations against 8
//! columns at once and every lane ends a block holding one column's exact integer sum: no
//! horizontal sums, one scale multiply per 8 columns, 8 results stored in one write.
//!
//! Layout of a tile-block (8 rows × one block, `8 × block_bytes` bytes, the same bytes as the
//! 8 GGUF blocks it holds): each f16 field of the block (`d`; `d`, `m` for Q4_1) as 8 halves,
//! column by column, then the block's quantized bytes in chunks of 4: chunk `g` of column `j`
//! at `g * 32 + j * 4`. Tiles follow each other, each holding all its blocks in order, so a
//! tile is one contiguous stream. Q8_0 chunks are 4 values; Q4_0/Q4_1 chunks are 4 bytes of
//! nibbles (low nibbles values `4g..4g+4`, high nibbles `16+4g..`); Q5_0's first chunk is its 32
//! high bits, rearranged so bit `8p + g` is value `4g + p`'s, then 4 chunks of nibbles.
//!
//! Numerics: every output is computed exactly as [`scalar::dot_row_fused`] computes it (the
//! exact integer sum per block, then the running f32 sum updated by a fused multiply-add of
//! `d_w * d_a` and the sum, as ggml's repacked kernels do), so a repacked matrix gives that
//! reference's bits at every kernel level, whatever T and whichever rows share the call.
//!
//! The K-quants' tile-blocks ([`super::repack_k`]) lay their scales out per sub-block (Q4_K's
//! packed 6-bit scales decoded to bytes); their outputs are [`scalar::dot_row_fused`]'s too
//! (the integer sum of a super-block exact, then fused multiply-adds for the scale and, for
//! Q4_K, the min term).
//!
//! Only whole tiles are repacked: a part whose rows are not a multiple of 8 keeps the GGUF
//! layout.

use std::borrow::Cow;
use std::ops::Range;

use super::blocks::QType;
use super::matmul::OutPtr;
use super::quantize::Acts;
use super::{repack_k, scalar, Level};

/// Weight rows (output columns) per tile.
pub(crate) const COLS: usize = 8;

/// Whether `qtype` has tile kernels.
pub(crate) fn supports(qtype: QType) -> bool {
    matches!(
        qtype,
        QType::Q4_0 | QType::Q4_1 | QType::Q5_0 | QType::Q8_0 | QType::Q4K | QType::Q6K
    )
}

/// Bytes of one tile-block (8 rows × one block) of `qtype`.
pub(crate) fn tile_block_bytes(qtype: QType) -> usize {
    match qtype {
        QType::Q4K => repack_k::Q4K_TILE_BYTES,
        _ => COLS * qtype.block_bytes(),
    }
}

/// The f16 fields at the start of a block of `qtype`.
fn fields(qtype: QType) -> usize {
    match qtype {
        QType::Q4_1 => 2,
        _ => 1,
    }
}

/// `rows` GGUF rows of `qtype` blocks (`src`, row after row) as tiles; `None` when the type has
/// no tile kernel or `rows` is not a multiple of [`COLS`].
pub(crate) fn interleave(qtype: QType, src: &[u8], rows: usize) -> Option<Vec<u8>> {
    if !supports(qtype) || rows == 0 || !rows.is_multiple_of(COLS) {
        return None;
    }
    let (bb, row_bytes, tbb) = (
        qtype.block_bytes(),
        src.len() / rows,
        tile_block_bytes(qtype),
    );
    let nb = row_bytes / bb;
    let mut out = vec![0u8; rows / COLS * nb * tbb];
    for t in 0..rows / COLS {
        for b in 0..nb {
            let dst = &mut out[(t * nb + b) * tbb..][..tbb];
            for j in 0..COLS {
                let blk = &src[(t * COLS + j) * row_bytes + b * bb..][..bb];
                move_block(qtype, blk, dst, j);
            }
        }
    }
    Some(out)
}

/// The GGUF bytes of row `r` of tiles `src` (`rows` rows): the inverse of [`interleave`].
pub(crate) fn row(qtype: QType, src: &[u8], rows: usize, r: usize) -> Vec<u8> {
    let (bb, tbb) = (qtype.block_bytes(), tile_block_bytes(qtype));
    let nb = src.len() / (rows / COLS) / tbb;
    let (t, j) = (r / COLS, r % COLS);
    let mut out = vec![0u8; nb * bb];
    for b in 0..nb {
        let tile_block = &src[(t * nb + b) * tbb..][..tbb];
        move_block_out(qtype, tile_block, &mut out[b * bb..(b + 1) * bb], j);
    }
    out
}

/// Copies GGUF block `blk` into column `j` of tile-block `dst`.
fn move_block(qtype: QType, blk: &[u8], dst: &mut [u8], j: usize) {
    match qtype {
        QType::Q4K => return repack_k::pack_q4k(blk, dst, j),
        QType::Q6K => return repack_k::pack_q6k(blk, dst, j),
        _ => {}
    }
    let f = fields(qtype);
    for i in 0..f {
        dst[i * 2 * COLS + j * 2..][..2].copy_from_slice(&blk[i * 2..i * 2 + 2]);
    }
    let (qs, head) = (&blk[2 * f..], 2 * f * COLS);
    for g in 0..qs.len() / 4 {
        dst[head + g * 4 * COLS + j * 4..][..4].copy_from_slice(&qs[g * 4..g * 4 + 4]);
    }
    if qtype == QType::Q5_0 {
        let at = head + j * 4;
        let qh = u32::from_le_bytes(dst[at..at + 4].try_into().expect("4 bytes"));
        dst[at..at + 4].copy_from_slice(&spread_high_bits(qh).to_le_bytes());
    }
}

/// Q5_0's 32 high bits (bit `v` for value `v`) rearranged so bit `8p + g` holds value `4g + p`:
/// the bits of group `g` then sit at bit `g` of the 4 bytes of the lane, one shift and one mask
/// from bit 4 of each byte.
fn spread_high_bits(qh: u32) -> u32 {
    (0..32).fold(0, |acc, v| {
        let (g, p) = (v / 4, v % 4);
        acc | (((qh >> v) & 1) << (8 * p + g))
    })
}

/// The inverse of [`spread_high_bits`].
fn gather_high_bits(h: u32) -> u32 {
    (0..32).fold(0, |acc, v| {
        let (g, p) = (v / 4, v % 4);
        acc | (((h >> (8 * p + g)) & 1) << v)
    })
}

/// Copies column `j` of tile-block `src` out as one GGUF block `blk`.
fn move_block_out(qtype: QType, src: &[u8], blk: &mut [u8], j: usize) {
    match qtype {
        QType::Q4K => return repack_k::unpack_q4k(src, blk, j),
        QType::Q6K => return repack_k::unpack_q6k(src, blk, j),
        _ => {}
    }
    let f = fields(qtype);
    for i in 0..f {
        blk[i * 2..i * 2 + 2].copy_from_slice(&src[i * 2 * COLS + j * 2..][..2]);
    }
    let head = 2 * f * COLS;
    let qs = &mut blk[2 * f..];
    for g in 0..qs.len() / 4 {
        qs[g * 4..g * 4 + 4].copy_from_slice(&src[head + g * 4 * COLS + j * 4..][..4]);
    }
    if qtype == QType::Q5_0 {
        let h = u32::from_le_bytes(qs[..4].try_into().expect("4 bytes"));
        qs[..4].copy_from_slice(&gather_high_bits(h).to_le_bytes());
    }
}

/// Columns `cols` of `out = acts · Wᵀ` for tiles `w` at level `lvl`. Tiles only partly inside
/// `cols` are computed whole and only the columns asked for are written.
pub(crate) fn matmul_cols(
    lvl: Level,
    qtype: QType,
    w: &[u8],
    acts: &Acts,
    cols: Range<usize>,
    out: OutPtr,
) {
    match lvl {
        Level::Scalar => scalar_cols(qtype, w, acts, cols, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => super::avx2::tiles_cols(qtype, w, acts, cols, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx512Vnni => super::avx512::tiles_cols(qtype, w, acts, cols, out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => scalar_cols(qtype, w, acts, cols, out),
    }
}

/// The reference: each column's GGUF row rebuilt, dotted by [`scalar::dot_row_fused`].
fn scalar_cols(qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    let tiles = w.len() / (acts.blocks() * tile_block_bytes(qtype));
    for c in cols {
        let wr = row(qtype, w, tiles * COLS, c);
        for r in 0..acts.rows {
            out.write(r, c, scalar::dot_row_fused(qtype, &wr, acts, r));
        }
    }
}

/// Row `r` of a part of `rows` rows, tiles when `interleaved`, as GGUF block bytes.
pub(crate) fn gguf_row<'a>(
    qtype: QType,
    bytes: &'a [u8],
    rows: usize,
    interleaved: bool,
    r: usize,
) -> Cow<'a, [u8]> {
    if interleaved {
        return Cow::Owned(row(qtype, bytes, rows, r));
    }
    let rb = bytes.len() / rows;
    Cow::Borrowed(&bytes[r * rb..(r + 1) * rb])
}

#[cfg(test)]
#[path = "repack_tests.rs"]
mod tests;
