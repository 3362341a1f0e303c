//! The step's team: while a model step runs ([`super::pool`]'s `awake`), its thread hands each
//! parallel call's chunks to the pool's other workers through one atomic word they spin on,
//! instead of through rayon's deques. The step's thread publishes a call (the chunk count and
//! the closure), takes chunks itself and waits until every chunk it handed out is done;
//! helpers claim chunks with one compare-and-swap each. [`for_each`], [`map`] and
//! [`for_each_item`] are the calls; outside a step (no team) they run on rayon's pool.
//!
//! Why: a decode step is some 200 parallel calls of tens of microseconds. Through rayon a call
//! of 4 chunks of 10 µs on 2 threads took 25.4 µs against the ideal 20 (the second thread
//! steals its half late and the split is fixed), through the team 22.0 (`time_the_team`): a
//! helper claims the next chunk as soon as it is free, so the finishing times differ by at
//! most one chunk.

use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// One call's closure, run once per chunk index.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// The shared state of one step's team.
pub(crate) struct Team {
    /// The call being worked on: generation (high 32 bits), chunks (next 16), the next chunk
    /// to claim (low 16). A claim is a compare-and-swap of the whole word, so a helper can
    /// only claim a chunk of the call it read.
    state: AtomicU64,
    /// The published call's closure: a pointer to a [`Job`] on the publisher's stack, valid
    /// until every chunk of the call is done.
    job: AtomicPtr<()>,
    /// Chunks of the current call finished.
    done: AtomicUsize,
    /// Whether a chunk of the current call panicked.
    panicked: AtomicBool,
}

/// Most chunks one call can have.
pub(crate) const MAX_CHUNKS: usize = u16::MAX as usize;

thread_local! {
    /// The team whose calls this thread publishes (set on the step's own thread only).
    static LEADS: Cell<*const Team> = const { Cell::new(std::ptr::null()) };
}

/// The chunks of the call a state word describes, and the next chunk to claim.
fn unpack(s: u64) -> (usize, usize) {
    (((s >> 16) & 0xFFFF) as usize, (s & 0xFFFF) as usize)
}

impl Team {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
        }
    }

    /// Runs `f` with this team as the one the calling thread publishes to.
    pub(crate) fn lead<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(*const Team);
        impl Drop for Restore {
            fn drop(&mut self) {
                LEADS.with(|l| l.set(self.0));
            }
        }
        let _restore = Restore(LEADS.with(|l| l.replace(self)));
        f()
    }

    /// Claims and runs one chunk of the current call; false when none is left to claim.
    pub(crate) fn help_once(&self) -> bool {
        let s = self.state.load(Ordering::Acquire);
        let (n, next) = unpack(s);
        if next >= n {
            return false;
        }
        if self
            .state
            .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return true; // Another claim came first: look again.
        }
        // SAFETY: the chunk claimed belongs to the call published with this generation, whose
        // job pointer was stored before the state (Release/Acquire) and stays valid until its
        // chunks, this one included, are all done.
        let job = unsafe { *self.job.load(Ordering::Acquire).cast::<Job>() };
        if catch_unwind(AssertUnwindSafe(|| job(next))).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
        self.done.fetch_add(1, Ordering::Release);
        true
    }

    /// Runs `f(i)` for every `i` in `0..n` on this thread and the helpers, returning when all
    /// are done. A panic in a chunk is raised here once every chunk has finished.
    fn run(&self, n: usize, f: Job) {
        assert!(
            n <= MAX_CHUNKS,
            "{n} chunks in one parallel call; this is a bug"
        );
        let gen = (self.state.load(Ordering::Relaxed) >> 32) + 1;
        self.job
            .store((&f as *const Job).cast_mut().cast(), Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        self.panicked.store(false, Ordering::Relaxed);
        self.state
            .store(gen << 32 | (n as u64) << 16, Ordering::Release);
        // A chunk that calls in parallel itself goes to rayon: this call is being worked on.
        LEADS.with(|l| l.set(std::ptr::null()));
        while self.help_once() {}
        LEADS.with(|l| l.set(self));
        while self.done.load(Ordering::Acquire) < n {
            std::hint::spin_loop();
        }
        if self.panicked.load(Ordering::Relaxed) {
            resume_unwind(Box::new("a chunk of a parallel call panicked"));
        }
    }
}

/// Runs `f(i)` for each `i` in `0..n`, in parallel: through the team when the calling thread
/// leads one (a model step), else on rayon's pool. Returns when every call is done.
pub(crate) fn for_each(n: usize, f: impl Fn(usize) + Sync + Send) {
    let team = LEADS.with(Cell::get);
    if team.is_null() || n > MAX_CHUNKS {
        use rayon::prelude::*;
        return (0..n).into_par_iter().for_each(f);
    }
    // SAFETY: a team outlives the `lead` call that set it, and `lead` restores the previous
    // pointer when it returns.
    unsafe { &*team }.run(n, &f);
}

/// `f(item)` for each of `items`, in parallel as [`for_each`] runs it.
pub(crate) fn for_each_item<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync + Send) {
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    for_each(slots.len(), |i| {
        let item = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(item) = item {
            f(item);
        }
    });
}

/// `[f(0), f(1), .. f(n - 1)]`, computed in parallel as [`for_each`] runs it.
pub(crate) fn map<R: Send + Sync>(n: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    let slots: Vec<OnceLock<R>> = (0..n).map(|_| OnceLock::new()).collect();
    for_each(n, |i| {
        let _ = slots[i].set(f(i));
    });
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .expect("a parallel call left a result unset; this is a bug")
        })
        .collect()
}

#[cfg(test)]
#[path = "team_tests.rs"]
mod tests;
