//! Unit tests of `crate::report`.

#[test]
fn no_negative_zero() {
    assert_eq!(super::fixed(-0.0, 1), "0.0");
    assert_eq!(super::fixed(-0.00001, 3), "0.000");
    assert_eq!(super::fixed(-0.5, 0), "0", "rounds to zero: no sign");
    assert_eq!(super::fixed(-0.06, 1), "-0.1");
    assert_eq!(super::percent(Some(-0.0), 1), "0.0 %");
    assert_eq!(super::percent(None, 1), "n/a");
}

use super::*;
use std::time::Duration;

#[test]
fn units() {
    assert_eq!(bytes(98_362_432), "98.4 MB");
    assert_eq!(bytes(512), "512 B");
    assert_eq!(duration(Duration::from_micros(1500)), "1.5 ms");
    assert_eq!(duration(Duration::from_millis(2500)), "2.50 s");
}

#[test]
fn escape_sequences_from_a_record_never_reach_the_terminal() {
    let s = "model \u{1b}]0;pwned\u{7}\u{1b}[2J name\u{9b}x\r\nnext\tline";
    let safe = super::terminal_safe(s);
    assert!(
        !safe
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{safe:?}"
    );
    assert!(safe.contains("\nnext\tline"));
    assert!(matches!(
        super::terminal_safe("plain\n"),
        std::borrow::Cow::Borrowed(_)
    ));
}
