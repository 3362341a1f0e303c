//! Where a load's time went, as a results file stores it: a type of the record's own, filled
//! from the loader's [`LoadSplit`], so the loader can change without changing the file format.

use serde::{Deserialize, Serialize};

use crate::config::LoadMode;
use crate::model::mapped::{DeviceLoad, LoadSplit};

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
    /// Repacking matrices into 8-row tiles, seconds (part of `weights_s`; 0 when nothing was
    /// repacked, as in records before repacking existed).
    #[serde(default)]
    pub repack_s: f64,
    /// Bytes of the file repacked into tiles we own (not borrowed from the mapping).
    #[serde(default)]
    pub repacked_bytes: u64,
    /// On a device other than the CPU: opening it and copying the weights onto it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceLoadRecord>,
}

/// The device's share of a load (absent on the CPU).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceLoadRecord {
    /// Opening the device (driver and context creation), seconds.
    pub open_s: f64,
    /// Reading copied tensors from the file into host memory, seconds.
    pub read_s: f64,
    /// Copying them to the device, waited for, seconds.
    pub upload_s: f64,
    /// Bytes copied to the device.
    pub upload_bytes: u64,
}

impl From<&DeviceLoad> for DeviceLoadRecord {
    fn from(d: &DeviceLoad) -> Self {
        Self {
            open_s: d.open_s,
            read_s: d.read_s,
            upload_s: d.upload_s,
            upload_bytes: d.upload_bytes,
        }
    }
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
            repack_s: s.repack_s,
            repacked_bytes: s.repacked_bytes,
            device: s.device.as_ref().map(Into::into),
        }
    }
}
