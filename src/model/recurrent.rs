//! A sequence's recurrent state beside its KV rows, for the hybrid families (Qwen3.5's Gated
//! DeltaNet layers): per recurrent layer the conv window (the last kernel − 1 inputs of every
//! conv channel, oldest first) and the state matrices (one `state × state` matrix per value
//! head, row j holding value dimension j). Fixed-size per sequence, whatever its length; f32 on
//! the host. Unlike KV rows it cannot be cut back to an earlier length by forgetting rows:
//! rolling back restores a snapshot taken there. A sequence that may be rolled back
//! (speculative decoding) keeps the state after each of its last `keep` tokens, across steps —
//! `keep` copies of the state, which [`Recurrent::bytes`] counts; a cut to a length without a
//! snapshot marks the state unusable and the next step refuses it instead of computing from the
//! wrong state.
//!
//! For the prefix cache a sequence can also be asked to keep its state at chosen lengths
//! ([`Recurrent::mark`], block ends of its prompt): the step that passes such a length copies the
//! state there, and the engine moves the copy into the prefix cache in the same step
//! ([`Recurrent::take_marked`]), where the cache's budget counts it.

use std::collections::VecDeque;

use crate::error::EngineError;

/// How much state a sequence holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateShape {
    /// Recurrent layers.
    pub layers: usize,
    /// f32 values of one layer's conv window.
    pub conv: usize,
    /// f32 values of one layer's state matrices.
    pub ssm: usize,
}

impl StateShape {
    /// Bytes one sequence's state takes, every layer.
    pub fn bytes(&self) -> usize {
        self.layers * (self.conv + self.ssm) * std::mem::size_of::<f32>()
    }
}

/// One recurrent layer's state of one sequence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LayerState {
    /// `[kernel − 1, channels]`, oldest row first.
    pub conv: Vec<f32>,
    /// `[v_heads, state, state]`.
    pub ssm: Vec<f32>,
}

/// Every recurrent layer's state of one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Recurrent {
    shape: StateShape,
    layers: Vec<LayerState>,
    /// Cut back to an earlier length without a snapshot: unusable until reset.
    stale: bool,
    /// Snapshots kept: the state after each of the last `keep` tokens.
    keep: usize,
    /// Per layer, (sequence length, state at that length), oldest first, at most `keep`.
    history: Vec<VecDeque<(usize, LayerState)>>,
    /// Lengths at which the state is copied for the prefix cache, ascending.
    marks: Vec<usize>,
    /// Per layer, (length, state) copied at `marks` and not taken yet.
    marked: Vec<Vec<(usize, LayerState)>>,
}

impl Recurrent {
    /// A fresh (all-zero) state, as a sequence starts.
    pub(crate) fn new(shape: StateShape) -> Self {
        let layer = LayerState {
            conv: vec![0.0; shape.conv],
            ssm: vec![0.0; shape.ssm],
        };
        Self {
            shape,
            layers: vec![layer; shape.layers],
            stale: false,
            keep: 0,
            history: vec![VecDeque::new(); shape.layers],
            marks: Vec::new(),
            marked: vec![Vec::new(); shape.layers],
        }
    }

    /// Copies the state when the sequence reaches each of `lens` (lengths it has not reached
    /// yet; the prefix cache's block ends), for [`Recurrent::take_marked`].
    pub(crate) fn mark(&mut self, lens: &[usize]) {
        self.marks.extend(lens.iter().filter(|&&l| l > 0));
        self.marks.sort_unstable();
        self.marks.dedup();
    }

    /// The states copied at marked lengths since the last call, every layer's, by length; the
    /// marks they answer are dropped.
    pub(crate) fn take_marked(&mut self) -> Vec<(usize, Vec<LayerState>)> {
        let Some(first) = self.marked.first() else {
            return Vec::new();
        };
        let lens: Vec<usize> = first.iter().map(|(l, _)| *l).collect();
        let mut out: Vec<(usize, Vec<LayerState>)> =
            lens.iter().map(|&l| (l, Vec::new())).collect();
        for layer in &mut self.marked {
            for (slot, (_, s)) in out.iter_mut().zip(layer.drain(..)) {
                slot.1.push(s);
            }
        }
        self.marks.retain(|l| !lens.contains(l));
        out.retain(|(_, s)| s.len() == self.shape.layers);
        out
    }

