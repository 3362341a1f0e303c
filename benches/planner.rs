//! The scheduler's planner alone: time of one `schedule()` call with 1, 8, 64 and 512 sequences
//! waiting and running, per policy, with no model (pure planning over sequence lengths).
//!
//! Each case keeps `n` sequences running and `n` waiting (slots for `n`, budgets that hold them),
//! runs steps until the running set decodes, then times `--steps` planning calls; each call's
//! items are completed so the state moves like a real run. The table shows the median and the
//! slowest call over `--rounds` rounds of `--steps` calls each.
//!
//! `cargo bench --bench planner [-- --rounds N --steps N]`

use std::time::Instant;

use tokfire::config::schedule::Schedule;
use tokfire::engine::scheduler::{Scheduler, SchedulerConfig};
use tokfire::measure::stats;

const SIZES: [usize; 4] = [1, 8, 64, 512];
const POLICIES: [Schedule; 3] = [
    Schedule::Fifo,
    Schedule::DecodeFirst,
    Schedule::PrefillFirst,
];
const PROMPT: usize = 64;
const MAX_NEW: usize = 1_000_000;

fn args() -> (usize, usize) {
    let (mut rounds, mut steps) = (5, 200);
    let argv: Vec<String> = std::env::args().collect();
    for w in argv.windows(2) {
        match w[0].as_str() {
            "--rounds" => rounds = w[1].parse().expect("--rounds N"),
            "--steps" => steps = w[1].parse().expect("--steps N"),
            _ => {}
        }
    }
    (rounds.max(1), steps.max(1))
}

/// A scheduler with `n` running decoding sequences and `n` more waiting.
fn state(n: usize, schedule: Schedule) -> Scheduler {
    let cfg = SchedulerConfig {
        max_seqs: n,
        max_batch_tokens: n * PROMPT,
        prefill_chunk: PROMPT,
        kv_budget_tokens: 2 * n * (PROMPT + MAX_NEW),
        schedule,
        prefix_cache_tokens: 0,
    };
    let mut s = Scheduler::new(cfg);
    for id in 0..2 * n as u64 {
        s.submit(id, PROMPT, MAX_NEW).expect("fits the budget");
    }
    while s.running() < n || s.unplanned_decodes(&Default::default()) < n {
        let plan = s.schedule();
        for it in &plan.items {
            s.complete(it, false);
        }
    }
    s
}

/// Per-call planning times of one round, ns.
fn round(n: usize, schedule: Schedule, steps: usize) -> Vec<f64> {
    let mut s = state(n, schedule);
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let t = Instant::now();
        let plan = std::hint::black_box(s.schedule());
        out.push(t.elapsed().as_nanos() as f64);
        for it in &plan.items {
            s.complete(it, false);
        }
    }
    out
}

fn main() {
    let (rounds, steps) = args();
    println!(
        "planner: one schedule() call, n running + n waiting; median (slowest) over {rounds} rounds x {steps} calls"
    );
    println!(
        "{:>5}  {:>22}  {:>22}  {:>22}",
        "n", "fifo µs", "decode-first µs", "prefill-first µs"
    );
    for n in SIZES {
        let mut cells = Vec::new();
        for p in POLICIES {
            let all: Vec<f64> = (0..rounds).flat_map(|_| round(n, p, steps)).collect();
            let med = stats::median(&all).unwrap_or(0.0) / 1e3;
            let worst = stats::max(&all).unwrap_or(0.0) / 1e3;
            cells.push(format!("{med:.2} ({worst:.1})"));
        }
        println!(
            "{n:>5}  {:>22}  {:>22}  {:>22}",
            cells[0], cells[1], cells[2]
        );
    }
}
