//! Every verb driven end to end through the binary on tiny synthetic models.
//!
//! One test binary for the area (link time on 2 cores); each file is a module.

#[path = "../support/bench.rs"]
mod support;
#[path = "../support/text.rs"]
mod text;

mod ab_cli;
mod bench_cli;
mod chat_template_cli;
mod cli;
mod cold_cli;
mod hostile_cli;
mod hostile_flags;
mod hostile_records;
mod prefill_cli;
mod prefix_cli;
mod record_writes;
mod results_cli;
mod session_cli;
mod spec_cli;
mod spec_cost_cli;
mod think_cli;
