//! Our quantized matmul for CPU: `y[T, n] = x[T, k] · W[n, k]ᵀ` with `W` kept as GGUF blocks
//! (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K) and `x` f32, numerically as ggml/llama.cpp: the
//! activations are quantized once per call to ggml's dot type for the weight (Q8_1 for Q4_1,
//! Q8_0 for Q4_0/Q5_0/Q8_0, Q8_K for K-quants), integer block dots are exact, and the float
//! combination follows ggml's per-block formula.
//!
//! Modules, one concern each: [`blocks`] (layouts), [`quantize`] (activations), [`scalar`]
//! (the reference), `simd` + `kquants` + `avx2` + `avx512` (x86-64 kernels), [`matmul`] (tiles, threads),
//! [`pool`] (parallel sections), [`runtime`] (the pool and level a model runs under); [`dense`]
//! (+ `dense_x86`) runs dense f16/bf16 matrices.
//!
//! Integration: called directly from `model::linear::Linear::forward` on the contiguous CPU
//! slice of the input (no candle `CustomOp`): the weight bytes are copied out of the GGUF
//! tensor once at load into a [`QMatrix`], so the hot path needs no candle storage access.
//!
//! The kernel level is chosen at run time ([`detect`]: the best the CPU has) and can be set per
//! [`Runtime`], e.g. to [`Level::Scalar`] so tests cover the reference path.

pub mod blocks;
pub mod dense;
pub mod matmul;
pub(crate) mod pool;
pub mod probe;
pub mod quantize;
pub(crate) mod repack;
mod repack_k;
pub mod runtime;
pub mod scalar;
pub(crate) mod team;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod dense_x86;
#[cfg(target_arch = "x86_64")]
mod kquants;
#[cfg(target_arch = "x86_64")]
mod quantize_avx2;
#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(target_arch = "x86_64")]
mod tiles8;
#[cfg(target_arch = "x86_64")]
mod tiles8k;

use std::borrow::Cow;
use std::fmt;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::str::FromStr;
use std::sync::Arc;

pub(crate) use blocks::QType;
pub use pool::threads;
pub use runtime::Runtime;

/// A SIMD level the kernels can run at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Plain Rust, the reference.
    Scalar,
    /// AVX2 + FMA + F16C.
    Avx2,
    /// AVX-512 F/BW/VL + VNNI (plus AVX2).
    Avx512Vnni,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Scalar, Level::Avx2, Level::Avx512Vnni];

    /// Whether this CPU can run the level.
    pub fn available(self) -> bool {
        match self {
            Level::Scalar => true,
            Level::Avx2 => has_avx2(),
            Level::Avx512Vnni => has_avx512_vnni(),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512Vnni => "avx512-vnni",
        })
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "scalar" => Ok(Level::Scalar),
            "avx2" => Ok(Level::Avx2),
            "avx512-vnni" => Ok(Level::Avx512Vnni),
            _ => Err(format!(
                "unknown kernel level '{s}'; expected auto, scalar, avx2, avx512-vnni or candle"
            )),
        }
    }
}

pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

pub(crate) fn has_avx512_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2()
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The best level this CPU has.
pub fn detect() -> Level {
    static BEST: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
    *BEST.get_or_init(|| {
        *Level::ALL
            .iter()
            .rev()
            .find(|l| l.available())
            .unwrap_or(&Level::Scalar)
    })
}

/// The level matmuls on this thread run at: its [`Runtime`]'s, else [`detect`]ed.
pub fn level() -> Level {
    runtime::current_level()
}

/// One line for reports, e.g. `tokfire kernels avx512-vnni, 2 threads`.
pub fn describe() -> String {
    format!("tokfire kernels {}, {} threads", level(), threads())
}

/// Block bytes that someone else owns and keeps alive (a memory-mapped model file).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where a matrix's block bytes live: our own buffer, or a range borrowed from shared bytes.
#[derive(Clone)]
pub enum Bytes {
    /// Copied into the matrix.
    Owned(Vec<u8>),
    /// `range` of `owner`, not copied.
    Borrowed {
        owner: SharedBytes,
        range: Range<usize>,
    },
}

impl Bytes {
    /// The bytes; `None` when a borrowed range lies outside its owner.
    fn get(&self) -> Option<&[u8]> {
        match self {
            Self::Owned(v) => Some(v),
            Self::Borrowed { owner, range } => (**owner).as_ref().get(range.clone()),
        }
    }

    fn slice(&self) -> &[u8] {
        self.get()
            .expect("borrowed range checked at construction; this is a bug")
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            Self::Borrowed { range, .. } => write!(f, "Borrowed({range:?})"),
        }
    }
}

