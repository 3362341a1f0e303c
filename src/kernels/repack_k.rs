//! The K-quant tile-blocks of [`super::repack`]: 8 blocks (one 256-value super-block of 8
//! weight rows), their quantized bytes interleaved in chunks of 4 as the 32-value types' tiles
//! are, their scales laid out so one load gives the 8 columns' scales of a sub-block.
//!
//! Q4_K layout ([`Q4K_TILE_BYTES`] bytes; `j` the column, 0..8): `d` as 8 halves at `2j`, `dmin` at
//! `16 + 2j`; the scale of sub-block `s` at `32 + 8s + j`; the mins of sub-blocks `2p` and
//! `2p + 1` at `96 + 16p + 2j` and the byte after (one i16 pair per column once widened); then
//! the block's 128 nibble bytes in chunks of 4, chunk `c` at `160 + 32c + 4j` (low nibbles are
//! sub-block `2g`, high nibbles `2g + 1`, for the chunks `8g..8g + 8` of 64-value group `g`).
//! 32 bytes more than the 8 GGUF blocks (the 12 packed scale bytes become 16 plain ones).
//!
//! Q6_K layout ([`Q6K_TILE_BYTES`], the 8 blocks' bytes): `d` as 8 halves at `2j`; the i8
//! scales of sub-blocks `2p` and `2p + 1` at `16 + 16p + 2j` and the byte after (one i16 pair
//! per column once widened); `ql` in chunks of 4, chunk `c` at `144 + 32c + 4j`; `qh` in chunks
//! of 4, chunk `c` at `1168 + 32c + 4j`. GGUF's bit layout is kept: byte `l` of a 128-value
//! half's `qh` holds the high 2 bits of its values `l`, `l + 32`, `l + 64`, `l + 96`.

use super::blocks::scale_min_k4;
use super::repack::COLS;

/// Bytes of one Q4_K tile-block.
pub(crate) const Q4K_TILE_BYTES: usize = 160 + 128 * COLS;

/// Bytes of one Q6_K tile-block.
pub(crate) const Q6K_TILE_BYTES: usize = 210 * COLS;

/// Offset of the Q6_K scale pairs, `ql` chunks and `qh` chunks in a tile-block.
const Q6_SCALES: usize = 16;
const Q6_QL: usize = 144;
const Q6_QH: usize = 144 + 128 * COLS;

/// Copies GGUF Q6_K block `blk` (210 bytes) into column `j` of tile-block `dst`.
pub(crate) fn pack_q6k(blk: &[u8], dst: &mut [u8], j: usize) {
    dst[2 * j..2 * j + 2].copy_from_slice(&blk[208..210]);
    for s in 0..16 {
        dst[Q6_SCALES + 16 * (s / 2) + 2 * j + s % 2] = blk[192 + s];
    }
    for c in 0..32 {
        dst[Q6_QL + 32 * c + 4 * j..][..4].copy_from_slice(&blk[4 * c..4 * c + 4]);
    }
    for c in 0..16 {
        dst[Q6_QH + 32 * c + 4 * j..][..4].copy_from_slice(&blk[128 + 4 * c..132 + 4 * c]);
    }
}

/// Copies column `j` of tile-block `src` out as one GGUF Q6_K block: the inverse of
/// [`pack_q6k`].
pub(crate) fn unpack_q6k(src: &[u8], blk: &mut [u8], j: usize) {
    blk[208..210].copy_from_slice(&src[2 * j..2 * j + 2]);
    for s in 0..16 {
        blk[192 + s] = src[Q6_SCALES + 16 * (s / 2) + 2 * j + s % 2];
    }
    for c in 0..32 {
        blk[4 * c..4 * c + 4].copy_from_slice(&src[Q6_QL + 32 * c + 4 * j..][..4]);
    }
    for c in 0..16 {
        blk[128 + 4 * c..132 + 4 * c].copy_from_slice(&src[Q6_QH + 32 * c + 4 * j..][..4]);
    }
}

/// Offset of the scales, the min pairs and the quantized chunks in a tile-block.
const SCALES: usize = 32;
const MINS: usize = 96;
const QS: usize = 160;

/// Copies GGUF Q4_K block `blk` (144 bytes) into column `j` of tile-block `dst`.
pub(crate) fn pack_q4k(blk: &[u8], dst: &mut [u8], j: usize) {
    dst[2 * j..2 * j + 2].copy_from_slice(&blk[0..2]);
    dst[16 + 2 * j..16 + 2 * j + 2].copy_from_slice(&blk[2..4]);
    let scales: &[u8; 12] = blk[4..16].try_into().expect("12 scale bytes");
    for s in 0..8 {
        let (sc, m) = scale_min_k4(s, scales);
        dst[SCALES + 8 * s + j] = sc;
        dst[MINS + 16 * (s / 2) + 2 * j + s % 2] = m;
    }
    for c in 0..32 {
        dst[QS + 32 * c + 4 * j..][..4].copy_from_slice(&blk[16 + 4 * c..20 + 4 * c]);
    }
}

/// Copies column `j` of tile-block `src` out as one GGUF Q4_K block `blk`: the inverse of
/// [`pack_q4k`].
pub(crate) fn unpack_q4k(src: &[u8], blk: &mut [u8], j: usize) {
    blk[0..2].copy_from_slice(&src[2 * j..2 * j + 2]);
    blk[2..4].copy_from_slice(&src[16 + 2 * j..16 + 2 * j + 2]);
    let sc: [u8; 8] = std::array::from_fn(|s| src[SCALES + 8 * s + j]);
    let m: [u8; 8] = std::array::from_fn(|s| src[MINS + 16 * (s / 2) + 2 * j + s % 2]);
    blk[4..16].copy_from_slice(&encode_scales(&sc, &m));
    for c in 0..32 {
        blk[16 + 4 * c..20 + 4 * c].copy_from_slice(&src[QS + 32 * c + 4 * j..][..4]);
    }
}

/// The 12 packed bytes holding 6-bit scales `sc` and mins `m`: the inverse of
/// [`scale_min_k4`] (every bit of the 12 bytes is one of theirs, so the round trip is exact).
fn encode_scales(sc: &[u8; 8], m: &[u8; 8]) -> [u8; 12] {
    let mut q = [0u8; 12];
    for j in 0..4 {
        q[j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
        q[j + 4] = (m[j] & 63) | ((m[j + 4] >> 4) << 6);
        q[j + 8] = (sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_scale_bytes_round_trip() {
        // Every byte value at every position: the 12 bytes are all scale and min bits.
        for v in 0..=255u8 {
            for at in 0..12 {
                let mut q = [0x5Au8; 12];
                q[at] = v;
                let sc: [u8; 8] = std::array::from_fn(|s| scale_min_k4(s, &q).0);
                let m: [u8; 8] = std::array::from_fn(|s| scale_min_k4(s, &q).1);
                assert_eq!(encode_scales(&sc, &m), q, "byte {at} = {v}");
            }
        }
    }
}
