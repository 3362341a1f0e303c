//! TokFire Bench: loads a language model inside its own process with candle, runs its own engine
//! and measures the clocks a person sits through (load, kernel warm-up, prefill, decode).
//!
//! Layers: [`cli`] (clap) → [`config`] (validated settings) → [`model`] (files, tokenizer,
//! weights, forward) → [`engine`] (caches, sampler, loops) → [`report`] (what the user reads).

pub mod bench;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod engine;
pub mod error;
pub mod files;
pub(crate) mod fmt;
pub mod kernels;
pub mod measure;
pub mod model;
pub mod record;
pub mod report;
pub(crate) mod seed;
pub mod spec;
pub mod workload;

pub use cmd::run;
