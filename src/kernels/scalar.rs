//! Plain reference dots, one weight row against one activation row: the truth every SIMD
//! kernel is tested against, and the kernel used when the level is [`super::Level::Scalar`].
//!
//! Per block: the integer dot of the quantized values (exact), then ggml's float combination
//! `(d_w * d_a) * sumi` (+ `m_w * s_a` for Q4_1, `- dmin_w * d_a * sum(m * bsums)` for Q4_K),
//! accumulated over blocks in order in f32.

use super::blocks::{q4k_value, q5_value, q6k_value};
use super::blocks::{
    scale_min_k4, BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ6K, BlockQ8_0, QType, QK,
};
use super::quantize::Acts;

/// Dot of one weight row (`w`: the row's GGUF block bytes) with activation row `r`.
pub fn dot_row(qtype: QType, w: &[u8], acts: &Acts, r: usize) -> f32 {
    let nb = acts.blocks();
    debug_assert_eq!(w.len(), nb * qtype.block_bytes());
    let mut sumf = 0f32;
    for b in 0..nb {
        let blk = &w[b * qtype.block_bytes()..(b + 1) * qtype.block_bytes()];
        let a = acts.block(r, b);
        let da = acts.d[r * nb + b];
        sumf += match qtype {
            QType::Q4_0 => {
                let x: BlockQ4_0 = read(blk);
                let sumi = nibble_dot(&x.qs, a) - 8 * isum(a);
                (x.d.to_f32() * da) * sumi as f32
            }
            QType::Q4_1 => {
                let x: BlockQ4_1 = read(blk);
                let sumi = nibble_dot(&x.qs, a);
                (x.d.to_f32() * da) * sumi as f32 + x.m.to_f32() * acts.s[r * nb + b]
            }
            QType::Q5_0 => {
                let x: BlockQ5_0 = read(blk);
                let sumi: i32 = (0..QK).map(|j| (q5_value(&x, j) - 16) * a[j] as i32).sum();
                (x.d.to_f32() * da) * sumi as f32
            }
            QType::Q8_0 => {
                let x: BlockQ8_0 = read(blk);
                let sumi: i32 = x.qs.iter().zip(a).map(|(&w, &a)| w as i32 * a as i32).sum();
                (x.d.to_f32() * da) * sumi as f32
            }
            QType::Q4K => q4k_block(&read(blk), a, &acts.bsums[(r * nb + b) * 16..][..16], da),
            QType::Q6K => q6k_block(&read(blk), a, da),
        };
    }
    sumf
}

/// The reference of the repacked tile kernels ([`super::repack`]), for the block types they
/// run: per block the exact integer dot, then `acc = fma(d_w * d_a, sumi, acc)` (then
/// `acc = fma(m_w, s_a, acc)` for Q4_1), one rounding per product-add as ggml's repacked
/// kernels round (`_mm256_fmadd_ps` of the column and row scales' product). Q4_K: see
/// [`q4k_fused`].
pub fn dot_row_fused(qtype: QType, w: &[u8], acts: &Acts, r: usize) -> f32 {
    let nb = acts.blocks();
    debug_assert_eq!(w.len(), nb * qtype.block_bytes());
    if qtype == QType::Q4K {
        return q4k_fused(w, acts, r);
    }
    let mut acc = 0f32;
    for b in 0..nb {
        let blk = &w[b * qtype.block_bytes()..(b + 1) * qtype.block_bytes()];
        let (a, i) = (acts.block(r, b), r * nb + b);
        let (d, sumi, m) = match qtype {
            QType::Q4_0 => {
                let x: BlockQ4_0 = read(blk);
                (x.d, nibble_dot(&x.qs, a) - 8 * isum(a), None)
            }
            QType::Q4_1 => {
                let x: BlockQ4_1 = read(blk);
                (x.d, nibble_dot(&x.qs, a), Some(x.m))
            }
            QType::Q5_0 => {
                let x: BlockQ5_0 = read(blk);
                let sumi = (0..QK).map(|j| (q5_value(&x, j) - 16) * a[j] as i32).sum();
                (x.d, sumi, None)
            }
            QType::Q8_0 => {
                let x: BlockQ8_0 = read(blk);
                let sumi = x.qs.iter().zip(a).map(|(&w, &a)| w as i32 * a as i32).sum();
                (x.d, sumi, None)
            }
            QType::Q6K => {
                let x: BlockQ6K = read(blk);
                (x.d, q6k_isum(&x, a), None)
            }
            QType::Q4K => unreachable!("Q4_K's fused reference is q4k_fused"),
        };
        acc = (d.to_f32() * acts.d[i]).mul_add(sumi as f32, acc);
        if let Some(m) = m {
            acc = m.to_f32().mul_add(acts.s[i], acc);
        }
    }
    acc
}

