//! Loading weights straight from a memory-mapped GGUF: the mapping, checked byte ranges of it
//! that quantized matrices borrow instead of copying, the first touch of those pages, and the
//! load split (header, tokenizer, weights, first touch; bytes mapped vs copied) that
//! `generate` prints and records keep.
//!
//! A mapped file is hostile input like a read one: every range is checked against the length
//! of the mapping before a matrix borrows it (the layout pass has already checked it against
//! the file). Like every mapping, the file must not be truncated while the model is loaded.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memmap2::Mmap;

use crate::config::LoadMode;
use crate::error::ModelError;
use crate::kernels::{Bytes, SharedBytes};

/// A read-only mapping of a whole model file.
#[derive(Clone)]
pub(crate) struct MappedFile {
    path: PathBuf,
    map: Arc<Mmap>,
}

impl MappedFile {
    /// Maps `file` (opened from `path`) read-only.
    pub(crate) fn map(path: &Path, file: &File) -> Result<Self, ModelError> {
        // SAFETY: the mapping is only read; like every mmap it needs the file not to be
        // truncated while mapped (the module documentation says so).
        let map = unsafe { Mmap::map(file) }.map_err(ModelError::io(path))?;
        Ok(Self {
            path: path.to_path_buf(),
            map: Arc::new(map),
        })
    }

    /// Bytes `offset..offset + len` of the file, borrowed; an error naming the file when the
    /// range does not lie inside it.
    pub(crate) fn range(&self, offset: u64, len: u64, what: &str) -> Result<Bytes, ModelError> {
        let range =
            checked_range(offset, len, self.map.len()).ok_or_else(|| ModelError::Invalid {
                path: self.path.clone(),
                detail: format!(
                    "{what}: bytes {offset}+{len} lie outside the {} bytes of the mapped file",
                    self.map.len()
                ),
            })?;
        let owner: SharedBytes = self.map.clone();
        Ok(Bytes::Borrowed { owner, range })
    }

    /// Reads one byte of every page of `ranges` so their pages are resident and mapped
    /// (from disk when the page cache is cold); returns the time it took.
    pub(crate) fn touch(&self, ranges: &[Range<usize>]) -> Duration {
        let start = Instant::now();
        let mut sum = 0u8;
        for r in ranges {
            let Some(bytes) = self.map.get(r.clone()) else {
                continue;
            };
            for b in bytes.iter().step_by(PAGE) {
                sum = sum.wrapping_add(*b);
            }
        }
        std::hint::black_box(sum);
        start.elapsed()
    }
}

/// Page size assumed by [`MappedFile::touch`] (touching more often is harmless).
const PAGE: usize = 4096;

/// `offset..offset + len` as a range inside `file_len` bytes, if it fits.
fn checked_range(offset: u64, len: u64, file_len: usize) -> Option<Range<usize>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    (end <= file_len).then_some(start..end)
}

/// Where the load time went and how the weights got into memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadSplit {
    /// How the weight bytes were brought in.
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
    /// Repacking matrices into tiles, seconds (part of `weights_s`; 0 when nothing repacks).
    pub repack_s: f64,
    /// Bytes of the file repacked into tiles we own (not borrowed from the mapping; counted
    /// in `copied_bytes` too when the file was copied).
    pub repacked_bytes: u64,
    /// On a device other than the CPU: what opening it and copying the weights onto it cost.
    pub device: Option<DeviceLoad>,
}

/// The device's share of a load (GPU): none of it happens on the CPU, where weights are used
/// where they are read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceLoad {
    /// Opening the device (driver and context creation), seconds.
    pub open_s: f64,
    /// Reading copied tensors from the file into host memory, seconds.
    pub read_s: f64,
    /// Copying them from host memory to the device, waited for, seconds.
    pub upload_s: f64,
    /// Bytes copied to the device.
    pub upload_bytes: u64,
}

#[cfg(test)]
#[path = "mapped_tests.rs"]
mod tests;
