//! A sequence's recurrent state beside its KV rows, for the hybrid families (Qwen3.5's Gated
//! DeltaNet layers): per recurrent layer the conv window (the last kernel − 1 inputs of every
//! conv channel, oldest first) and the state matrices (one `state × state` matrix per value
//! head, row j holding value dimension j). Fixed-size per sequence, whatever its length; f32 on
//! the host. Unlike KV rows it cannot be cut back to an earlier length: rolling back needs a
//! snapshot taken there, so a cache cut short of its length marks its state unusable and the
//! next step refuses it instead of computing from the wrong state.

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
        }
    }

    pub fn shape(&self) -> StateShape {
        self.shape
    }

    /// Back to the start of a sequence.
    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.shape);
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
