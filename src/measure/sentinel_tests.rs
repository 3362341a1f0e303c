//! Unit tests of `crate::measure::sentinel`.

use super::*;

#[test]
fn parses_proc_lines() {
    let stat = "cpu  100 5 50 1000 7 3 2 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
    assert_eq!(parse_stat(stat), Some((160, 40)));
    let task = "1234 (tok fire) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 3";
    assert_eq!(parse_task_ticks(task), Some(300));
    assert_eq!(parse_faults(task), Some((7, 9)));
    let status = "voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
    assert_eq!(switches_of(status), Some((12, 3)));
}

#[test]
fn flags_other_work_and_steal() {
    assert!(!judge(10.0, Some(1.0), Some(0.0)).0);
    assert!(!judge(0.1, Some(1.0), Some(0.0)).0, "too short to judge");
    let (d, why) = judge(10.0, Some(5.0), Some(1.0));
    assert!(d);
    let why = why.unwrap();
    assert!(
        why.contains("0.50 cores") && why.contains("steal 10 %"),
        "{why}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn sees_this_process_burn_cpu() {
    // Spin until this thread has used 300 ms of CPU, however loaded the machine is.
    fn thread_cpu_s() -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid pointer to a timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }
    let a = Snapshot::take();
    let start = thread_cpu_s();
    let mut x = 0u64;
    while thread_cpu_s() - start < 0.3 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let s = a.until(&Snapshot::take());
    let own = s.own_cpu_s.expect("linux has /proc/self/task");
    assert!(own >= 0.25, "{s:?}");
    assert!(
        s.cores_busy.unwrap() > 0.0 && s.busy_threads.unwrap() >= 1,
        "{s:?}"
    );
}
