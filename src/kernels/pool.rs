//! The worker threads: one rayon global pool, built once, shared by our kernels and by candle
//! (whose CPU ops read `RAYON_NUM_THREADS` / `CANDLE_NUM_THREADS`, set here to the same count).

use std::sync::Mutex;

static INIT: Mutex<Option<usize>> = Mutex::new(None);

/// Builds the pool with `n` threads (`None`: candle's default, the physical cores it may use).
/// Call before any model work; calling again with the same count is fine. Returns the count.
pub fn init_threads(n: Option<usize>) -> Result<usize, String> {
    let mut done = INIT.lock().unwrap_or_else(|e| e.into_inner());
    let want = n.unwrap_or_else(candle_core::utils::get_num_threads);
    if want == 0 {
        return Err("--threads 0: need at least one thread".into());
    }
    if let Some(have) = *done {
        return if have == want {
            Ok(have)
        } else {
            Err(format!(
                "--threads {want}: the thread pool already runs {have} threads; it is built once per process"
            ))
        };
    }
    std::env::set_var("RAYON_NUM_THREADS", want.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", want.to_string());
    if rayon::ThreadPoolBuilder::new()
        .num_threads(want)
        .thread_name(|i| format!("tokfire-{i}"))
        .build_global()
        .is_err()
    {
        let have = rayon::current_num_threads();
        if have != want {
            return Err(format!(
                "--threads {want}: the thread pool was started with {have} threads before --threads was applied; this is a bug"
            ));
        }
    }
    *done = Some(want);
    Ok(want)
}

/// Threads the kernels use (the rayon global pool's size; builds the default pool if needed).
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
    let mut out = None;
    rayon::scope(|_| out = Some(f()));
    out.expect("the scope ran the closure; this is a bug")
}
