//! Benchmarks: a `run` (one concurrency level) or `sweep` (several) of one workload on one loaded
//! model — warm-up and measured rounds per level, jobs as closed-loop clients of one shared
//! engine, raw samples into the record after every round.

pub mod ab;
pub(crate) mod baseline;
pub mod cold;
pub mod cold_child;
pub mod error;
pub(crate) mod grid;
pub mod kernel_choice;
pub mod prefill;
pub(crate) mod private_copy;
pub mod progress;
pub mod round;
pub(crate) mod runtime;
pub(crate) mod samples;
pub mod session;
pub mod spec_cost;
pub mod spec_samples;
pub(crate) mod spec_setup;
pub(crate) mod sweep;
pub(crate) mod think;
pub mod timeline;
pub(crate) mod trace;
