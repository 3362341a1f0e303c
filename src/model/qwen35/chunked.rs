//! The delta rule in its chunked (parallel) form, for prefill: the same result as the recurrent
//! form of [`super::delta`] (up to f32 rounding), computed per 64-token chunk with matrix
//! products instead of one state update per token.
//!
//! Within a chunk of tokens 1..C starting from the state `S₀` (row j = value dimension j), with
//! `G_t` the cumulative log decay and `Γ_t = e^{G_t}`, the delta rule's writes
//! `d_t = β_t (v_t − e^{g_t} S_{t−1} k_t)` satisfy the lower-triangular system
//! `(I + A) D = β⊙V − β⊙Γ⊙(K S₀ᵀ)` with `A[t,i] = β_t e^{G_t−G_i} (k_t·k_i)` for `i < t`
//! (the WY form of Yang et al.'s Gated DeltaNet). So with `T = (I + A)⁻¹`:
//! - `U = T (β⊙V)` and `W = T (β⊙Γ⊙K)` for every chunk at once (they do not read the state);
//! - then chunk after chunk: `D = U − W S₀ᵀ`, the outputs
//!   `O = Γ⊙(Q S₀ᵀ) + P D` with `P[t,i] = e^{G_t−G_i} (q_t·k_i)` for `i ≤ t` (times 1/√state),
//!   and the next state `S = Γ_C S₀ + (e^{G_C−G}⊙D)ᵀ K`.
//!
//! Each value head runs on its own thread (rayon over heads), chunk after chunk, with the state
//! held transposed (`Sᵀ`, key dimension first) so that every product is a row-major
//! `out += a · b` whose inner loop is one vectorized axpy over a row of `b`; the triangular
//! matrices' zeros are skipped. A chunk's tail past the range is padding with zero keys, values,
//! write strength and log decay, which leaves the state and the real tokens' outputs unchanged.

use std::ops::Range;

use rayon::prelude::*;

use super::delta::DeltaDims;

/// Tokens per chunk.
pub(super) const CHUNK: usize = 64;

/// One sequence's per-token inputs to the delta rule (after the conv and the L2 norms).
pub(super) struct Heads<'a> {
    /// `[n, k_heads, state]`, L2-normalized.
    pub q: &'a [f32],
    /// `[n, k_heads, state]`, L2-normalized.
    pub k: &'a [f32],
    /// The conv's output `[n, channels]`; value head h's values sit at
    /// `2 · k_heads · state + h · state`.
    pub conv: &'a [f32],
    /// Log decay `[n, v_heads]`.
    pub g: &'a [f32],
    /// Write strength `[n, v_heads]`.
    pub beta: &'a [f32],
}

/// Runs the delta rule over tokens `range` of `x`, advancing `ssm` (`[v_heads, state, state]`)
/// and writing their outputs (`[n, v_heads · state]` rows, times 1/√state) into `out`.
pub(super) fn run(x: &Heads, d: &DeltaDims, range: Range<usize>, ssm: &mut [f32], out: &mut [f32]) {
    let (s, hv) = (d.state, d.v_heads);
    let per_head: Vec<Vec<f32>> = ssm
        .par_chunks_mut(s * s)
        .enumerate()
        .map(|(h, m)| head(x, d, h, range.clone(), m))
        .collect();
    for (h, o) in per_head.iter().enumerate() {
        for (i, t) in range.clone().enumerate() {
            out[(t * hv + h) * s..][..s].copy_from_slice(&o[i * s..][..s]);
        }
    }
}

/// One chunk of one head: its rows and the products built from them.
struct Chunk {
    q: Vec<f32>,
    k: Vec<f32>,
    /// `k` transposed, `[state, CHUNK]`.
    kt: Vec<f32>,
    v: Vec<f32>,
    /// Cumulative log decay.
    cum: Vec<f32>,
    beta: Vec<f32>,
    /// `[CHUNK, CHUNK]` scratch: k·k, then `T`.
    t: Vec<f32>,
    /// `[CHUNK, CHUNK]`: q·k, then `P`.
    p: Vec<f32>,
}

impl Chunk {
    fn new(s: usize) -> Self {
        Self {
            q: vec![0.0; CHUNK * s],
            k: vec![0.0; CHUNK * s],
            kt: vec![0.0; CHUNK * s],
            v: vec![0.0; CHUNK * s],
            cum: vec![0.0; CHUNK],
            beta: vec![0.0; CHUNK],
            t: vec![0.0; CHUNK * CHUNK],
            p: vec![0.0; CHUNK * CHUNK],
        }
    }

    /// Loads value head `h`'s tokens `range` (at most CHUNK), zero past them.
    fn load(&mut self, x: &Heads, d: &DeltaDims, h: usize, range: Range<usize>) {
        let (s, hk, hv, ch) = (d.state, d.k_heads, d.v_heads, d.channels());
        let kh = h % hk;
        for buf in [&mut self.q, &mut self.k, &mut self.v] {
            buf.fill(0.0);
        }
        self.beta.fill(0.0);
        let mut sum = 0.0;
        for r in 0..CHUNK {
            let t = range.start + r;
            if t < range.end {
                self.q[r * s..][..s].copy_from_slice(&x.q[(t * hk + kh) * s..][..s]);
                self.k[r * s..][..s].copy_from_slice(&x.k[(t * hk + kh) * s..][..s]);
                self.v[r * s..][..s].copy_from_slice(&x.conv[t * ch + 2 * hk * s + h * s..][..s]);
                sum += x.g[t * hv + h];
                self.beta[r] = x.beta[t * hv + h];
            }
            self.cum[r] = sum;
        }
        for (r, row) in self.k.chunks_exact(s).enumerate() {
            for (j, e) in row.iter().enumerate() {
                self.kt[j * CHUNK + r] = *e;
            }
        }
    }
}

