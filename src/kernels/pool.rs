//! Parallel sections: how many workers the current pool has, and running a model step on a
//! worker (of the runtime the caller entered, else of rayon's global pool) with the pool's
//! other workers kept awake for the step's parallel calls.

use std::sync::atomic::{AtomicBool, Ordering};

use super::team::Team;

/// Threads the kernels use: the current runtime's workers, else rayon's global pool's.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f` on a worker of the pool and waits for it. A model step wrapped in this keeps the
/// calling thread asleep, so on a machine with as many cores as threads no third thread
/// competes with the workers; the other workers stay awake for the step ([`awake`]).
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let f = match super::runtime::on_entered(|| awake(f)) {
        Ok(out) => return out,
        Err(f) => f,
    };
    rayon::scope(|_| f())
}

/// Idle polls a helper spins through before it also yields its core to the OS each time
/// (so a pool with more threads than free cores does not starve the step's own thread); a
/// poll is a look at the team's word, every [`TEAM_POLLS`]th also one into rayon's queues.
const SPINS_BEFORE_YIELD: u32 = 1 << 16;

/// Idle polls of the team's word ([`Team::help_once`], a load) per look into rayon's queues
/// (`rayon::yield_now`, which tries to steal from every worker): the step's own calls come
/// through the team, rayon's jobs are the rarer ones (candle's own parallel loops, a parallel
/// call made inside a team chunk).
const TEAM_POLLS: u32 = 16;

/// Runs `f` (on a worker) while every other worker of the pool runs a helper that takes the
/// step's parallel work as it appears and does not sleep until `f` returns (as llama.cpp's
/// threads spin between the graph's nodes).
///
/// Why: a decode step is some 200 parallel calls of tens of microseconds with serial stretches
/// between them; an idle rayon worker falls asleep within such a stretch and the next call
/// first waits for the OS to wake it. Engine bench, `--decode-only 1 --decode 128 --rounds 3`
/// (default model, 2 threads, `perf stat`): 22 123 context switches before, 3 146 with the
/// helpers (`perf record -e sched:sched_switch`: 96 % of them were workers going to sleep).
/// The CLI's `generate` (about 6 a step) and `sweep` (about 10 a step) switched as often
/// either way, and their speed did not change measurably.
fn awake<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let Some(me) = rayon::current_thread_index() else {
        return f();
    };
    let done = AtomicBool::new(false);
    let team = Team::new();
    rayon::scope(|s| {
        for _ in 1..threads() {
            let (done, team) = (&done, &team);
            s.spawn(move |_| help(me, done, team));
        }
        // Set however `f` ends: the scope waits for the helpers, a panic included.
        let _release = Release(&done);
        team.lead(f)
    })
}

/// Sets its flag when dropped.
struct Release<'a>(&'a AtomicBool);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A helper: runs whatever parallel work the pool has until `done`. A helper that lands on
/// the step's own thread (it only could while that thread waits for work it handed out)
/// returns at once.
fn help(owner: usize, done: &AtomicBool, team: &Team) {
    if rayon::current_thread_index() == Some(owner) {
        return;
    }
    let mut idle = 0u32;
    while !done.load(Ordering::Acquire) {
        if team.help_once() {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if !idle.is_multiple_of(TEAM_POLLS) {
            std::hint::spin_loop();
            continue;
        }
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => idle = 0,
            _ if idle < SPINS_BEFORE_YIELD => std::hint::spin_loop(),
            _ => std::thread::yield_now(),
        }
    }
}
