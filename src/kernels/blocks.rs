//! GGUF block layouts (ggml's `block_q4_0`, `block_q4_1`, `block_q5_0`, `block_q8_0`,
//! `block_q4_K`, `block_q6_K`) as `#[repr(C)]` structs over the file's bytes, the weight types
//! the kernels accept ([`QType`]), and plain dequantization used as the reference in tests.
//!
//! Scales are IEEE half (`half::f16`); every struct has alignment 1 or 2 and no padding, so a
//! row of blocks is exactly the bytes GGUF stores.

// Tiles and blocks index several parallel arrays with one row/column/value index.
#![allow(clippy::needless_range_loop)]

use half::f16;

/// Values per block of the 32-wide types.
pub(crate) const QK: usize = 32;
/// Values per block of the K-quants (a super-block).
pub(crate) const QK_K: usize = 256;

/// ggml `block_q4_0`: `x = d * (q - 8)`, q in 0..16; low nibbles are values 0..16, high 16..32.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ4_0 {
    pub d: f16,
    pub qs: [u8; QK / 2],
}

/// ggml `block_q4_1`: `x = d * q + m`, q in 0..16; nibble order as Q4_0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ4_1 {
    pub d: f16,
    pub m: f16,
    pub qs: [u8; QK / 2],
}

/// ggml `block_q5_0`: `x = d * (q - 16)`; bit 4 of value j is bit j of `qh` (little endian).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ5_0 {
    pub d: f16,
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

/// ggml `block_q8_0`: `x = d * q`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ8_0 {
    pub d: f16,
    pub qs: [i8; QK],
}

/// ggml `block_q4_K`: 8 sub-blocks of 32 with 6-bit scales and mins packed in `scales`;
/// `x = d * sc * q - dmin * m`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ4K {
    pub d: f16,
    pub dmin: f16,
    pub scales: [u8; 12],
    pub qs: [u8; QK_K / 2],
}

/// ggml `block_q6_K`: 16 sub-blocks of 16 with i8 scales; `x = d * sc * (q - 32)`, q 6 bits
/// (low 4 in `ql`, high 2 in `qh`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockQ6K {
    pub ql: [u8; QK_K / 2],
    pub qh: [u8; QK_K / 4],
    pub scales: [i8; QK_K / 16],
    pub d: f16,
}

const _: () = {
    assert!(std::mem::size_of::<BlockQ4_0>() == 18);
    assert!(std::mem::size_of::<BlockQ4_1>() == 20);
    assert!(std::mem::size_of::<BlockQ5_0>() == 22);
    assert!(std::mem::size_of::<BlockQ8_0>() == 34);
    assert!(std::mem::size_of::<BlockQ4K>() == 144);
    assert!(std::mem::size_of::<BlockQ6K>() == 210);
};

/// A weight type the kernels handle, with the activation type ggml dots it against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QType {
    Q4_0,
    Q4_1,
    Q5_0,
    Q8_0,
    Q4K,
    Q6K,
}

/// Activation block formats (ggml's `vec_dot_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActType {
    /// `block_q8_0`: 32 values, f16 scale.
    Q8_0,
    /// `block_q8_1`: 32 values, f16 scale and f16 `s = d * sum(q)`.
    Q8_1,
    /// `block_q8_K`: 256 values, f32 scale, 16 sums of 16.
    Q8K,
}

impl QType {
    /// Values per block.
    pub fn block_len(self) -> usize {
        match self {
            Self::Q4K | Self::Q6K => QK_K,
            _ => QK,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
            Self::Q5_0 => 22,
            Self::Q8_0 => 34,
            Self::Q4K => 144,
            Self::Q6K => 210,
        }
    }

    /// The activation format ggml quantizes the other operand to.
    pub fn act_type(self) -> ActType {
        match self {
            Self::Q4_1 => ActType::Q8_1,
            Self::Q4_0 | Self::Q5_0 | Self::Q8_0 => ActType::Q8_0,
            Self::Q4K | Self::Q6K => ActType::Q8K,
        }
    }

    /// The matching candle type, `None` for candle types the kernels do not handle.
    pub(crate) fn from_ggml(t: candle_core::quantized::GgmlDType) -> Option<Self> {
        use candle_core::quantized::GgmlDType as G;
        Some(match t {
            G::Q4_0 => Self::Q4_0,
            G::Q4_1 => Self::Q4_1,
            G::Q5_0 => Self::Q5_0,
            G::Q8_0 => Self::Q8_0,
            G::Q4K => Self::Q4K,
            G::Q6K => Self::Q6K,
            _ => return None,
        })
    }
}

