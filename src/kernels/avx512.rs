//! The AVX-512 VNNI level: [`super::simd`] tiles with the u8 × i8 dot done by one
//! `vpdpbusd` on 256-bit registers (AVX-512 VL encoding), so no i16 intermediate, and the 32
//! registers of AVX-512 allow tiles of 4 rows × 4 columns.

use std::arch::x86_64::*;
use std::ops::Range;

use super::blocks::QType;
use super::matmul::OutPtr;
use super::quantize::Acts;
use super::simd::{self, Ctx, IDot, Tile};
use super::tiles8;

struct Dpbusd;

impl IDot for Dpbusd {
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(acc, u, s)
    }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn run<K: Tile>(ctx: &Ctx, cols: Range<usize>) {
    simd::run::<K, Dpbusd, 4, 1>(ctx, cols)
}

/// Columns `cols` of `out = acts · Wᵀ`; the K-quants use the AVX2 kernels.
pub(crate) fn matmul_cols(qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    assert!(
        super::has_avx512_vnni(),
        "VNNI kernel on a CPU without it; this is a bug"
    );
    let ctx = Ctx::new(qtype, w, acts, out, cols.end);
    // SAFETY: as in `avx2::matmul_cols`, with the VNNI features asserted.
    unsafe {
        match qtype {
            QType::Q4_1 => run::<simd::Q4_1>(&ctx, cols),
            QType::Q8_0 => run::<simd::Q8_0>(&ctx, cols),
            QType::Q4_0 => run::<simd::Offset<simd::Q4_0>>(&ctx, cols),
            QType::Q5_0 => run::<simd::Offset<simd::Q5_0>>(&ctx, cols),
            QType::Q4K | QType::Q6K => super::avx2::matmul_cols(qtype, w, acts, cols, out),
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tiles<K: tiles8::Tiled>(w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    tiles8::run::<K, Dpbusd, 4>(w, acts, cols, out)
}

/// Columns `cols` of `out = acts · Wᵀ` for repacked weights `w` ([`super::repack`]).
pub(crate) fn tiles_cols(qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    assert!(
        super::has_avx512_vnni(),
        "VNNI kernel on a CPU without it; this is a bug"
    );
    // SAFETY: as in `avx2::tiles_cols`, with the VNNI features asserted.
    unsafe {
        match qtype {
            QType::Q4_0 => tiles::<tiles8::Q4_0>(w, acts, cols, out),
            QType::Q4_1 => tiles::<tiles8::Q4_1>(w, acts, cols, out),
            QType::Q5_0 => tiles::<tiles8::Q5_0>(w, acts, cols, out),
            QType::Q8_0 => tiles::<tiles8::Q8_0>(w, acts, cols, out),
            QType::Q4K => tiles::<super::tiles8k::Q4K>(w, acts, cols, out),
            QType::Q6K => tiles::<super::tiles8k::Q6K>(w, acts, cols, out),
        }
    }
}
