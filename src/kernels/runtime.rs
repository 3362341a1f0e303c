//! The compute runtime a model runs under: a rayon pool of its own with a fixed number of
//! workers, whose matmuls run at one kernel level. The bench builds one per configuration and
//! runs the model's work inside it ([`Runtime::install`]); an `ab` builds one per arm, so its two
//! arms never share a thread count or a level and nothing process-wide is flipped between rounds.
//! Work started outside any runtime (a test calling the model directly) runs on rayon's global
//! pool at the best level this CPU has.

use std::cell::Cell;

use super::Level;

thread_local! {
    /// The level of the runtime this thread is a worker of (none outside every runtime).
    static LEVEL: Cell<Option<Level>> = const { Cell::new(None) };
}

/// Stack of every worker, bytes (what Linux gives a main thread).
const WORKER_STACK_BYTES: usize = 8 << 20;

/// A thread pool and the kernel level its workers run at.
pub struct Runtime {
    pool: rayon::ThreadPool,
    level: Level,
}

impl Runtime {
    /// `threads` workers at `level`; an error names the reason (a level this CPU lacks, no
    /// threads, a pool the OS refused).
    pub fn new(threads: usize, level: Level) -> Result<Self, String> {
        if threads == 0 {
            return Err("need at least one thread".into());
        }
        if !level.available() {
            return Err(format!(
                "this CPU does not support kernel level {level} (best available: {})",
                super::detect()
            ));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("tokfire-{i}"))
            // A main thread's stack: loading and rendering a chat template recurse as deep on a
            // worker as they would on the main thread (rayon's default is 2 MiB).
            .stack_size(WORKER_STACK_BYTES)
            .start_handler(move |_| LEVEL.with(|l| l.set(Some(level))))
            .build()
            .map_err(|e| format!("could not start {threads} worker threads: {e}"))?;
        Ok(Self { pool, level })
    }

    /// Runs `f` on a worker of this pool and waits for it: every matmul inside runs on these
    /// workers at this level.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// Workers in the pool.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    pub fn level(&self) -> Level {
        self.level
    }
}

/// The level of the runtime the calling thread works for, else the best this CPU has.
pub(crate) fn current_level() -> Level {
    LEVEL.with(Cell::get).unwrap_or_else(super::detect)
}
