//! The matmul driver: quantizes the T activation rows once (into a per-thread buffer reused
//! across calls), then splits the output columns into equal chunks run in parallel (through
//! the step's [`super::team`], else on rayon's pool); inside a chunk the level's kernel walks
//! column tiles, and for each it loads every weight block once and dots it against all T rows
//! (register tiles of up to 4 rows).
//!
//! Each output element is computed by exactly one thread with an operation order that depends
//! only on the kernel level and `k`, never on T, the tile a row lands in or the chunking, so a
//! row's result is bit-identical whichever other rows share the call.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::ops::Range;

use super::blocks::QType;
use super::quantize::Acts;
use super::{pool, repack, scalar, Level, QMatrix};

/// Below this many multiply-adds (T × n × k) a matmul runs on the calling thread only.
const PARALLEL_MIN_MACS: usize = 1 << 18;
/// Column chunks are multiples of this many columns (every tile width divides it).
const CHUNK_ALIGN: usize = 8;

/// Where the kernels write: a row-major `[rows, n]` f32 output shared by the chunk workers,
/// each writing only its own columns.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr {
    ptr: *mut f32,
    n: usize,
    rows: usize,
    /// Added to every column written (a part of a stacked matrix writes its own columns).
    col0: usize,
}

// SAFETY: workers write disjoint column ranges of the buffer, which outlives the parallel call.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The whole of `out`, a row-major `[rows, n]` buffer the kernels write without reading
    /// (every element once).
    pub(crate) fn new(out: &mut [MaybeUninit<f32>], rows: usize, n: usize) -> Self {
        assert_eq!(out.len(), rows * n, "output is not rows × n; this is a bug");
        Self {
            ptr: out.as_mut_ptr().cast(),
            n,
            rows,
            col0: 0,
        }
    }

    /// Writes element `(r, c)`. Panics (debug) out of bounds.
    #[inline(always)]
    pub(crate) fn write(self, r: usize, c: usize, v: f32) {
        let c = c + self.col0;
        assert!(
            r < self.rows && c < self.n,
            "output index out of bounds; this is a bug"
        );
        // SAFETY: in bounds (checked above); each (r, c) is written by one worker only.
        unsafe { *self.ptr.add(r * self.n + c) = v }
    }

    /// The same output with columns counted from `col0`.
    fn shifted(self, col0: usize) -> Self {
        Self {
            col0: self.col0 + col0,
            ..self
        }
    }
}

/// `out` as a buffer the kernels write without reading.
pub(crate) fn as_uninit(out: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: the same layout; whoever takes the result stores only initialised f32s.
    unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) }
}

/// A vector of `len` elements that `fill` writes, without zeroing it first (zeroing a step's
/// outputs was 2-2.5 % of a prefill's or a 3-job sweep's samples).
///
/// # Safety
/// `fill` must write every element of the slice it is given.
pub(crate) unsafe fn filled(len: usize, fill: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    let mut v = Vec::with_capacity(len);
    fill(&mut v.spare_capacity_mut()[..len]);
    // SAFETY: the first `len` elements are written (the caller's promise) and within capacity.
    unsafe { v.set_len(len) };
    v
}

thread_local! {
    static ACTS: RefCell<Acts> = RefCell::new(Acts::default());
}

/// `out[T, n] = x[T, k] · Wᵀ` at kernel level `lvl` (tests compare levels side by side with
/// it; the model goes through [`QMatrix::matmul_uninit`]). Panics if the CPU lacks `lvl`.
pub fn matmul_at(lvl: Level, w: &QMatrix, x: &[f32], t: usize, out: &mut [f32]) {
    matmul_uninit_at(lvl, w, x, t, as_uninit(out))
}

/// [`matmul_at`] into a buffer not yet written: every element of `out` is written once.
pub(crate) fn matmul_uninit_at(
    lvl: Level,
    w: &QMatrix,
    x: &[f32],
    t: usize,
    out: &mut [MaybeUninit<f32>],
) {
    assert!(
        lvl.available(),
        "kernel level {lvl} is not available on this CPU"
    );
    let (qtype, n, k) = (w.qtype(), w.n(), w.k());
    assert_eq!(x.len(), t * k, "matmul: x is not T × k");
    assert_eq!(out.len(), t * n, "matmul: out is not T × n");
    if t == 0 || n == 0 {
        return;
    }
    // Taken out of the thread-local, not borrowed: while this thread waits in the parallel
    // region rayon may run another job on it, which can be another matmul.
    let mut acts = ACTS.with(|cell| cell.take());
    acts.quantize(qtype.act_type(), x, t, k);
    let dst = OutPtr::new(out, t, n);
    run_parallel(lvl, w, &acts, dst);
    ACTS.with(|cell| cell.replace(acts));
}

fn run_parallel(lvl: Level, w: &QMatrix, acts: &Acts, out: OutPtr) {
    let n = w.n();
    let threads = pool::threads();
    if threads <= 1 || acts.rows * n * acts.k < PARALLEL_MIN_MACS {
        return run_parts(lvl, w, acts, 0..n, out);
    }
    let chunks = chunk_ranges(n, threads * 2);
    super::team::for_each(chunks.len(), |i| {
        run_parts(lvl, w, acts, chunks[i].clone(), out)
    });
}

/// Columns `cols` of `w`, split where its parts meet; each part's kernel sees part-relative
/// columns and writes through an output shifted to the part's first row.
fn run_parts(lvl: Level, w: &QMatrix, acts: &Acts, cols: Range<usize>, out: OutPtr) {
    for p in w.parts() {
        let a = cols.start.max(p.first_row);
        let b = cols.end.min(p.first_row + p.rows);
        if a < b {
            let shifted = out.shifted(p.first_row);
            let local = a - p.first_row..b - p.first_row;
            match p.interleaved {
                true => repack::matmul_cols(lvl, w.qtype(), p.bytes(), acts, local, shifted),
                false => run_cols(lvl, w.qtype(), p.bytes(), acts, local, shifted),
            }
        }
    }
}

/// `parts` ranges covering `0..n`, each a multiple of [`CHUNK_ALIGN`] columns (but the last),
/// sizes differing by at most one alignment unit.
pub(crate) fn chunk_ranges(n: usize, parts: usize) -> Vec<Range<usize>> {
    let units = n.div_ceil(CHUNK_ALIGN);
    let parts = parts.clamp(1, units.max(1));
    (0..parts)
        .map(|i| {
            let a = (units * i / parts * CHUNK_ALIGN).min(n);
            let b = (units * (i + 1) / parts * CHUNK_ALIGN).min(n);
            a..b
        })
        .filter(|r| !r.is_empty())
        .collect()
}

fn run_cols(lvl: Level, qtype: QType, w: &[u8], acts: &Acts, cols: Range<usize>, out: OutPtr) {
    match lvl {
        Level::Scalar => scalar::matmul_cols(qtype, w, acts, cols, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => super::avx2::matmul_cols(qtype, w, acts, cols, out),
        #[cfg(target_arch = "x86_64")]
        Level::Avx512Vnni => super::avx512::matmul_cols(qtype, w, acts, cols, out),
        #[cfg(not(target_arch = "x86_64"))]
        _ => scalar::matmul_cols(qtype, w, acts, cols, out),
    }
}
