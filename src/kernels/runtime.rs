//! The compute runtime a model runs under: a rayon pool of its own with a fixed number of
//! workers, whose matmuls run at one kernel level. The bench builds one per configuration and
//! enters it on the thread that drives the engine ([`Runtime::enter`]): each model step then runs
//! on its workers while the driving thread sleeps, as with a global pool. An `ab` builds one per
//! arm, so its two arms never share a thread count or a level and nothing process-wide is flipped
//! between rounds. A model step on a thread that entered no runtime (a test calling the model
//! directly) runs on rayon's global pool at the best level this CPU has.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use super::Level;

thread_local! {
    /// The level of the runtime this thread is a worker of (none outside every runtime).
    static LEVEL: Cell<Option<Level>> = const { Cell::new(None) };
    /// The pool of the runtime this thread entered, where its model steps run.
    static ENTERED: RefCell<Option<Arc<rayon::ThreadPool>>> = const { RefCell::new(None) };
}

/// Stack of every worker, bytes (what Linux gives a main thread).
const WORKER_STACK_BYTES: usize = 8 << 20;

/// A thread pool and the kernel level its workers run at.
pub struct Runtime {
    pool: Arc<rayon::ThreadPool>,
    level: Level,
}

/// While alive, model steps on the thread that entered run on the runtime's workers.
pub struct Entered {
    before: Option<Arc<rayon::ThreadPool>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.before.take();
        ENTERED.with(|e| *e.borrow_mut() = before);
    }
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
        Ok(Self {
            pool: Arc::new(pool),
            level,
        })
    }

    /// Makes this runtime the one the calling thread's model steps run on, until the guard is
    /// dropped (the thread's previous runtime, if any, comes back then).
    pub fn enter(&self) -> Entered {
        let before = ENTERED.with(|e| e.borrow_mut().replace(self.pool.clone()));
        Entered { before }
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

/// Runs `f` on a worker of the runtime the calling thread entered, if any.
pub(crate) fn on_entered<R: Send>(f: impl FnOnce() -> R + Send) -> Result<R, impl FnOnce() -> R> {
    match ENTERED.with(|e| e.borrow().clone()) {
        Some(pool) => Ok(pool.install(f)),
        None => Err(f),
    }
}

/// The level of the runtime the calling thread works for, else the best this CPU has.
pub(crate) fn current_level() -> Level {
    LEVEL.with(Cell::get).unwrap_or_else(super::detect)
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
