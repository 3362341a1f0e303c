//! Activations, quantized once per matmul for all T rows into the block format ggml dots the
//! weight type against: Q8_0, Q8_1 or Q8_K, value for value as ggml's reference
//! `quantize_row_q8_0_ref`, `quantize_row_q8_1_ref` and `quantize_row_q8_K_ref`.
//!
//! The blocks are stored split ([`Acts`]): all int8 values of a row contiguous (so a SIMD load
//! of a block is one aligned-enough 32-byte load), scales as f32 already rounded through f16
//! exactly as the GGUF block would hold them, plus the per-block extras each format carries.

use half::f16;

use super::blocks::{ActType, QK, QK_K};

/// T rows of quantized activations, reused across calls (buffers only grow).
#[derive(Debug, Default)]
pub struct Acts {
    /// Format of the blocks.
    pub kind: Option<ActType>,
    /// Rows (T).
    pub rows: usize,
    /// Values per row.
    pub k: usize,
    /// `rows * k` int8 values.
    pub qs: Vec<i8>,
    /// Per block scale: Q8_0/Q8_1 `f16(d)` as f32; Q8_K the f32 `d`. `rows * blocks`.
    pub d: Vec<f32>,
    /// Q8_1 only: per block `f16(d * sum(q))` as f32. `rows * blocks`.
    pub s: Vec<f32>,
    /// Q8_0 only: per block and per group of 4 values, `sum(q)` (8 per block), for kernels
    /// that dot unsigned weights and subtract their offset. `rows * blocks * 8`.
    pub sum4: Vec<i32>,
    /// Q8_0 only: per block `sum(q)`, for tile kernels that subtract an offset per block.
    /// `rows * blocks`.
    pub sums: Vec<i32>,
    /// Q8_K only: sums of each 16 values (16 per block). `rows * blocks * 16`.
    pub bsums: Vec<i16>,
}

impl Acts {
    /// Values per block of this format.
    pub fn block_len(&self) -> usize {
        match self.kind {
            Some(ActType::Q8K) => QK_K,
            _ => QK,
        }
    }

    /// Blocks per row.
    pub(crate) fn blocks(&self) -> usize {
        self.k / self.block_len()
    }

    /// Quantizes `x` (`rows * k` f32, row-major) into this buffer as `kind`.
    /// `k` must be a multiple of the block length.
    pub fn quantize(&mut self, kind: ActType, x: &[f32], rows: usize, k: usize) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features (checked above).
            return unsafe { self.quantize_avx2(kind, x, rows, k) };
        }
        self.quantize_here(kind, x, rows, k)
    }

    /// [`Self::quantize`] compiled for AVX2, so the rounding and the scale search vectorise;
    /// the same values as the portable build (rounding is exact either way).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn quantize_avx2(&mut self, kind: ActType, x: &[f32], rows: usize, k: usize) {
        self.quantize_here(kind, x, rows, k)
    }

    #[inline(always)]
    fn quantize_here(&mut self, kind: ActType, x: &[f32], rows: usize, k: usize) {
        self.kind = Some(kind);
        self.rows = rows;
        self.k = k;
        let nb = self.blocks();
        assert_eq!(x.len(), rows * k, "quantize: x is not rows × k");
        assert_eq!(nb * self.block_len(), k, "quantize: k is not whole blocks");
        resize(&mut self.qs, rows * k);
        resize(&mut self.d, rows * nb);
        match kind {
            ActType::Q8_0 => {
                resize(&mut self.sum4, rows * nb * 8);
                resize(&mut self.sums, rows * nb);
            }
            ActType::Q8_1 => resize(&mut self.s, rows * nb),
            ActType::Q8K => resize(&mut self.bsums, rows * nb * 16),
        }
        for i in 0..rows * nb {
            let bl = self.block_len();
            let (xs, qs) = (&x[i * bl..(i + 1) * bl], &mut self.qs[i * bl..(i + 1) * bl]);
            match kind {
                ActType::Q8_0 => {
                    self.d[i] = quantize_q8_0(xs, qs);
                    for (g, s) in self.sum4[i * 8..i * 8 + 8].iter_mut().enumerate() {
                        *s = qs[g * 4..g * 4 + 4].iter().map(|&q| q as i32).sum();
                    }
                    self.sums[i] = self.sum4[i * 8..i * 8 + 8].iter().sum();
                }
                ActType::Q8_1 => (self.d[i], self.s[i]) = quantize_q8_1(xs, qs),
                ActType::Q8K => {
                    self.d[i] = quantize_q8_k(xs, qs);
                    for (g, s) in self.bsums[i * 16..i * 16 + 16].iter_mut().enumerate() {
                        *s = qs[g * 16..g * 16 + 16].iter().map(|&q| q as i16).sum();
                    }
                }
            }
        }
    }

    /// The int8 values of block `b` of row `r`.
    pub(crate) fn block(&self, r: usize, b: usize) -> &[i8] {
        let bl = self.block_len();
        &self.qs[r * self.k + b * bl..r * self.k + (b + 1) * bl]
    }
}

