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
        }
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

    /// How many snapshots a step records for each recurrent layer: the states after its last
    /// this many tokens.
    pub(crate) fn snapshots_wanted(&self) -> usize {
        self.keep
    }

    /// Records recurrent layer `r`'s state after the tokens ending at the lengths given.
    pub(crate) fn record(&mut self, r: usize, snaps: Vec<(usize, LayerState)>) {
        let keep = self.keep;
        if let Some(h) = self.history.get_mut(r) {
            h.extend(snaps);
            while h.len() > keep {
                h.pop_front();
            }
        }
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
        true
    }

    /// Bytes held: the state and, for a sequence that may roll back, `keep` snapshots of it.
    pub(crate) fn bytes(&self) -> usize {
        self.shape.bytes() * (1 + self.keep)
    }

    pub fn shape(&self) -> StateShape {
        self.shape
    }

    /// Back to the start of a sequence (snapshots dropped, `keep` kept).
    pub(crate) fn reset(&mut self) {
        let keep = self.keep;
        *self = Self::new(self.shape);
        self.keep = keep;
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
