//! Unit tests of `crate::record::spec`.

use super::*;

#[test]
fn figures_from_counters() {
    let mut s = SpecSample {
        verifies: 4,
        proposed: 10,
        accepted: 6,
        proposed_at: vec![4, 3, 3],
        accepted_at: vec![3, 2, 1],
        draft_s: 0.002,
        verify_forward_s: 0.1,
        verify_steps: 4,
        ..Default::default()
    };
    s.add(&SpecSample::default());
    let f = SpecFigures::of(&s, 20);
    assert_eq!(f.spec_acceptance, Some(0.6));
    assert_eq!(f.spec_accepted_len, Some(2.5));
    assert_eq!(
        f.spec_acceptance_by_position,
        vec![0.75, 2.0 / 3.0, 1.0 / 3.0]
    );
    assert_eq!(f.spec_verify_ms_per_token, Some(5.0));
    let none = SpecFigures::of(&SpecSample::default(), 20);
    assert_eq!(none.spec_acceptance, None);
    assert_eq!(none.spec_draft_ms_per_token, None);
}

#[test]
fn per_request_acceptance_weighs_every_request_alike() {
    // One long request accepting 90 % and two short ones accepting 20 % and 50 %: the
    // token-weighted rate follows the long one, the per-request median does not.
    let r = |verifies, proposed, accepted| RequestSpec {
        verifies,
        proposed,
        accepted,
    };
    let mut s = SpecSample {
        verifies: 52,
        proposed: 130,
        accepted: 97,
        per_request: vec![r(50, 100, 90), r(1, 10, 2)],
        accepted_hist: vec![1, 0, 1],
        ..Default::default()
    };
    s.add(&SpecSample {
        per_request: vec![r(1, 20, 10)],
        accepted_hist: vec![0, 1, 0, 2],
        ..Default::default()
    });
    let f = SpecFigures::of(&s, 100);
    assert!((f.spec_acceptance.unwrap() - 97.0 / 130.0).abs() < 1e-12);
    assert_eq!(f.spec_acceptance_request_median, Some(0.5));
    assert_eq!(f.spec_acceptance_request_lowest, Some(0.2));
    assert_eq!(f.spec_accepted_len_request_median, Some(3.0));
    assert_eq!(f.spec_accepted_hist, vec![1, 1, 1, 2]);
}
