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
