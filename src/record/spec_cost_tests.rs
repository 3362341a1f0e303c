//! Unit tests of `crate::record::spec_cost`.

use super::*;

#[test]
fn expected_tokens_runs_from_one_to_k_plus_one() {
    assert_eq!(expected_tokens(0.0, 4), 1.0);
    assert_eq!(expected_tokens(1.0, 4), 5.0);
    // α = 0.5, k = 2: 1 + 0.5 + 0.25.
    assert!((expected_tokens(0.5, 2) - 1.75).abs() < 1e-12);
}

#[test]
fn break_even_solves_expected_tokens_for_the_cost_ratio() {
    // A step that costs 1.75 plain steps pays above α = 0.5 with k = 2.
    let a = break_even(1.75, 2).unwrap();
    assert!((a - 0.5).abs() < 1e-9, "{a}");
    assert_eq!(
        break_even(0.9, 3),
        Some(0.0),
        "cheaper than a plain step: always pays"
    );
    assert_eq!(
        break_even(3.0, 2),
        None,
        "costs k + 1 plain steps: never pays"
    );
    assert_eq!(break_even(1.2, 0), None, "k = 0 is the baseline itself");
}

#[test]
fn the_cost_ratio_is_against_the_plain_step_at_the_same_jobs() {
    let cell = |jobs, k, t: f64| VerifyCell {
        jobs,
        k,
        step_s: vec![t, t * 2.0, t * 0.5],
        proposed: 0,
        accepted: 0,
        sentinel: None,
    };
    let r = SpecCostRecord {
        context: 64,
        steps: 3,
        warmup: 1,
        seed: 0,
        jobs: vec![1, 2],
        ks: vec![0, 2],
        cells: vec![
            cell(1, 0, 0.010),
            cell(1, 2, 0.015),
            cell(2, 0, 0.020),
            cell(2, 2, 0.040),
        ],
    };
    assert!((r.cost_ratio(&r.cells[1]).unwrap() - 1.5).abs() < 1e-12);
    assert!((r.cost_ratio(&r.cells[3]).unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(r.cells[0].range_s(), Some((0.005, 0.020)));
    let no_plain = SpecCostRecord {
        cells: vec![cell(3, 2, 0.05)],
        ..r
    };
    assert_eq!(no_plain.cost_ratio(&no_plain.cells[0]), None);
}