fn resize<T: Default + Clone>(v: &mut Vec<T>, n: usize) {
    if v.len() != n {
        v.resize(n, T::default());
    }
}

#[inline(always)]
/// The largest `|x|` (NaNs ignored, 0 for none), in 8 lanes so the maxima do not form one
/// chain; the maximum does not depend on the order it is taken in.
fn amax(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (m, x) in lanes.iter_mut().zip(c) {
            *m = m.max(x.abs());
        }
    }
    let tail = chunks.remainder().iter().fold(0f32, |a, x| a.max(x.abs()));
    lanes.iter().fold(tail, |a, &m| a.max(m))
}

/// One Q8_0 block (ggml `quantize_row_q8_0_ref`): returns the f16-rounded scale.
#[inline(always)]
pub(crate) fn quantize_q8_0(xs: &[f32], qs: &mut [i8]) -> f32 {
    let d = amax(xs) / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (q, &x) in qs.iter_mut().zip(xs) {
        *q = (x * id).round() as i8;
    }
    f16::from_f32(d).to_f32()
}

/// One Q8_1 block (ggml `quantize_row_q8_1_ref`): returns `(f16(d), f16(d * sum))` as f32.
#[inline(always)]
pub(crate) fn quantize_q8_1(xs: &[f32], qs: &mut [i8]) -> (f32, f32) {
    let d = amax(xs) / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0i32;
    for (q, &x) in qs.iter_mut().zip(xs) {
        *q = (x * id).round() as i8;
        sum += *q as i32;
    }
    (
        f16::from_f32(d).to_f32(),
        f16::from_f32(sum as f32 * d).to_f32(),
    )
}

/// One Q8_K block (ggml `quantize_row_q8_K_ref`): returns the f32 scale.
#[inline(always)]
pub(crate) fn quantize_q8_k(xs: &[f32], qs: &mut [i8]) -> f32 {
    // The first value of the largest magnitude, as the reference's running comparison picks
    // it (NaNs never win), in two passes so the first vectorises.
    let amax = amax(xs);
    let max = xs.iter().copied().find(|x| x.abs() == amax).unwrap_or(0.0);
    if amax == 0.0 {
        qs.fill(0);
        return 0.0;
    }
    let iscale = -127.0 / max;
    for (q, &x) in qs.iter_mut().zip(xs) {
        *q = ((iscale * x).round_ties_even() as i32).min(127) as i8;
    }
    1.0 / iscale
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Q8_K's scale takes its sign from the first value of the largest magnitude (ggml's
    /// running comparison), ignoring NaNs.
    #[test]
    fn q8_k_takes_the_first_value_of_the_largest_magnitude() {
        let mut qs = [0i8; QK_K];
        for (first, second) in [(-3.0f32, 3.0f32), (3.0, -3.0)] {
            let mut x = [0.5f32; QK_K];
            (x[7], x[100], x[200]) = (f32::NAN, first, second);
            let d = quantize_q8_k(&x, &mut qs);
            assert_eq!(d, 1.0 / (-127.0 / first), "first {first}");
            assert_eq!((qs[100], qs[200]), (-127, 127), "first {first}");
        }
        assert_eq!(quantize_q8_k(&[0.0; QK_K], &mut qs), 0.0);
    }

    /// The AVX2 build rounds exactly as the portable one: random blocks, blocks whose scale is
    /// 1 so halves (2.5, -0.5) meet the rounding, and zero blocks.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx2_build_equals_the_portable_one() {
        if !std::arch::is_x86_feature_detected!("avx2")
            || !std::arch::is_x86_feature_detected!("fma")
        {
            return;
        }
        let mut rng = StdRng::seed_from_u64(3);
        let (rows, k) = (3, 512);
        let mut x: Vec<f32> = (0..rows * k)
            .map(|_| rng.random_range(-4.0f32..4.0))
            .collect();
        for (i, v) in x[..256].iter_mut().enumerate() {
            *v = (i % 40) as f32 - 20.5;
        }
        x[0] = -127.0;
        x[32] = 127.0;
        x[256 + 64..256 + 96].fill(0.0);
        for kind in [ActType::Q8_0, ActType::Q8_1, ActType::Q8K] {
            let (mut a, mut b) = (Acts::default(), Acts::default());
            a.quantize_here(kind, &x, rows, k);
            // SAFETY: the features were checked above.
            unsafe { b.quantize_avx2(kind, &x, rows, k) };
            assert_eq!(a.qs, b.qs, "{kind:?}: values");
            assert_eq!(a.d, b.d, "{kind:?}: scales");
            assert_eq!(
                (&a.s, &a.sums, &a.sum4),
                (&b.s, &b.sums, &b.sum4),
                "{kind:?}: sums"
            );
            assert_eq!(a.bsums, b.bsums, "{kind:?}: block sums");
        }
    }
}
