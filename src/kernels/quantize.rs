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
    /// `k` must be a multiple of the block length. Large inputs (a prefill's) are split into
    /// runs of blocks quantized in parallel ([`super::team::for_each_item`]); blocks are
    /// independent, so the values do not depend on the split.
    pub fn quantize(&mut self, kind: ActType, x: &[f32], rows: usize, k: usize) {
        let parts = if x.len() >= PARALLEL_MIN_VALUES {
            super::pool::threads()
        } else {
            1
        };
        self.quantize_in(kind, x, rows, k, parts);
    }

    /// [`Self::quantize`] in `parts` runs of blocks (one on the calling thread).
    fn quantize_in(&mut self, kind: ActType, x: &[f32], rows: usize, k: usize, parts: usize) {
        self.prepare(kind, rows, k);
        assert_eq!(x.len(), rows * k, "quantize: x is not rows × k");
        let (bl, blocks) = (self.block_len(), rows * self.blocks());
        let per = blocks.div_ceil(parts.max(1)).max(1);
        let mut runs = Vec::with_capacity(parts);
        let (mut rest, mut x) = (self.blocks_mut(kind), x);
        while !x.is_empty() {
            let n = per.min(x.len() / bl);
            let (run, tail) = rest.split(n, bl);
            let (xs, xt) = x.split_at(n * bl);
            runs.push((run, xs));
            (rest, x) = (tail, xt);
        }
        if runs.len() <= 1 {
            runs.into_iter()
                .for_each(|(run, xs)| fill(kind, bl, xs, run));
        } else {
            super::team::for_each_item(runs, |(run, xs)| fill(kind, bl, xs, run));
        }
    }

    /// Sets the shape and sizes the buffers for `rows × k` values as `kind`.
    fn prepare(&mut self, kind: ActType, rows: usize, k: usize) {
        self.kind = Some(kind);
        self.rows = rows;
        self.k = k;
        let nb = self.blocks();
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
    }

    /// Every block's outputs for `kind` (the other formats' buffers left out).
    fn blocks_mut(&mut self, kind: ActType) -> BlocksMut<'_> {
        let (q8_0, q8_1, q8k) = (
            kind == ActType::Q8_0,
            kind == ActType::Q8_1,
            kind == ActType::Q8K,
        );
        BlocksMut {
            qs: &mut self.qs,
            d: &mut self.d,
            s: if q8_1 { &mut self.s } else { &mut [] },
            sum4: if q8_0 { &mut self.sum4 } else { &mut [] },
            sums: if q8_0 { &mut self.sums } else { &mut [] },
            bsums: if q8k { &mut self.bsums } else { &mut [] },
        }
    }

    /// The int8 values of block `b` of row `r`.
    pub(crate) fn block(&self, r: usize, b: usize) -> &[i8] {
        let bl = self.block_len();
        &self.qs[r * self.k + b * bl..r * self.k + (b + 1) * bl]
    }
}

/// Below this many values a matmul's activations are quantized on the calling thread (a
/// decode step's: a parallel call would cost more than it saves).
const PARALLEL_MIN_VALUES: usize = 1 << 15;

/// The outputs of a run of consecutive blocks: per block `qs` one block of values, `d` one
/// scale, and the extras of the format (`s` 1, `sum4` 8 and `sums` 1, `bsums` 16); the other
/// formats' slices are empty.
struct BlocksMut<'a> {
    qs: &'a mut [i8],
    d: &'a mut [f32],
    s: &'a mut [f32],
    sum4: &'a mut [i32],
    sums: &'a mut [i32],
    bsums: &'a mut [i16],
}

impl<'a> BlocksMut<'a> {
    /// The first `n` blocks (of `bl` values) and the rest.
    fn split(self, n: usize, bl: usize) -> (Self, Self) {
        fn cut<T>(v: &mut [T], at: usize) -> (&mut [T], &mut [T]) {
            v.split_at_mut(if v.is_empty() { 0 } else { at })
        }
        let (qs, qs2) = self.qs.split_at_mut(n * bl);
        let (d, d2) = self.d.split_at_mut(n);
        let (s, s2) = cut(self.s, n);
        let (sum4, sum42) = cut(self.sum4, n * 8);
        let (sums, sums2) = cut(self.sums, n);
        let (bsums, bsums2) = cut(self.bsums, n * 16);
        (
            BlocksMut {
                qs,
                d,
                s,
                sum4,
                sums,
                bsums,
            },
            BlocksMut {
                qs: qs2,
                d: d2,
                s: s2,
                sum4: sum42,
                sums: sums2,
                bsums: bsums2,
            },
        )
    }
}

/// Quantizes the blocks of `x` (`bl` values each) into `out`, compiled for AVX2 where the CPU
/// has it so the rounding and the scale search vectorise (the same values: rounding is exact
/// either way).
fn fill(kind: ActType, bl: usize, x: &[f32], out: BlocksMut) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features (checked above).
        return unsafe { fill_avx2(kind, bl, x, out) };
    }
    fill_here(kind, bl, x, out)
}

