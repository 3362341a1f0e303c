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
