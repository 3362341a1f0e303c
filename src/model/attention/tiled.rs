//! Tiled causal attention on f32 slices (flash-style). A sequence's query rows are taken in
//! blocks of [`QUERY_BLOCK`], all the query heads that share one KV head together, against keys
//! in blocks of [`key_block`] keys; each query keeps a running maximum, sum and weighted sum of V
//! (online softmax), so a block of keys is read once per block of queries rather than once per
//! query and head. Units (rows × KV head) run in parallel. At the `avx512-vnni` kernel level the
//! two inner loops (scores, weighted sums of V) run on 512-bit registers ([`super::wide`]),
//! lane for lane the same arithmetic as the portable loops here.
//!
//! A query's arithmetic depends only on its own position, window and the cache: key blocks start
//! at multiples of [`key_block`] (absolute positions) whichever rows share a unit, a score is a
//! sequential fused multiply-add over the head dimension, and keys are added in position order.
//! So a token's output is bit-identical whether its prompt arrives whole or in chunks, alone or
//! batched.

use super::{key_at, Dims, KvSlices, Scoring, SegmentRows, KEY_GROUP};
use crate::model::vmath::exp_nonpositive;
use std::ops::Range;

/// Keys per block for a head dimension: blocks start at multiples of it. 32 KiB of keys (and
/// as much of values) per block: 64 keys at `hd` 64, 32 at `hd` 256. Measured with the timing
/// aid `time_attention` (512 queries after 4096 keys, 2 threads): at `hd` 256 blocks of 32 keys
/// took 166.5 ms against 198.7 ms for 64 and 208.1 ms for 16 (a second run: 171.0, 221.6,
/// 185.6); at `hd` 64, 64 keys were fastest (100.8 ms against 122.3 for 32; then 118.3, 129.5).
pub(super) fn key_block(hd: usize) -> usize {
    (8192 / hd.max(1) / 16 * 16).clamp(16, 64)
}

/// Query rows of one sequence per unit of work.
const QUERY_BLOCK: usize = 16;

/// One unit of work: rows `rows` (indices within the segment) of segment `seg`, KV head `g`.
struct Unit {
    seg: usize,
    rows: Range<usize>,
    g: usize,
}

/// Causal attention of every query row into `out[T, heads * head_dim]`, in parallel
/// ([`crate::kernels::team::map`]) when `parallel`.
pub(super) fn attend(
    dims: Dims,
    scoring: Scoring,
    q: &[f32],
    segments: &[(SegmentRows, KvSlices)],
    out: &mut [f32],
    parallel: bool,
) {
    let tiling = Tiling {
        parallel,
        kb: key_block(dims.head_dim),
        wide: wide_here(),
    };
    attend_tiled(dims, scoring, q, segments, out, tiling);
}

/// How [`attend_tiled`] runs: in parallel or not, keys per block, and whether the inner
/// loops use 512-bit registers ([`super::wide`]).
#[derive(Clone, Copy)]
pub(super) struct Tiling {
    pub parallel: bool,
    /// Keys per block, a multiple of 16.
    pub kb: usize,
    pub wide: bool,
}

/// Whether the calling thread's kernel level runs the 512-bit loops (AVX-512 VNNI).
pub(super) fn wide_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::{runtime::current_level, Level};
        current_level() == Level::Avx512Vnni && super::wide::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`attend`] as `tiling` says: the timing aid compares block sizes and loops.
pub(super) fn attend_tiled(
    dims: Dims,
    scoring: Scoring,
    q: &[f32],
    segments: &[(SegmentRows, KvSlices)],
    out: &mut [f32],
    tiling: Tiling,
) {
    let Tiling { parallel, kb, wide } = tiling;
    assert!(
        kb > 0 && kb.is_multiple_of(16),
        "key blocks of {kb}; this is a bug"
    );
    let mut units = Vec::new();
    for (seg, (s, _)) in segments.iter().enumerate() {
        for r0 in (0..s.len).step_by(QUERY_BLOCK) {
            for g in 0..dims.kv_heads {
                let rows = r0..(r0 + QUERY_BLOCK).min(s.len);
                units.push(Unit { seg, rows, g });
            }
        }
    }
    let run = |u: &Unit| {
        let (s, kv) = &segments[u.seg];
        let job = Job {
            dims,
            scoring,
            q,
            s,
            kv,
            u,
            kb,
            wide,
        };
        unit(&job)
    };
    let results: Vec<Vec<f32>> = if parallel {
        crate::kernels::team::map(units.len(), |i| run(&units[i]))
    } else {
        units.iter().map(run).collect()
    };
    let (hd, group) = (dims.head_dim, dims.heads / dims.kv_heads);
    let qw = dims.heads * hd;
    for (u, res) in units.iter().zip(results) {
        let start = segments[u.seg].0.start;
        for (i, row) in u.rows.clone().zip(res.chunks_exact(group * hd)) {
            let at = (start + i) * qw + u.g * group * hd;
            out[at..at + group * hd].copy_from_slice(row);
        }
    }
}

