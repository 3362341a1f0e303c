//! Measuring: statistics over raw samples, process memory and disk counters, page-cache state of
//! model files, energy counters where readable, and provenance (build and machine).

pub mod clocks;
pub mod energy;
pub mod memory;
pub mod monotonic;
pub mod pagecache;
pub mod provenance;
pub mod stats;
