//! Unit tests of `crate::spec::verify`.

use super::*;

#[test]
fn accepts_the_matching_prefix_then_the_target_token() {
    assert_eq!(accept_greedy(&[5, 6, 7], &[5, 6, 9, 1]), vec![5, 6, 9]);
    assert_eq!(accept_greedy(&[5, 6, 7], &[5, 6, 7, 8]), vec![5, 6, 7, 8]);
    assert_eq!(accept_greedy(&[5, 6, 7], &[4, 6, 7, 8]), vec![4]);
    assert_eq!(accept_greedy(&[], &[3]), vec![3]);
}

#[test]
fn a_later_match_after_a_mismatch_is_not_accepted() {
    // Position 2 matches by chance, but it followed a rejected token.
    assert_eq!(accept_greedy(&[1, 2, 3], &[1, 9, 3, 4]), vec![1, 9]);
}
