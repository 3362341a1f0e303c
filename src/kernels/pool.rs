//! Parallel sections: how many workers the current pool has, and running a model step on a
//! worker (of the runtime the caller entered, else of rayon's global pool).

/// Threads the kernels use: the current runtime's workers, else rayon's global pool's.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `f` on a worker of the pool and waits for it. A model step wrapped in this keeps the
/// calling thread asleep, so on a machine with as many cores as threads no third thread
/// competes with the workers (idle workers spin briefly between parallel calls).
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let f = match super::runtime::on_entered(f) {
        Ok(out) => return out,
        Err(f) => f,
    };
    let mut out = None;
    rayon::scope(|_| out = Some(f()));
    out.expect("the scope ran the closure; this is a bug")
}