    /// The sequence lengths in `(base, base + n]` after which a step of `n` tokens starting at
    /// length `base` copies the state, ascending: the last `keep` (rollback) and the marks.
    pub(crate) fn lengths_wanted(&self, base: usize, n: usize) -> Vec<usize> {
        let end = base + n;
        let mut lens: Vec<usize> = (end + 1 - self.keep.min(n)..=end).collect();
        lens.extend(self.marks.iter().filter(|&&l| l > base && l <= end));
        lens.sort_unstable();
        lens.dedup();
        lens
    }

    /// Keeps the state after each of (at least) the last `n` tokens from now on, so the
    /// sequence can be cut back by up to `n - 1` tokens; never lowers what is kept.
    pub(crate) fn keep_snapshots(&mut self, n: usize) {
        self.keep = self.keep.max(n);
        let n = self.keep;
        for h in &mut self.history {
            while h.len() > n {
                h.pop_front();
            }
        }
    }

    /// Records recurrent layer `r`'s state at the lengths [`Recurrent::lengths_wanted`] gave:
    /// marked ones for the prefix cache, the last `keep` for rollback.
    pub(crate) fn record(&mut self, r: usize, snaps: Vec<(usize, LayerState)>) {
        let keep = self.keep;
        let (Some(h), Some(marked)) = (self.history.get_mut(r), self.marked.get_mut(r)) else {
            return;
        };
        for (len, s) in snaps {
            if self.marks.contains(&len) {
                marked.push((len, s.clone()));
            }
            h.push_back((len, s));
        }
        while h.len() > keep {
            h.pop_front();
        }
    }

    /// Sets every layer's state to `layers` (a prefix cache's copy at a block end).
    pub(crate) fn restore(&mut self, layers: &[LayerState]) -> Result<(), EngineError> {
        if layers.len() != self.shape.layers || self.stale {
            return Err(EngineError::Bug(format!(
                "restoring {} recurrent layers into a state of {}",
                layers.len(),
                self.shape.layers
            )));
        }
        self.layers = layers.to_vec();
        Ok(())
    }

    /// Restores the state at sequence length `len` from the snapshots; false when a layer has
    /// none there (the caller marks the state stale).
    pub(crate) fn roll_back(&mut self, len: usize) -> bool {
        let found: Option<Vec<LayerState>> = self
            .history
            .iter()
            .map(|h| h.iter().find(|(l, _)| *l == len).map(|(_, s)| s.clone()))
            .collect();
        let Some(states) = found.filter(|s| !s.is_empty()) else {
            return false;
        };
        self.layers = states;
        for h in &mut self.history {
            h.retain(|(l, _)| *l <= len);
        }
        for m in &mut self.marked {
            m.retain(|(l, _)| *l <= len);
        }
        true
    }

    /// Bytes held: the state, for a sequence that may roll back `keep` snapshots of it, and
    /// the marked copies not yet moved into the prefix cache.
    pub(crate) fn bytes(&self) -> usize {
        let marked = self.marked.first().map_or(0, Vec::len);
        self.shape.bytes() * (1 + self.keep + marked)
    }

    pub fn shape(&self) -> StateShape {
        self.shape
    }

    /// Back to the start of a sequence (snapshots dropped, `keep` kept).
    pub(crate) fn reset(&mut self) {
        let (keep, marks) = (self.keep, std::mem::take(&mut self.marks));
        *self = Self::new(self.shape);
        self.keep = keep;
        self.marks = marks;
    }

    /// Marks the state unusable (its sequence was cut back without a snapshot).
    pub(crate) fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// Recurrent layer `r`'s state, for a step to read and advance.
    pub(crate) fn layer_mut(&mut self, r: usize) -> Result<&mut LayerState, EngineError> {
        if self.stale {
            return Err(EngineError::Bug(
                "a sequence with recurrent state was cut back to an earlier length without a \
                 snapshot; its state no longer matches its tokens"
                    .into(),
            ));
        }
        let held = self.layers.len();
        self.layers.get_mut(r).ok_or_else(|| {
            EngineError::Bug(format!("recurrent layer {r} of {held}; this is a bug"))
        })
    }

    /// The largest absolute difference between two states of the same shape.
    #[cfg(any(test, feature = "synthetic"))]
    pub fn max_diff(&self, other: &Recurrent) -> Option<f32> {
        if self.shape != other.shape {
            return None;
        }
        let pairs = self.layers.iter().zip(&other.layers);
        let diff = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max)
        };
        Some(
            pairs
                .map(|(a, b)| diff(&a.conv, &b.conv).max(diff(&a.ssm, &b.ssm)))
                .fold(0f32, f32::max),
        )
    }
}
