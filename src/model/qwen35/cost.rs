//! Where a Qwen3.5 step's time goes, for the engine bench: the projections on our kernels
//! (every matmul: the layers' inputs and outputs and the MLPs), the Gated DeltaNet sequence
//! mixing (conv, delta rule, gated norm), the attention core (RoPE, cache write, scores), and
//! the rest of the step (norms, residuals, embedding, head). Wall clock of the step's own
//! thread, summed over steps until read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The parts a step is split into.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part {
    Projections = 0,
    DeltaNet = 1,
    Attention = 2,
    Step = 3,
}

/// Nanoseconds per part, summed since the last [`CostSplit::take`].
#[derive(Debug, Default)]
pub(crate) struct CostSplit {
    ns: [AtomicU64; 4],
}

impl CostSplit {
    /// Adds the time since `start` to `part`.
    pub(crate) fn add(&self, part: Part, start: Instant) {
        let ns = start.elapsed().as_nanos() as u64;
        self.ns[part as usize].fetch_add(ns, Ordering::Relaxed);
    }

    /// Seconds per part since the last call — projections, Gated DeltaNet mixing, attention
    /// core, the rest — and resets.
    pub(crate) fn take(&self) -> [(&'static str, f64); 4] {
        let s = |p: Part| self.ns[p as usize].swap(0, Ordering::Relaxed) as f64 / 1e9;
        let (proj, delta, attn, step) = (
            s(Part::Projections),
            s(Part::DeltaNet),
            s(Part::Attention),
            s(Part::Step),
        );
        let rest = (step - proj - delta - attn).max(0.0);
        [
            ("projections", proj),
            ("delta-net mixing", delta),
            ("attention core", attn),
            ("rest", rest),
        ]
    }
}
