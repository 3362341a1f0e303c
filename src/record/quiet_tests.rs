//! Unit tests of `crate::record::quiet`.

use super::*;
use crate::measure::sentinel::judge;

/// A measured round whose sentinel saw other processes use `other` seconds of CPU over
/// `wall` seconds.
fn round(wall: f64, other: f64) -> RoundRecord {
    stolen(wall, other, 0.0)
}

/// [`round`] with `steal` seconds taken by the hypervisor.
fn stolen(wall: f64, other: f64, steal: f64) -> RoundRecord {
    let (disturbed, why) = judge(wall, Some(other), Some(steal));
    RoundRecord {
        wall_s: wall,
        sentinel: Some(RoundSentinel {
            wall_s: wall,
            other_cpu_s: Some(other),
            steal_s: Some(steal),
            own_cpu_s: Some(wall),
            cores_busy: Some(1.0),
            busy_threads: Some(1),
            voluntary_switches: None,
            involuntary_switches: None,
            minor_faults: None,
            major_faults: None,
            loadavg_1m: Some(1.0),
            governor: None,
            freq_mhz: None,
            thermal_c: None,
            disturbed,
            why,
        }),
        ..RoundRecord::default()
    }
}

#[test]
fn a_quiet_level_is_not_flagged_and_a_busy_one_is() {
    let quiet = QuietFigures::of(&[round(1.0, 0.01), round(1.0, 0.1), round(1.0, 0.0)]);
    assert_eq!(quiet.disturbed_rounds, Some(0));
    assert!(!quiet.mostly_disturbed());
    assert_eq!(quiet.disturbed_line(), None);
    let busy = QuietFigures::of(&[round(1.0, 1.3), round(2.0, 2.6), round(1.0, 0.0)]);
    assert_eq!(busy.disturbed_rounds, Some(2));
    assert!(busy.mostly_disturbed(), "2 of 3 is most");
    let line = busy.disturbed_line().unwrap();
    assert!(line.starts_with("2 of 3 rounds disturbed"), "{line}");
    assert!(line.contains("1.30 cores"), "{line}");
    let half = QuietFigures::of(&[round(1.0, 1.0), round(1.0, 0.0)]);
    assert!(!half.mostly_disturbed(), "1 of 2 is not most");
}

#[test]
fn rounds_without_a_reading_say_nothing() {
    let short = QuietFigures::of(&[round(0.01, 0.02), round(0.2, 1.0)]);
    assert_eq!(short, QuietFigures::default(), "too short to judge");
    let old = QuietFigures::of(&[RoundRecord::default()]);
    assert_eq!(old, QuietFigures::default());
    assert!(!old.mostly_disturbed());
}

#[test]
fn rounds_disturbed_by_steal_name_the_steal() {
    let rounds = [
        stolen(1.0, 0.0, 0.4),
        stolen(1.0, 0.0, 0.41),
        round(1.0, 0.0),
    ];
    let q = QuietFigures::of(&rounds);
    assert_eq!(q.disturbed_rounds, Some(2));
    let line = q.line("rounds").unwrap();
    assert!(line.contains("0.00 cores busy, steal 40 %"), "{line}");
    assert_eq!(
        causes(Some(0.5), Some(0.001)),
        "other processes 0.50 cores busy"
    );
    assert_eq!(causes(None, None), "other processes n/a cores busy");
}