/// What one unit reads.
struct Job<'a> {
    dims: Dims,
    scoring: Scoring,
    q: &'a [f32],
    s: &'a SegmentRows,
    kv: &'a KvSlices<'a>,
    u: &'a Unit,
    /// Keys per block.
    kb: usize,
    /// The 512-bit inner loops.
    wide: bool,
}

/// The running softmax state of a unit's queries: per query its maximum score, sum of weights
/// and weighted sum of values (`[queries, head_dim]`).
struct Running {
    max: Vec<f32>,
    sum: Vec<f32>,
    acc: Vec<f32>,
}

/// One unit's output, `[rows, group, head_dim]`.
fn unit(job: &Job) -> Vec<f32> {
    let Job {
        dims,
        scoring,
        q,
        s,
        kv,
        u,
        kb,
        wide,
    } = *job;
    let (hd, group) = (dims.head_dim, dims.heads / dims.kv_heads);
    let qw = dims.heads * hd;
    let n_q = u.rows.len() * group;
    let mut st = Running {
        max: vec![f32::NEG_INFINITY; n_q],
        sum: vec![0.0; n_q],
        acc: vec![0.0; n_q * hd],
    };
    let first = |pos: usize| scoring.window.map_or(0, |w| (pos + 1).saturating_sub(w));
    let last_pos = s.pos + u.rows.end - 1;
    let base = u.g * kv.capacity * hd;
    let keys = &kv.k[base..base + (last_pos + 1) * hd];
    let values = &kv.v[base..base + (last_pos + 1) * hd];
    // The cache's transposed key blocks when it keeps them in this block size, else our own.
    let kept = kv.key_blocks.filter(|t| t.kb == kb);
    let mut own = vec![0f32; if kept.is_some() { 0 } else { hd * kb }];
    // The unit's query vectors (row by row, each row's heads in order) and their scores.
    let qv: Vec<&[f32]> = u
        .rows
        .clone()
        .flat_map(|i| {
            let t = s.start + i;
            q[t * qw + u.g * group * hd..t * qw + (u.g + 1) * group * hd].chunks_exact(hd)
        })
        .collect();
    let mut scores = vec![0f32; n_q * kb];
    for b in first(s.pos + u.rows.start) / kb..=last_pos / kb {
        let j0 = b * kb;
        let n = kb.min(last_pos + 1 - j0);
        let kt = match kept {
            Some(t) => &t.data[((u.g * t.blocks + b) * hd) * kb..][..hd * kb],
            None => {
                transpose(&keys[j0 * hd..(j0 + n) * hd], hd, &mut own);
                &own[..]
            }
        };
        if wide {
            wide_score_block(&qv, kt, hd, n, &mut scores);
        } else {
            score_block(&qv, kt, hd, n, &mut scores);
        }
        for i in u.rows.clone() {
            let pos = s.pos + i;
            let (lo, hi) = (first(pos).max(j0), pos.min(j0 + n - 1));
            if lo > hi {
                continue;
            }
            let q0 = (i - u.rows.start) * group;
            let keys = lo - j0..hi + 1 - j0;
            let w = &mut scores[q0 * kb..(q0 + group) * kb];
            for hh in 0..group {
                weights(
                    &mut st,
                    q0 + hh,
                    hd,
                    scoring,
                    &mut w[hh * kb..][keys.clone()],
                );
            }
            let acc = &mut st.acc[q0 * hd..(q0 + group) * hd];
            let vals = &values[lo * hd..(hi + 1) * hd];
            if wide {
                wide_add_weighted(acc, hd, kb, w, keys, vals);
            } else {
                add_weighted::<2, 32>(acc, hd, kb, w, keys, vals);
            }
        }
    }
    for (acc, sum) in st.acc.chunks_exact_mut(hd).zip(&st.sum) {
        for x in acc {
            *x /= sum;
        }
    }
    st.acc
}

