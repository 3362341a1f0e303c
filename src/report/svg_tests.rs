//! Unit tests of `crate::report::svg`.

use super::*;

#[test]
fn escapes_markup_and_quotes() {
    assert_eq!(esc("<a&b>\"'"), "&lt;a&amp;b&gt;&quot;&#39;");
    assert_eq!(esc("x\u{1}y"), "x y");
}

#[test]
fn numbers_are_always_finite() {
    assert_eq!(num(f64::NAN), "0");
    assert_eq!(num(f64::INFINITY), "0");
    assert_eq!(num(-0.001), "0");
    assert_eq!(num(12.5), "12.5");
    assert_eq!(num(3.0), "3");
}

#[test]
fn scale_survives_an_empty_domain() {
    let s = Scale::new(2.0, 2.0, 0.0, 100.0);
    assert_eq!(s.at(2.0), 0.0);
    assert_eq!(s.at(3.0), 100.0);
    assert_eq!(Scale::new(f64::NAN, f64::NAN, 0.0, 10.0).at(f64::NAN), 0.0);
}

#[test]
fn ticks_are_round_and_cover_the_data() {
    let (t, d) = nice_ticks(0.0, 12.9, 10);
    assert_eq!(t, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]);
    assert_eq!(nice_ticks(0.0, 12.9, 6).0, vec![0.0, 5.0, 10.0, 15.0]);
    assert_eq!(d, 0);
    let (t, d) = nice_ticks(0.38, 0.46, 4);
    assert!(t[0] <= 0.38 && *t.last().unwrap() >= 0.46);
    assert_eq!(d, 2);
    let (t, _) = nice_ticks(0.0, 0.0, 5);
    assert!(t.len() >= 2 && t.iter().all(|v| v.is_finite()));
}

#[test]
fn crafted_spans_give_finite_ticks_and_short_labels() {
    for (lo, hi) in [
        (0.0, 5e-324),
        (1.0, 1.0 + 1e-15),
        (f64::NAN, f64::INFINITY),
        (-1e300, 1e300),
    ] {
        let (ticks, decimals) = nice_ticks(lo, hi, 5);
        assert!(
            !ticks.is_empty() && ticks.iter().all(|t| t.is_finite()),
            "{lo} {hi}: {ticks:?}"
        );
        assert!(decimals <= 9, "{lo} {hi}: {decimals}");
        assert!(ticks.len() < 100, "{lo} {hi}: {} ticks", ticks.len());
    }
}