/// [`fill_here`] with the blocks quantized by [`super::quantize_avx2`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fill_avx2(kind: ActType, bl: usize, x: &[f32], out: BlocksMut) {
    use super::quantize_avx2::{q8_block, q8k_block};
    for (i, xs) in x.chunks_exact(bl).enumerate() {
        let qs = &mut out.qs[i * bl..(i + 1) * bl];
        match kind {
            ActType::Q8_0 => {
                let sum4: &mut [i32; 8] = (&mut out.sum4[i * 8..i * 8 + 8]).try_into().unwrap();
                let (d, sum) = q8_block(xs, qs, sum4);
                (out.d[i], out.sums[i]) = (f16::from_f32(d).to_f32(), sum);
            }
            ActType::Q8_1 => {
                let (d, sum) = q8_block(xs, qs, &mut [0; 8]);
                out.d[i] = f16::from_f32(d).to_f32();
                out.s[i] = f16::from_f32(sum as f32 * d).to_f32();
            }
            ActType::Q8K => {
                let max = first_largest(xs);
                let bsums = &mut out.bsums[i * 16..i * 16 + 16];
                out.d[i] = if max == 0.0 {
                    qs.fill(0);
                    bsums.fill(0);
                    0.0
                } else {
                    1.0 / q8k_block(xs, max, qs, bsums)
                };
            }
        }
    }
}

#[inline(always)]
fn fill_here(kind: ActType, bl: usize, x: &[f32], out: BlocksMut) {
    for (i, xs) in x.chunks_exact(bl).enumerate() {
        let qs = &mut out.qs[i * bl..(i + 1) * bl];
        match kind {
            ActType::Q8_0 => {
                out.d[i] = quantize_q8_0(xs, qs);
                for (g, s) in out.sum4[i * 8..i * 8 + 8].iter_mut().enumerate() {
                    *s = qs[g * 4..g * 4 + 4].iter().map(|&q| q as i32).sum();
                }
                out.sums[i] = out.sum4[i * 8..i * 8 + 8].iter().sum();
            }
            ActType::Q8_1 => (out.d[i], out.s[i]) = quantize_q8_1(xs, qs),
            ActType::Q8K => {
                out.d[i] = quantize_q8_k(xs, qs);
                for (g, s) in out.bsums[i * 16..i * 16 + 16].iter_mut().enumerate() {
                    *s = qs[g * 16..g * 16 + 16].iter().map(|&q| q as i16).sum();
                }
            }
        }
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

/// The first value of the largest magnitude, as ggml's running comparison picks it (NaNs never
/// win; 0 for none): the first chunk of 16 holding it (a test without a branch per value, so
/// it vectorises), then the value in it.
#[inline(always)]
fn first_largest(xs: &[f32]) -> f32 {
    let amax = amax(xs);
    let hit = |x: &f32| x.abs() == amax;
    xs.chunks(16)
        .find(|c| c.iter().fold(false, |f, x| f | hit(x)))
        .and_then(|c| c.iter().copied().find(hit))
        .unwrap_or(0.0)
}

/// One Q8_K block (ggml `quantize_row_q8_K_ref`): returns the f32 scale.
#[inline(always)]
pub(crate) fn quantize_q8_k(xs: &[f32], qs: &mut [i8]) -> f32 {
    let max = first_largest(xs);
    if max == 0.0 {
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

    /// The AVX2 intrinsics round exactly as the portable build, and a split into parallel runs
    /// of blocks changes no value: random blocks, blocks whose scale is 1 so halves (2.5, -0.5)
    /// meet the rounding, zero blocks, a NaN, an infinity and a tiny value.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx2_build_and_parallel_runs_equal_the_portable_one() {
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
        (x[600], x[1100], x[1300]) = (f32::NAN, f32::INFINITY, -1e-30);
        for kind in [ActType::Q8_0, ActType::Q8_1, ActType::Q8K] {
            let mut a = Acts::default();
            a.prepare(kind, rows, k);
            let bl = a.block_len();
            fill_here(kind, bl, &x, a.blocks_mut(kind));
            for parts in [1, 2, 5] {
                let mut b = Acts::default();
                b.quantize_in(kind, &x, rows, k, parts);
                assert_eq!(a.qs, b.qs, "{kind:?} in {parts}: values");
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a.d), bits(&b.d), "{kind:?} in {parts}: scales");
                assert_eq!(
                    (bits(&a.s), &a.sums, &a.sum4),
                    (bits(&b.s), &b.sums, &b.sum4),
                    "{kind:?} in {parts}: sums"
                );
                assert_eq!(a.bsums, b.bsums, "{kind:?} in {parts}: block sums");
            }
        }
    }
}
