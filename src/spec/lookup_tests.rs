//! Unit tests of `crate::spec::lookup`.

use super::*;

#[test]
fn proposes_what_followed_the_longest_most_recent_match() {
    // "1 2 3" occurred before; what followed it was "4 5".
    let t = [1, 2, 3, 4, 5, 9, 1, 2, 3];
    assert_eq!(lookup(&t, 1, 3, 2), vec![4, 5]);
    assert_eq!(lookup(&t, 1, 3, 10), vec![4, 5, 9, 1, 2, 3]);
}

#[test]
fn longer_matches_win_over_more_recent_short_ones() {
    // The bigram "7 8" matches at 0 (followed by 1); the unigram "8" also at 4 (followed by 2).
    let t = [7, 8, 1, 0, 8, 2, 7, 8];
    assert_eq!(lookup(&t, 1, 2, 1), vec![1]);
    assert_eq!(lookup(&t, 1, 1, 1), vec![2]);
}

#[test]
fn nothing_matches_nothing_proposed() {
    assert!(lookup(&[1, 2, 3, 4], 1, 3, 4).is_empty());
    assert!(lookup(&[1], 1, 3, 4).is_empty());
    assert!(lookup(&[1, 1], 2, 3, 4).is_empty());
    assert!(lookup(&[1, 2, 1], 1, 3, 0).is_empty());
}