/// Rows `first_row..` of a matrix, stored in one piece.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub first_row: usize,
    pub rows: usize,
    bytes: Bytes,
    /// The rows are repacked into 8-row tiles ([`repack`]), not GGUF rows.
    pub interleaved: bool,
}

impl Part {
    /// The block bytes of these rows.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes.slice()
    }
}

/// A quantized matrix `[n, k]` as GGUF block bytes, row by row, in one or more parts (a
/// stacked matrix keeps each part where it was, copied or borrowed).
#[derive(Debug, Clone)]
pub struct QMatrix {
    qtype: QType,
    n: usize,
    k: usize,
    parts: Vec<Part>,
}

impl QMatrix {
    /// From `n` rows of `k` values stored as `qtype` blocks; `None` if `k` is not whole blocks
    /// or the byte count does not match.
    pub fn new(qtype: QType, n: usize, k: usize, bytes: Vec<u8>) -> Option<Self> {
        Self::from_bytes(qtype, n, k, Bytes::Owned(bytes))
    }

    /// Like [`QMatrix::new`] with bytes that may be borrowed; `None` also when a borrowed
    /// range lies outside its owner.
    pub fn from_bytes(qtype: QType, n: usize, k: usize, bytes: Bytes) -> Option<Self> {
        let want = (k / qtype.block_len())
            .checked_mul(qtype.block_bytes())?
            .checked_mul(n)?;
        let ok = k.is_multiple_of(qtype.block_len()) && bytes.get()?.len() == want;
        ok.then(|| Self {
            qtype,
            n,
            k,
            parts: vec![Part {
                first_row: 0,
                rows: n,
                bytes,
                interleaved: false,
            }],
        })
    }

    pub fn qtype(&self) -> QType {
        self.qtype
    }
    /// Output features (rows of W).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Input features (columns of W).
    pub fn k(&self) -> usize {
        self.k
    }
    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.k / self.qtype.block_len() * self.qtype.block_bytes()
    }
    /// The block bytes of a matrix in one part (panics on a stacked one: use [`QMatrix::row`]).
    pub fn bytes(&self) -> &[u8] {
        assert_eq!(
            self.parts.len(),
            1,
            "bytes() of a stacked matrix; this is a bug"
        );
        self.parts[0].bytes()
    }
    /// The GGUF block bytes of row `r < n` (rebuilt from the tiles of a repacked part).
    pub fn row(&self, r: usize) -> Cow<'_, [u8]> {
        let p = self
            .parts
            .iter()
            .find(|p| (p.first_row..p.first_row + p.rows).contains(&r))
            .expect("row index below n; this is a bug");
        repack::gguf_row(
            self.qtype,
            p.bytes(),
            p.rows,
            p.interleaved,
            r - p.first_row,
        )
    }

    /// This matrix with every part that has a tile kernel repacked into 8-row tiles (owned
    /// bytes); parts without one are kept as they are. `None` when no part changes.
    pub fn repacked(&self) -> Option<QMatrix> {
        let mut changed = false;
        let parts = self
            .parts
            .iter()
            .map(|p| match p.interleaved {
                true => p.clone(),
                false => match repack::interleave(self.qtype, p.bytes(), p.rows) {
                    Some(tiles) => {
                        changed = true;
                        Part {
                            bytes: Bytes::Owned(tiles),
                            interleaved: true,
                            ..p.clone()
                        }
                    }
                    None => p.clone(),
                },
            })
            .collect();
        changed.then(|| QMatrix { parts, ..*self })
    }

    /// Whether any part is repacked.
    pub fn is_repacked(&self) -> bool {
        self.parts.iter().any(|p| p.interleaved)
    }

    /// The parts, first row ascending.
    pub(crate) fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// The matrices stacked along the output axis (`[n1 + n2 + .., k]`), each part kept where
    /// it is; `None` unless all share the block type and `k`.
    pub(crate) fn concat(parts: &[&QMatrix]) -> Option<QMatrix> {
        let first = parts.first()?;
        if parts
            .iter()
            .any(|p| p.qtype != first.qtype || p.k != first.k)
        {
            return None;
        }
        let mut stacked = Vec::new();
        let mut n = 0;
        for m in parts {
            for p in &m.parts {
                stacked.push(Part {
                    first_row: n + p.first_row,
                    ..p.clone()
                });
            }
            n += m.n;
        }
        Some(QMatrix {
            qtype: first.qtype,
            n,
            k: first.k,
            parts: stacked,
        })
    }

    /// `out[T, n] = x[T, k] · Wᵀ` into a buffer not yet written (every element is written
    /// once); `x.len()` must be `T * k` and `out.len()` `T * n`.
    pub(crate) fn matmul_uninit(&self, x: &[f32], t: usize, out: &mut [MaybeUninit<f32>]) {
        matmul::matmul_uninit_at(level(), self, x, t, out)
    }
}
