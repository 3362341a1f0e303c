use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::super::{detect, pool, Runtime};
use super::*;

/// Runs `f` as a model step does: on a runtime of `threads` workers, inside `pool::install`.
fn in_step<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    let rt = Runtime::new(threads, detect()).expect("a runtime");
    let _in = rt.enter();
    pool::install(f)
}

#[test]
fn every_chunk_runs_once_in_and_out_of_a_step() {
    let check = || {
        for n in [0, 1, 2, 3, 7, 64, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            for_each(n, |i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "n = {n}"
            );
        }
    };
    check();
    in_step(2, check);
    in_step(3, check);
}

#[test]
fn map_keeps_the_order_and_items_move_once() {
    let squares = in_step(2, || map(500, |i| i * i));
    assert_eq!(squares, (0..500).map(|i| i * i).collect::<Vec<_>>());
    let items: Vec<Vec<usize>> = (0..100).map(|i| vec![i; 3]).collect();
    let sum = AtomicUsize::new(0);
    in_step(2, || {
        for_each_item(items, |v| {
            sum.fetch_add(v.iter().sum(), Ordering::Relaxed);
        })
    });
    assert_eq!(sum.into_inner(), 3 * (0..100).sum::<usize>());
}

#[test]
fn calls_inside_a_chunk_and_many_calls_in_a_row_work() {
    let total = in_step(2, || {
        let mut total = 0;
        for round in 0..2000 {
            let inner = map(4, |i| {
                // A parallel call inside a chunk goes to rayon, not to the busy team.
                let nested: usize = map(3, |j| j + i).into_iter().sum();
                let rayon: usize = (0..5usize).into_par_iter().sum();
                nested + rayon + round
            });
            total += inner.into_iter().sum::<usize>();
        }
        total
    });
    let per_round = |r: usize| (0..4).map(|i| 3 + 3 * i + 10 + r).sum::<usize>();
    assert_eq!(total, (0..2000).map(per_round).sum::<usize>());
}

#[test]
fn a_panicking_chunk_is_raised_after_every_chunk_finished() {
    for bad in [0, 3, 7] {
        let finished = AtomicUsize::new(0);
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_step(2, || {
                for_each(8, |i| {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    if i == bad {
                        panic!("chunk {i} failed");
                    }
                    finished.fetch_add(1, Ordering::Relaxed);
                })
            })
        }));
        assert!(step.is_err(), "chunk {bad}'s panic was not raised");
        assert_eq!(finished.load(Ordering::Relaxed), 7, "chunk {bad}");
        // The runtime works on after the panic.
        assert_eq!(in_step(2, || map(4, |i| i)), vec![0, 1, 2, 3]);
    }
}

fn spin(us: u64) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

/// A timing aid, not a test: `cargo test --release --lib -- --ignored time_the_team
/// --nocapture` prints the time of a parallel call of 4 chunks on 2 workers inside a step,
/// through rayon's `par_iter` and through the team, per call (the ideal is 2 chunks' time).
#[test]
#[ignore]
fn time_the_team() {
    for chunk_us in [0u64, 5, 10, 20] {
        let calls = 5000;
        let (rayon, team) = in_step(2, || {
            let start = std::time::Instant::now();
            (0..calls).for_each(|_| (0..4usize).into_par_iter().for_each(|_| spin(chunk_us)));
            let rayon = start.elapsed();
            let start = std::time::Instant::now();
            (0..calls).for_each(|_| for_each(4, |_| spin(chunk_us)));
            (rayon, start.elapsed())
        });
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / calls as f64;
        println!(
            "4 chunks of {chunk_us} µs: rayon {:.2} µs, team {:.2} µs a call",
            per(rayon),
            per(team)
        );
    }
}
