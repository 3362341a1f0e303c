//! Where a load's time went, as a results file stores it: a type of the record's own, filled
//! from the loader's [`LoadSplit`], so the loader can change without changing the file format.

use serde::{Deserialize, Serialize};

use crate::config::LoadMode;
use crate::model::mapped::LoadSplit;

/// Where the load time went and how the weights got into memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadSplitRecord {
    /// How the weight bytes were brought in.
    #[serde(default)]
    pub mode: LoadMode,
    /// Opening the file, reading and checking the header and metadata, seconds.
    pub header_s: f64,
    /// Building the tokenizer and chat template, seconds.
    pub tokenizer_s: f64,
    /// Building every weight (mapping, copying, dequantizing), seconds.
    pub weights_s: f64,
    /// Touching every mapped weight page once, seconds (0 when nothing is mapped).
    pub first_touch_s: f64,
    /// Bytes of the file the quantized matrices borrow from the mapping.
    pub mapped_bytes: u64,
    /// Bytes of the file read into our own memory (copied or dequantized).
    pub copied_bytes: u64,
}

impl From<&LoadSplit> for LoadSplitRecord {
    fn from(s: &LoadSplit) -> Self {
        Self {
            mode: s.mode,
            header_s: s.header_s,
            tokenizer_s: s.tokenizer_s,
            weights_s: s.weights_s,
            first_touch_s: s.first_touch_s,
            mapped_bytes: s.mapped_bytes,
            copied_bytes: s.copied_bytes,
        }
    }
}
