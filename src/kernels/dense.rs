//! Dense half-precision matrices (f16 or bf16 weights, f32 activations): `y[T, n] = x[T, k] ·
//! W[n, k]ᵀ` with each weight converted to f32 as it is loaded (F16C or a 16-bit shift for
//! bf16) and every product accumulated in f32. The activations are never rounded to half
//! precision (llama.cpp rounds them to the weight's type; candle's gemm does the same here).
//!
//! The driver splits the output columns into chunks on the pool like the quantized matmul
//! ([`super::matmul`]); inside a chunk the level's kernel ([`super::dense_x86`]) walks blocks of
//! tokens and, per block, register tiles of weight rows × tokens. Each output element's
//! operation order depends only on the level and `k` (lane-wise sums over `k` in steps of the
//! register width, one horizontal sum, then the tail in order), never on T or the tile the
//! element lands in: a row's result is bit-identical whichever other rows share the call.

use rayon::prelude::*;

use super::matmul::{chunk_ranges, OutPtr};
use super::{pool, Level};

/// Below this many multiply-adds (T × n × k) a matmul runs on the calling thread only.
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// How a dense matrix's 16-bit elements encode their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfType {
    /// IEEE binary16.
    F16,
    /// bfloat16 (the upper half of an f32).
    Bf16,
}

impl HalfType {
    /// The element `bits` as f32 (exact).
    #[inline(always)]
    pub fn to_f32(self, bits: u16) -> f32 {
        match self {
            HalfType::F16 => half::f16::from_bits(bits).to_f32(),
            HalfType::Bf16 => f32::from_bits(u32::from(bits) << 16),
        }
    }

    /// `v` rounded to this type (to nearest, ties to even).
    pub fn from_f32(self, v: f32) -> u16 {
        match self {
            HalfType::F16 => half::f16::from_f32(v).to_bits(),
            HalfType::Bf16 => half::bf16::from_f32(v).to_bits(),
        }
    }
}

/// A row-major `[n, k]` matrix of 16-bit floats.
#[derive(Debug, Clone)]
pub struct HalfMatrix {
    ty: HalfType,
    n: usize,
    k: usize,
    bits: Vec<u16>,
}

impl HalfMatrix {
    /// `n` rows of `k` elements; `None` unless `bits.len() == n * k`.
    pub fn new(ty: HalfType, n: usize, k: usize, bits: Vec<u16>) -> Option<Self> {
        (n.checked_mul(k) == Some(bits.len())).then_some(Self { ty, n, k, bits })
    }

    /// `values` (`[n, k]`, f32) rounded to `ty`.
    pub fn from_f32(ty: HalfType, n: usize, k: usize, values: &[f32]) -> Option<Self> {
        let bits = values.iter().map(|&v| ty.from_f32(v)).collect();
        Self::new(ty, n, k, bits)
    }

    /// The matrices stacked along the output axis, when all have one type and width.
    pub fn concat(parts: &[&HalfMatrix]) -> Option<HalfMatrix> {
        let first = parts.first()?;
        if parts.iter().any(|p| p.ty != first.ty || p.k != first.k) {
            return None;
        }
        let bits = parts.iter().flat_map(|p| p.bits.iter().copied()).collect();
        Self::new(first.ty, parts.iter().map(|p| p.n).sum(), first.k, bits)
    }

    /// The element type.
    pub fn half_type(&self) -> HalfType {
        self.ty
    }

    /// Rows (output features).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Columns (input features).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Row `r`'s elements.
    pub fn row(&self, r: usize) -> &[u16] {
        &self.bits[r * self.k..][..self.k]
    }

    /// `out[T, n] = x[T, k] · Wᵀ` at the current runtime's level.
    pub fn matmul(&self, x: &[f32], t: usize, out: &mut [f32]) {
        matmul_at(super::level(), self, x, t, out)
    }
}

/// `out[T, n] = x[T, k] · Wᵀ` at kernel level `lvl` (tests compare levels side by side).
/// Panics if the CPU lacks `lvl` or the slices are not `T × k` and `T × n`.
pub fn matmul_at(lvl: Level, w: &HalfMatrix, x: &[f32], t: usize, out: &mut [f32]) {
    assert!(
        lvl.available(),
        "kernel level {lvl} is not available on this CPU"
    );
    assert_eq!(x.len(), t * w.k, "dense matmul: x is not T × k");
    assert_eq!(out.len(), t * w.n, "dense matmul: out is not T × n");
    if t == 0 || w.n == 0 {
        return;
    }
    let dst = OutPtr::new(out, t, w.n);
    let threads = pool::threads();
    if threads <= 1 || t * w.n * w.k < PARALLEL_MIN_MACS {
        return run_rows(lvl, w, x, t, 0..w.n, dst);
    }
    chunk_ranges(w.n, threads * 2)
        .into_par_iter()
        .for_each(|rows| run_rows(lvl, w, x, t, rows, dst));
}

fn run_rows(
    lvl: Level,
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    rows: std::ops::Range<usize>,
    out: OutPtr,
) {
    match lvl {
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => super::dense_x86::matmul_rows_avx2(w, x, t, rows, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx512Vnni => super::dense_x86::matmul_rows_avx512(w, x, t, rows, out),
        _ => matmul_rows_scalar(w, x, t, rows, out),
    }
}

/// The reference: every output a sequential f32 sum over `k` of exact products' roundings.
fn matmul_rows_scalar(
    w: &HalfMatrix,
    x: &[f32],
    t: usize,
    rows: std::ops::Range<usize>,
    out: OutPtr,
) {
    for r in rows {
        let wr = w.row(r);
        for tok in 0..t {
            let xr = &x[tok * w.k..][..w.k];
            let s = wr
                .iter()
                .zip(xr)
                .fold(0f32, |s, (&b, &v)| s + w.ty.to_f32(b) * v);
            out.write(tok, r, s);
        }
    }
}
