use super::*;
use crate::kernels::{detect, pool};

#[test]
fn model_steps_of_a_thread_that_entered_run_on_that_runtime() {
    let scalar = Runtime::new(1, Level::Scalar).unwrap();
    let two = Runtime::new(2, detect()).unwrap();
    let step = || pool::install(|| (crate::kernels::level(), pool::threads()));
    {
        let _a = scalar.enter();
        assert_eq!(step(), (Level::Scalar, 1));
        {
            let _b = two.enter();
            assert_eq!(step(), (detect(), 2));
        }
        // The runtime entered before comes back.
        assert_eq!(step(), (Level::Scalar, 1));
    }
    // Entered nowhere: rayon's global pool at the best level.
    assert_eq!(step().0, detect());
    // The calling thread itself keeps no level.
    assert_eq!(crate::kernels::level(), detect());
}

#[test]
fn a_steps_parallel_work_runs_on_the_other_workers_too() {
    use rayon::prelude::*;
    let rt = Runtime::new(3, detect()).unwrap();
    let _in = rt.enter();
    let seen = pool::install(|| {
        let mut seen: Vec<usize> = (0..48)
            .into_par_iter()
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                rayon::current_thread_index().unwrap()
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen
    });
    assert!(seen.len() >= 2, "only workers {seen:?} took part");
    // Between steps the helpers are released: a second step runs as well.
    assert_eq!(
        pool::install(|| (0..100u64).into_par_iter().sum::<u64>()),
        4950
    );
}

#[test]
fn a_panicking_step_releases_the_helpers() {
    let rt = Runtime::new(2, detect()).unwrap();
    let _in = rt.enter();
    let step = std::panic::catch_unwind(|| pool::install(|| panic!("step failed")));
    assert!(step.is_err());
    assert_eq!(pool::install(|| 7), 7);
}
