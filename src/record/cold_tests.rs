//! Unit tests of `crate::record::cold`.

use super::*;

fn res(a: u64, b: u64) -> Residency {
    Residency {
        resident_pages: a,
        total_pages: b,
    }
}

fn start(index: usize, kind: StartKind, counted: Counted, first: f64) -> StartRecord {
    StartRecord {
        index,
        kind,
        counted,
        residency: Some(res(0, 10)),
        eviction: None,
        failure: None,
        clocks: (counted != Counted::Failed).then_some(StartClocks {
            main_s: 0.001,
            loaded_s: first / 2.0,
            warm_s: first * 0.8,
            first_token_s: first,
            last_token_s: first + 1.0,
        }),
        exit_s: first + 1.1,
        read_bytes: Some(100),
        peak_rss_bytes: None,
        prompt_tokens: 3,
        output_tokens: 4,
        output: "x".into(),
        stderr_tail: String::new(),
        load_split: None,
        sentinel: None,
    }
}

#[test]
fn eviction_that_left_pages_is_not_cold() {
    let ev = |after| Eviction {
        method: "posix_fadvise(DONTNEED)".into(),
        before: Some(res(10, 10)),
        after,
        error: None,
        why_not: None,
    };
    assert_eq!(
        counted(StartKind::Cold, Some(&ev(Some(res(0, 10)))), false),
        Counted::Cold
    );
    assert_eq!(
        counted(StartKind::Cold, Some(&ev(Some(res(10, 10)))), false),
        Counted::NotCold
    );
    assert_eq!(
        counted(StartKind::Cold, Some(&ev(None)), false),
        Counted::NotCold,
        "unreadable residency is not proof of a cold start"
    );
    assert_eq!(counted(StartKind::Cold, None, true), Counted::Failed);
    assert_eq!(counted(StartKind::Warm, None, false), Counted::Warm);
}

#[test]
fn groups_are_apart_and_failures_counted() {
    let rec = ColdRecord {
        settings: ColdSettings::default(),
        starts: vec![
            start(0, StartKind::Cold, Counted::Cold, 3.0),
            start(1, StartKind::Warm, Counted::Warm, 1.0),
            start(2, StartKind::Cold, Counted::Cold, 5.0),
            start(3, StartKind::Warm, Counted::Warm, 2.0),
            start(4, StartKind::Cold, Counted::Failed, 9.0),
            start(5, StartKind::Warm, Counted::Warm, 1.5),
        ],
    };
    let s = summarize(&rec);
    assert_eq!((s.cold.starts, s.warm.starts, s.failed), (2, 3, 1));
    let first = |g: &GroupSummary| g.clocks[3].clone();
    assert_eq!(first(&s.cold).median_s, Some(4.0));
    assert_eq!(first(&s.cold).slowest_s, Some(5.0));
    assert_eq!(first(&s.warm).median_s, Some(1.5));
    assert_eq!(s.warm.clocks[5].slowest_s, Some(3.1));
    assert!(s.outputs_identical);
}
