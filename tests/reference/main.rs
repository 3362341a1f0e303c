//! Our models against stock candle implementations and llama.cpp fixtures, synthetic and real weights.
//!
//! One test binary for the area (link time on 2 cores); each file is a module.

#[path = "../common/mod.rs"]
mod common;

mod gemma_real;
mod gemma_reference;
mod oracle;
mod qwen35;
mod qwen35_mtp;
mod real_model;
mod reference_synthetic;