/// Value head `h` over `range`, advancing its state `m` (`[state, state]`, row = value
/// dimension); returns its outputs `[range.len(), state]`.
fn head(x: &Heads, d: &DeltaDims, h: usize, range: Range<usize>, m: &mut [f32]) -> Vec<f32> {
    let s = d.state;
    let scale = 1.0 / (s as f32).sqrt();
    let mut st = transpose(m, s);
    let mut out = vec![0f32; range.len() * s];
    let mut c = Chunk::new(s);
    let (mut u, mut w, mut o) = (
        vec![0f32; CHUNK * s],
        vec![0f32; CHUNK * s],
        vec![0f32; CHUNK * s],
    );
    for start in range.clone().step_by(CHUNK) {
        let rows = CHUNK.min(range.end - start);
        c.load(x, d, h, start..start + rows);
        c.t.fill(0.0);
        c.p.fill(0.0);
        mul_acc(&mut c.t, &c.k, &c.kt, CHUNK, 1.0);
        mul_acc(&mut c.p, &c.q, &c.kt, CHUNK, 1.0);
        triangles(&mut c, scale);
        // U = T (β⊙V), W = T (β⊙Γ⊙K): scaled in place, their rows are not read again.
        for r in 0..CHUNK {
            let (b, g) = (c.beta[r], c.beta[r] * decay(c.cum[r]));
            c.v[r * s..][..s].iter_mut().for_each(|e| *e *= b);
            c.k[r * s..][..s].iter_mut().for_each(|e| *e *= g);
        }
        u.fill(0.0);
        w.fill(0.0);
        mul_acc(&mut u, &c.t, &c.v, s, 1.0);
        mul_acc(&mut w, &c.t, &c.k, s, 1.0);
        // D = U − W Sᵀ (into u).
        mul_acc(&mut u, &w, &st, s, -1.0);
        // O = Γ⊙(Q Sᵀ)/√state + P D.
        o.fill(0.0);
        mul_acc(&mut o, &c.q, &st, s, 1.0);
        for r in 0..rows {
            let f = decay(c.cum[r]) * scale;
            o[r * s..][..s].iter_mut().for_each(|e| *e *= f);
        }
        mul_acc(&mut o, &c.p, &u, s, 1.0);
        let at = (start - range.start) * s;
        out[at..at + rows * s].copy_from_slice(&o[..rows * s]);
        // Sᵀ = Γ_C Sᵀ + Kᵀ (e^{G_C−G}⊙D).
        let end = c.cum[CHUNK - 1];
        let kept = decay(end);
        st.iter_mut().for_each(|e| *e *= kept);
        for r in 0..CHUNK {
            let f = decay(end - c.cum[r]);
            u[r * s..][..s].iter_mut().for_each(|e| *e *= f);
        }
        mul_acc(&mut st, &c.kt, &u, s, 1.0);
    }
    m.copy_from_slice(&transpose(&st, s));
    out
}

/// `e^x` for a log decay `x` ≤ 0, flushed to 0 below e^−69 ≈ 1e−30: a term that small is
/// below f32's resolution beside the others, and letting it through would feed subnormal
/// numbers to the products (tens of times slower on x86; strongly decaying heads made the
/// chunked form twice as slow).
pub(super) fn decay(x: f32) -> f32 {
    if x < -69.0 {
        0.0
    } else {
        x.exp()
    }
}

/// `out += alpha · a · b` for row-major `a` `[rows, k]` and `b` `[k, n]` (`out` `[rows, n]`),
/// one axpy of a row of `b` per nonzero element of `a`.
fn mul_acc(out: &mut [f32], a: &[f32], b: &[f32], n: usize, alpha: f32) {
    let rows = out.len() / n;
    let k = a.len() / rows;
    for (orow, arow) in out.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        for (&av, brow) in arow.iter().zip(b.chunks_exact(n)) {
            if av == 0.0 {
                continue;
            }
            let f = alpha * av;
            for (o, e) in orow.iter_mut().zip(brow) {
                *o += f * e;
            }
        }
    }
}

/// The transpose of the square `[s, s]` matrix `m`.
fn transpose(m: &[f32], s: usize) -> Vec<f32> {
    let mut t = vec![0f32; s * s];
    for (i, row) in m.chunks_exact(s).enumerate() {
        for (j, e) in row.iter().enumerate() {
            t[j * s + i] = *e;
        }
    }
    t
}

/// Turns `c.t` (k·k) into `T = (I + A)⁻¹` by forward substitution on the unit lower-triangular
/// `I + A`, and `c.p` (q·k) into `P` (decayed, causal, times `scale`).
fn triangles(c: &mut Chunk, scale: f32) {
    let (cum, beta) = (&c.cum, &c.beta);
    let mut a = [0f32; CHUNK];
    for r in 0..CHUNK {
        for i in 0..r {
            a[i] = beta[r] * decay(cum[r] - cum[i]) * c.t[r * CHUNK + i];
        }
        // Row r of T: T[r,i] = −Σ_{i ≤ j < r} A[r,j] T[j,i], and 1 on the diagonal.
        let (done, row) = c.t.split_at_mut(r * CHUNK);
        row[..CHUNK].fill(0.0);
        for (j, aj) in a[..r].iter().enumerate() {
            let above = &done[j * CHUNK..][..=j];
            for (x, tj) in row[..=j].iter_mut().zip(above) {
                *x -= aj * tj;
            }
        }
        row[r] = 1.0;
        let p = &mut c.p[r * CHUNK..][..CHUNK];
        for i in 0..CHUNK {
            p[i] = match i <= r {
                true => decay(cum[r] - cum[i]) * p[i] * scale,
                false => 0.0,
            };
        }
    }
}