/// Q4_K's fused reference: per super-block the exact `isumq = sum(sc * dot)` and
/// `msum = sum(m * bsum)`, then `acc = fma(d_w * d_a, isumq, acc)` and
/// `macc = fma(dmin_w * d_a, msum, macc)`; the result `acc - macc`.
fn q4k_fused(w: &[u8], acts: &Acts, r: usize) -> f32 {
    let nb = acts.blocks();
    let (mut acc, mut macc) = (0f32, 0f32);
    for b in 0..nb {
        let x: BlockQ4K = read(&w[b * 144..(b + 1) * 144]);
        let (a, i) = (acts.block(r, b), r * nb + b);
        let (isumq, msum) = q4k_sums(&x, a, &acts.bsums[i * 16..][..16]);
        acc = (x.d.to_f32() * acts.d[i]).mul_add(isumq as f32, acc);
        macc = (x.dmin.to_f32() * acts.d[i]).mul_add(msum as f32, macc);
    }
    acc - macc
}

/// Reads one block struct from its bytes (any alignment).
fn read<T: Copy>(blk: &[u8]) -> T {
    assert!(
        blk.len() >= std::mem::size_of::<T>(),
        "short block; this is a bug"
    );
    // SAFETY: length checked; block structs are plain bytes and halves, valid for any bits.
    unsafe { blk.as_ptr().cast::<T>().read_unaligned() }
}

/// `sum(q_j * a_j)` of 32 unsigned nibbles (low nibbles values 0..16, high 16..32).
fn nibble_dot(qs: &[u8; QK / 2], a: &[i8]) -> i32 {
    let mut s = 0i32;
    for j in 0..QK / 2 {
        s += (qs[j] & 0xF) as i32 * a[j] as i32 + (qs[j] >> 4) as i32 * a[j + QK / 2] as i32;
    }
    s
}

fn isum(a: &[i8]) -> i32 {
    a.iter().map(|&x| x as i32).sum()
}

fn q4k_block(x: &BlockQ4K, a: &[i8], bsums: &[i16], da: f32) -> f32 {
    let (isumq, msum) = q4k_sums(x, a, bsums);
    (x.d.to_f32() * da) * isumq as f32 - (x.dmin.to_f32() * da) * msum as f32
}

/// A Q4_K block's exact `sum(sc * dot)` over its sub-blocks and `sum(m * bsum)`.
fn q4k_sums(x: &BlockQ4K, a: &[i8], bsums: &[i16]) -> (i32, i32) {
    let mut isumq = 0i32;
    let mut msum = 0i32;
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, &x.scales);
        let dot: i32 = (j * 32..j * 32 + 32)
            .map(|v| q4k_value(x, v) * a[v] as i32)
            .sum();
        isumq += sc as i32 * dot;
        msum += m as i32 * (bsums[2 * j] as i32 + bsums[2 * j + 1] as i32);
    }
    (isumq, msum)
}

fn q6k_block(x: &BlockQ6K, a: &[i8], da: f32) -> f32 {
    (x.d.to_f32() * da) * q6k_isum(x, a) as f32
}

/// A Q6_K block's exact `sum(sc * dot)` over its 16 sub-blocks, the offset 32 removed.
fn q6k_isum(x: &BlockQ6K, a: &[i8]) -> i32 {
    let mut isumq = 0i32;
    for j in 0..16 {
        let dot: i32 = (j * 16..j * 16 + 16)
            .map(|v| (q6k_value(x, v) - 32) * a[v] as i32)
            .sum();
        isumq += x.scales[j] as i32 * dot;
    }
    isumq
}

/// `out[r * n + c] = dot(w row c, act row r)` for columns `cols` of an `n`-column output.
pub(crate) fn matmul_cols(
    qtype: QType,
    w: &[u8],
    acts: &Acts,
    cols: std::ops::Range<usize>,
    out: super::matmul::OutPtr,
) {
    let row_bytes = acts.blocks() * qtype.block_bytes();
    for c in cols {
        let wr = &w[c * row_bytes..(c + 1) * row_bytes];
        for r in 0..acts.rows {
            out.write(r, c, dot_row(qtype, wr, acts, r));
        }
    }
}
