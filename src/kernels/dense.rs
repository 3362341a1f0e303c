//! Dense half-precision matrices (f16 or bf16 weights, f32 activations): `y[T, n] = x[T, k] ·
//! W[n, k]ᵀ` with each weight converted to f32 as it is loaded (F16C or a 16-bit shift for
//! bf16) and every product accumulated in f32. The activations are never rounded to half
//! precision (llama.cpp rounds them to the weight's type; candle's gemm does the same here).
//!
//! A matrix is stored in groups of [`GROUP`] rows, interleaved along `k` (element `(r, j)` at
//! `(r / GROUP) · GROUP · k + j · GROUP + r % GROUP`; the last group padded with zero rows), so
//! one register load holds one input feature's weights for a group's rows and a kernel
//! multiplies it by a token's activation broadcast to every lane. Every output is then one
//! fused multiply-add per input feature, in order from the first: the scalar reference
//! (`f32::mul_add`), every level, every tile, T and thread split give the same bits.
//!
//! The driver splits the groups into chunks on the pool like the quantized matmul
//! ([`super::matmul`]); inside a chunk the level's kernel ([`super::dense_x86`]) walks blocks of
//! tokens and, per block, register tiles of row groups × tokens.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::matmul::{as_uninit, OutPtr};
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

/// Rows per interleaved group: one 512-bit register of f32, two 256-bit ones.
pub const GROUP: usize = 16;

/// An `[n, k]` matrix of 16-bit floats, stored in interleaved groups of [`GROUP`] rows.
#[derive(Debug, Clone)]
pub struct HalfMatrix {
    ty: HalfType,
    n: usize,
    k: usize,
    /// `n.div_ceil(GROUP)` groups of `k × GROUP` elements.
    bits: Vec<u16>,
}

impl HalfMatrix {
    /// `n` rows of `k` elements (`bits` row-major); `None` unless `bits.len() == n * k`.
    pub fn new(ty: HalfType, n: usize, k: usize, bits: Vec<u16>) -> Option<Self> {
        Self::packed(ty, n, k, &bits, |&b| b)
    }

    /// `values` (`[n, k]`, f32) rounded to `ty`, packed straight into groups (no row-major copy
    /// of the rounded matrix beside the packed one while a model loads).
    pub fn from_f32(ty: HalfType, n: usize, k: usize, values: &[f32]) -> Option<Self> {
        Self::packed(ty, n, k, values, |&v| ty.from_f32(v))
    }

    /// Row-major `src` (`n × k`) through `bits` into groups; `None` unless its length is `n × k`.
    fn packed<T>(
        ty: HalfType,
        n: usize,
        k: usize,
        src: &[T],
        bits: impl Fn(&T) -> u16,
    ) -> Option<Self> {
        if n.checked_mul(k) != Some(src.len()) {
            return None;
        }
        let mut packed = vec![0u16; n.div_ceil(GROUP) * GROUP * k];
        for (r, row) in src.chunks_exact(k.max(1)).enumerate().take(n) {
            let group = &mut packed[(r / GROUP) * GROUP * k..];
            for (j, v) in row.iter().enumerate() {
                group[j * GROUP + r % GROUP] = bits(v);
            }
        }
        Some(Self {
            ty,
            n,
            k,
            bits: packed,
        })
    }

    /// The matrices stacked along the output axis, when all have one type and width.
    pub fn concat(parts: &[&HalfMatrix]) -> Option<HalfMatrix> {
        let first = parts.first()?;
        if parts.iter().any(|p| p.ty != first.ty || p.k != first.k) {
            return None;
        }
        let rows = parts.iter().flat_map(|p| (0..p.n).flat_map(|r| p.row(r)));
        let n = parts.iter().map(|p| p.n).sum();
        Self::new(first.ty, n, first.k, rows.collect())
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

    /// Row `r`'s elements, in order.
    pub fn row(&self, r: usize) -> Vec<u16> {
        let g = self.group(r / GROUP);
        (0..self.k).map(|j| g[j * GROUP + r % GROUP]).collect()
    }

    /// Groups of [`GROUP`] rows (the last one padded).
    pub fn groups(&self) -> usize {
        self.n.div_ceil(GROUP)
    }

    /// Group `g`: `k` runs of [`GROUP`] elements, one per input feature.
    pub fn group(&self, g: usize) -> &[u16] {
        &self.bits[g * GROUP * self.k..][..GROUP * self.k]
    }

    /// `out[T, n] = x[T, k] · Wᵀ` at the current runtime's level.
    pub fn matmul(&self, x: &[f32], t: usize, out: &mut [f32]) {
        matmul_at(super::level(), self, x, t, out)
    }

    /// [`Self::matmul`] into a buffer not yet written (every element is written once).
    pub(crate) fn matmul_uninit(&self, x: &[f32], t: usize, out: &mut [MaybeUninit<f32>]) {
        matmul_uninit_at(super::level(), self, x, t, out)
    }
}

/// `out[T, n] = x[T, k] · Wᵀ` at kernel level `lvl` (tests compare levels side by side).
/// Panics if the CPU lacks `lvl` or the slices are not `T × k` and `T × n`.
pub fn matmul_at(lvl: Level, w: &HalfMatrix, x: &[f32], t: usize, out: &mut [f32]) {
    matmul_uninit_at(lvl, w, x, t, as_uninit(out))
}

/// [`matmul_at`] into a buffer not yet written: every element of `out` is written once.
fn matmul_uninit_at(lvl: Level, w: &HalfMatrix, x: &[f32], t: usize, out: &mut [MaybeUninit<f32>]) {
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
        return run_groups(lvl, w, x, t, 0..w.groups(), dst);
    }
    let parts = pairs(w.groups(), threads * 2);
    super::team::for_each(parts.len(), |i| {
        run_groups(lvl, w, x, t, parts[i].clone(), dst)
    });
}

/// `groups` split into at most `parts` near-equal ranges, each but the last an even count (the
/// widest tile takes two groups).
fn pairs(groups: usize, parts: usize) -> Vec<Range<usize>> {
    let units = groups.div_ceil(2);
    let parts = parts.clamp(1, units.max(1));
    (0..parts)
        .map(|i| (units * i / parts * 2).min(groups)..(units * (i + 1) / parts * 2).min(groups))
        .filter(|r| !r.is_empty())
        .collect()
}

fn run_groups(lvl: Level, w: &HalfMatrix, x: &[f32], t: usize, groups: Range<usize>, out: OutPtr) {
    match lvl {
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => super::dense_x86::matmul_groups_avx2(w, x, t, groups, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx512Vnni => super::dense_x86::matmul_groups_avx512(w, x, t, groups, out),
        _ => matmul_groups_scalar(w, x, t, groups, out),
    }
}

/// The reference: every output one fused multiply-add per input feature, in order.
fn matmul_groups_scalar(w: &HalfMatrix, x: &[f32], t: usize, groups: Range<usize>, out: OutPtr) {
    let rows = groups.start * GROUP..(groups.end * GROUP).min(w.n);
    for r in rows {
        let wr = w.row(r);
        for tok in 0..t {
            let xr = &x[tok * w.k..][..w.k];
            let s = wr
                .iter()
                .zip(xr)
                .fold(0f32, |s, (&b, &v)| w.ty.to_f32(b).mul_add(v, s));
            out.write(tok, r, s);
        }
    }
}