#[cfg(target_arch = "x86_64")]
use super::wide::{add_weighted as wide_add_weighted, score_block as wide_score_block};

#[cfg(not(target_arch = "x86_64"))]
fn wide_score_block(_: &[&[f32]], _: &[f32], _: usize, _: usize, _: &mut [f32]) {
    unreachable!("512-bit attention off x86-64; this is a bug")
}

#[cfg(not(target_arch = "x86_64"))]
fn wide_add_weighted(_: &mut [f32], _: usize, _: usize, _: &[f32], _: Range<usize>, _: &[f32]) {
    unreachable!("512-bit attention off x86-64; this is a bug")
}

/// Keys `[n, hd]` into a transposed block `kt` as a cache keeps them ([`key_at`]; keys past
/// n keep stale values, never used).
#[inline(always)]
fn transpose(keys: &[f32], hd: usize, kt: &mut [f32]) {
    for (k, key) in keys.chunks_exact(hd).enumerate() {
        for (d, &x) in key.iter().enumerate() {
            kt[key_at(hd, k, d)] = x;
        }
    }
}

/// `w[v, k] = q_v · key k` for every query vector `v` and each of the block's first `n` keys
/// (in groups of 16: the block's last, partial group is scored whole, the keys past its end
/// never read), each a sequential fused multiply-add over the head dimension. Register tiles
/// of 4 vectors × 16 keys, so each load of 16 keys' element serves 4 vectors, the rest one tile
/// of 1 to 3 (vectorised across keys; the tile's shape changes no bits: every lane is one
/// vector and key summed in element order).
#[inline(always)]
fn score_block(qv: &[&[f32]], kt: &[f32], hd: usize, n: usize, w: &mut [f32]) {
    let kb = kt.len() / hd;
    let mut v = 0;
    while v + 4 <= qv.len() {
        score_tile::<4>(&qv[v..v + 4], kt, hd, n, &mut w[v * kb..(v + 4) * kb]);
        v += 4;
    }
    // The rest in one tile (a decode row of a 3-head group is one tile of 3, not three of 1).
    let w = &mut w[v * kb..qv.len() * kb];
    match qv.len() - v {
        3 => score_tile::<3>(&qv[v..], kt, hd, n, w),
        2 => score_tile::<2>(&qv[v..], kt, hd, n, w),
        1 => score_tile::<1>(&qv[v..], kt, hd, n, w),
        _ => {}
    }
}

/// [`score_block`] for `Q` query vectors, 16 keys at a time, up to the group holding key `n - 1`.
#[inline(always)]
fn score_tile<const Q: usize>(qv: &[&[f32]], kt: &[f32], hd: usize, n: usize, w: &mut [f32]) {
    const KEYS: usize = KEY_GROUP;
    let q: [&[f32]; Q] = std::array::from_fn(|j| &qv[j][..hd]);
    let kb = kt.len() / hd;
    for k0 in (0..n.min(kb)).step_by(KEYS) {
        let mut acc = [[0f32; KEYS]; Q];
        // The group of keys k0.. ([`key_at`]), one element of its 16 keys after another.
        let group = &kt[k0 * hd..][..hd * KEYS];
        for d in 0..hd {
            let row: &[f32; KEYS] = group[d * KEYS..][..KEYS].try_into().unwrap();
            for (a, q) in acc.iter_mut().zip(&q) {
                let qd = q[d];
                for (x, &k) in a.iter_mut().zip(row) {
                    *x = qd.mul_add(k, *x);
                }
            }
        }
        for (j, a) in acc.iter().enumerate() {
            w[j * kb + k0..][..KEYS].copy_from_slice(a);
        }
    }
}

