//! Measuring: statistics over raw samples (clocks, memory and provenance join later).

pub mod stats;