/// 6-bit scale and min of sub-block `j` of a Q4_K block (ggml `get_scale_min_k4`).
pub(crate) fn scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Dequantizes one row of `qtype` blocks (`bytes`) into `out` (ggml's `dequantize_row_*`).
pub fn dequantize_row(qtype: QType, bytes: &[u8], out: &mut [f32]) {
    let nb = bytes.len() / qtype.block_bytes();
    assert_eq!(
        out.len(),
        nb * qtype.block_len(),
        "dequantize_row: length mismatch"
    );
    for (b, out) in out.chunks_exact_mut(qtype.block_len()).enumerate() {
        let blk = &bytes[b * qtype.block_bytes()..(b + 1) * qtype.block_bytes()];
        dequantize_block(qtype, blk, out);
    }
}

fn dequantize_block(qtype: QType, blk: &[u8], y: &mut [f32]) {
    // SAFETY: `blk` is exactly one block; block structs accept any bits; alignment is checked
    // in debug builds and all fields are read by value through `read_unaligned`.
    let p = blk.as_ptr();
    match qtype {
        QType::Q4_0 => {
            let b = unsafe { p.cast::<BlockQ4_0>().read_unaligned() };
            let d = b.d.to_f32();
            for j in 0..QK / 2 {
                y[j] = ((b.qs[j] & 0xF) as i32 - 8) as f32 * d;
                y[j + QK / 2] = ((b.qs[j] >> 4) as i32 - 8) as f32 * d;
            }
        }
        QType::Q4_1 => {
            let b = unsafe { p.cast::<BlockQ4_1>().read_unaligned() };
            let (d, m) = (b.d.to_f32(), b.m.to_f32());
            for j in 0..QK / 2 {
                y[j] = (b.qs[j] & 0xF) as f32 * d + m;
                y[j + QK / 2] = (b.qs[j] >> 4) as f32 * d + m;
            }
        }
        QType::Q5_0 => {
            let b = unsafe { p.cast::<BlockQ5_0>().read_unaligned() };
            let d = b.d.to_f32();
            for j in 0..QK {
                y[j] = (q5_value(&b, j) - 16) as f32 * d;
            }
        }
        QType::Q8_0 => {
            let b = unsafe { p.cast::<BlockQ8_0>().read_unaligned() };
            let d = b.d.to_f32();
            for j in 0..QK {
                y[j] = b.qs[j] as f32 * d;
            }
        }
        QType::Q4K => {
            let b = unsafe { p.cast::<BlockQ4K>().read_unaligned() };
            let (d, dmin) = (b.d.to_f32(), b.dmin.to_f32());
            for j in 0..QK_K {
                let (sc, m) = scale_min_k4(j / 32, &b.scales);
                y[j] = d * sc as f32 * q4k_value(&b, j) as f32 - dmin * m as f32;
            }
        }
        QType::Q6K => {
            let b = unsafe { p.cast::<BlockQ6K>().read_unaligned() };
            let d = b.d.to_f32();
            for j in 0..QK_K {
                y[j] = d * b.scales[j / 16] as f32 * (q6k_value(&b, j) - 32) as f32;
            }
        }
    }
}

/// The unsigned 5-bit value `j` (0..32) of a Q5_0 block.
pub(crate) fn q5_value(b: &BlockQ5_0, j: usize) -> i32 {
    let qh = u32::from_le_bytes(b.qh);
    let lo = if j < 16 {
        b.qs[j] & 0xF
    } else {
        b.qs[j - 16] >> 4
    };
    (lo as i32) | ((((qh >> j) & 1) as i32) << 4)
}

/// The unsigned 4-bit value `j` (0..256) of a Q4_K block: 64-value groups, low nibbles first.
pub(crate) fn q4k_value(b: &BlockQ4K, j: usize) -> i32 {
    let (g, r) = (j / 64, j % 64);
    let byte = b.qs[g * 32 + r % 32];
    (if r < 32 { byte & 0xF } else { byte >> 4 }) as i32
}

/// The unsigned 6-bit value `j` (0..256) of a Q6_K block (ggml's 128-value halves).
pub(crate) fn q6k_value(b: &BlockQ6K, j: usize) -> i32 {
    let (h, r) = (j / 128, j % 128);
    let (quarter, l) = (r / 32, r % 32);
    let ql = b.ql[h * 64 + l + if quarter % 2 == 1 { 32 } else { 0 }];
    let lo = if quarter < 2 { ql & 0xF } else { ql >> 4 };
    let hi = (b.qh[h * 32 + l] >> (2 * quarter)) & 3;
    (lo | (hi << 4)) as i32
}
