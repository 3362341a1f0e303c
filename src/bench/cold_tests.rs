//! Unit tests of `crate::bench::cold`.

use super::*;

#[cfg(unix)]
#[test]
fn a_killed_or_crashing_child_is_described() {
    let mut c = Command::new("sh");
    c.args(["-c", "kill -9 $$"]);
    let e = run_child(c, Duration::from_secs(10), None).expect("sh runs");
    let status = e.status.expect("status");
    assert_eq!(describe_exit(status, ""), "killed by signal 9 (SIGKILL)");
    let mut c = Command::new("sh");
    c.args(["-c", "echo 'Error: no model' >&2; exit 3"]);
    let e = run_child(c, Duration::from_secs(10), None).expect("sh runs");
    let why = judge(&e, Duration::from_secs(10)).expect_err("exit 3 fails");
    assert_eq!(why, "exited with status 3: Error: no model");
}

#[cfg(unix)]
#[test]
fn a_hung_child_is_killed_at_the_timeout() {
    let mut c = Command::new("sleep");
    c.arg("30");
    let t = Instant::now();
    let e = run_child(c, Duration::from_millis(100), None).expect("sleep runs");
    assert!(e.timed_out && t.elapsed() < Duration::from_secs(10));
    let why = judge(&e, Duration::from_millis(100)).expect_err("hung");
    assert!(
        why.starts_with("hung: still running after --timeout 0.1 s"),
        "{why}"
    );
}

#[cfg(unix)]
#[test]
fn a_stop_request_kills_the_running_child() {
    let stop = AtomicUsize::new(0);
    let t = Instant::now();
    let e = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            stop.store(libc::SIGINT as usize, Ordering::Relaxed);
        });
        let mut c = Command::new("sleep");
        c.arg("30");
        run_child(c, Duration::from_secs(60), Some(&stop)).expect("sleep runs")
    });
    assert!(e.interrupted && !e.timed_out, "stopped, not timed out");
    assert!(t.elapsed() < Duration::from_secs(10), "killed at once");
    let status = e.status.expect("reaped");
    assert_eq!(describe_exit(status, ""), "killed by signal 9 (SIGKILL)");
}

#[test]
fn tails_cut_at_char_boundaries() {
    assert_eq!(tail("héllo", 4), "llo");
    assert_eq!(tail("ab", 10), "ab");
}