/// Turns one query's visible raw scores of a block into weights against its running state:
/// scale and soft-cap, new maximum (rescaling the state), exponentials, their sum.
#[inline(always)]
fn weights(st: &mut Running, qi: usize, hd: usize, sc: Scoring, s: &mut [f32]) {
    for x in s.iter_mut() {
        *x /= sc.divisor;
    }
    if let Some(cap) = sc.softcap {
        for x in s.iter_mut() {
            *x = cap * (*x / cap).tanh();
        }
    }
    let old = st.max[qi];
    let max = old.max(lanes_max(s));
    if old != f32::NEG_INFINITY && max > old {
        let r = (old - max).exp();
        st.sum[qi] *= r;
        st.acc[qi * hd..(qi + 1) * hd]
            .iter_mut()
            .for_each(|a| *a *= r);
    }
    st.max[qi] = max;
    for x in s.iter_mut() {
        *x = exp_nonpositive(*x - max);
    }
    st.sum[qi] += lanes_sum(s);
}

/// The maximum of `s` (exact whatever the order; 8 lanes so it vectorises).
#[inline(always)]
fn lanes_max(s: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 8];
    let chunks = s.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &x) in m.iter_mut().zip(c) {
            *a = a.max(x);
        }
    }
    tail.iter()
        .chain(&m)
        .fold(f32::NEG_INFINITY, |a, &x| a.max(x))
}

/// The sum of `s` in 8 lanes (element k into lane k mod 8), then the tail, then a fixed
/// pairwise sum of the lanes: one order for a given length.
#[inline(always)]
fn lanes_sum(s: &[f32]) -> f32 {
    let mut l = [0f32; 8];
    let chunks = s.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, &x) in l.iter_mut().zip(c) {
            *a += x;
        }
    }
    ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])) + tail
}

/// For each head h of a row, `acc_h += Σ_k w[h, k] · vals[k]` over the block's visible keys,
/// in key order per element; `H` heads share each load of the values, chunks of `W` elements
/// stay in registers while the keys stream past (register blocking only: any `H` and `W` give
/// the same bits; 2 × 32 measured fastest on AVX2 and as fast as 512-bit lanes).
#[inline(always)]
fn add_weighted<const H: usize, const W: usize>(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let heads = acc.len() / hd;
    let mut h = 0;
    while h + H <= heads {
        let (a, w) = (&mut acc[h * hd..(h + H) * hd], &w[h * kb..]);
        chunks::<H, W>(a, hd, kb, w, keys.clone(), vals);
        h += H;
    }
    while h < heads {
        let (a, w) = (&mut acc[h * hd..(h + 1) * hd], &w[h * kb..]);
        chunks::<1, W>(a, hd, kb, w, keys.clone(), vals);
        h += 1;
    }
}

/// [`add_weighted`] for `H` heads, chunk by chunk: `W` wide, then 8, then 1.
#[inline(always)]
fn chunks<const H: usize, const W: usize>(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let mut d0 = 0;
    while d0 + W <= hd {
        chunk::<H, W>(acc, hd, kb, d0, w, keys.clone(), vals);
        d0 += W;
    }
    while d0 + 8 <= hd {
        chunk::<H, 8>(acc, hd, kb, d0, w, keys.clone(), vals);
        d0 += 8;
    }
    while d0 < hd {
        chunk::<H, 1>(acc, hd, kb, d0, w, keys.clone(), vals);
        d0 += 1;
    }
}

/// Elements `d0..d0 + W` of `H` heads' accumulators over the visible keys.
#[inline(always)]
fn chunk<const H: usize, const W: usize>(
    acc: &mut [f32],
    hd: usize,
    kb: usize,
    d0: usize,
    w: &[f32],
    keys: Range<usize>,
    vals: &[f32],
) {
    let mut a = [[0f32; W]; H];
    for (h, a) in a.iter_mut().enumerate() {
        a.copy_from_slice(&acc[h * hd + d0..h * hd + d0 + W]);
    }
    for (k, row) in keys.zip(vals.chunks_exact(hd)) {
        let v = &row[d0..d0 + W];
        for (h, a) in a.iter_mut().enumerate() {
            let wk = w[h * kb + k];
            for (x, &v) in a.iter_mut().zip(v) {
                *x = wk.mul_add(v, *x);
            }
        }
    }
    for (h, a) in a.iter().enumerate() {
        acc[h * hd + d0..h * hd + d0 + W].copy_from_slice(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_reductions_equal_plain_ones() {
        let s: Vec<f32> = (0..29).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        assert_eq!(lanes_max(&s), 5.0);
        assert_eq!(lanes_sum(&s), s.iter().sum::<f32>());
    }
}
