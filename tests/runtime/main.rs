//! The engine, scheduler, prefix cache, speculation and loader against plain references, and the layering rule.
//!
//! One test binary for the area (link time on 2 cores); each file is a module.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/text.rs"]
mod text;

mod bench_real;
mod engine;
mod generic_path;
mod layers;
mod mapped_load;
mod prefix;
mod schedule;
mod spec;
mod spec_draft;
mod spec_mtp;
