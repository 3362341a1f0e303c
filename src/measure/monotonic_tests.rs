//! Unit tests of `crate::measure::monotonic`.

use super::*;

#[cfg(unix)]
#[test]
fn advances_like_instant() {
    let a = now_ns();
    let i = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let b = now_ns();
    let s = seconds_between(a, b).expect("monotonic");
    assert!(s >= 0.005 && (s - i.elapsed().as_secs_f64()).abs() < 0.005);
    assert_eq!(seconds_between(b, a), None);
}
