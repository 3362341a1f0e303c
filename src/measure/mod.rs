//! Measuring: statistics over raw samples, process memory and disk counters, page-cache state of
//! model files, energy counters where readable, a GPU's driver figures, and provenance (build
//! and machine).

pub mod changepoint;
pub(crate) mod clocks;
pub(crate) mod energy;
pub(crate) mod gpu;
pub mod holders;
pub(crate) mod memory;
pub mod monotonic;
pub(crate) mod pagecache;
pub(crate) mod provenance;
pub mod sentinel;
pub mod stats;
