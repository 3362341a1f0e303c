//! Unit tests of `crate::spec::synthetic`: the drafter's kept positions follow the asked rates
//! (within a binomial tolerance) and it proposes the reference (the engine drafting with it:
//! `engine/batching/synthetic_tests.rs`).

use super::*;

/// One long transcript: a prompt of 8 tokens and a "greedy output" after it.
fn long_reference() -> Reference {
    Reference {
        transcripts: vec![(0..6000u32).map(|i| (i * 7 + 3) % 250 + 2).collect()],
    }
}

/// How many leading tokens of `draft` agree with the reference at `at`.
fn kept(r: &Reference, at: usize, draft: &[u32]) -> usize {
    let ahead = &r.transcripts[0][at..];
    draft.iter().zip(ahead).take_while(|(a, b)| a == b).count()
}

/// Per draft index: (drafts that reached it, drafts that kept it).
fn tally(rates: &[f64], k: usize, seed: u64) -> Vec<(u64, u64)> {
    let r = long_reference();
    let mut d = Synthetic::new(rates, seed, &r);
    let mut counts = vec![(0u64, 0u64); k];
    for at in 8..5000 {
        let input = DraftInput {
            id: 1,
            tokens: &r.transcripts[0][..at],
            k,
        };
        let draft = d.propose(&[input]).expect("propose").remove(0);
        assert_eq!(draft.len(), k, "always k tokens, as a real drafter's");
        let n = kept(&r, at, &draft);
        for (i, c) in counts.iter_mut().enumerate().take((n + 1).min(k)) {
            c.0 += 1;
            c.1 += u64::from(i < n);
        }
    }
    counts
}

/// `kept / reached` lies within 4.5 standard deviations of `p`.
fn near(p: f64, (reached, kept): (u64, u64)) {
    let n = reached as f64;
    let sd = (p * (1.0 - p) / n).sqrt().max(1e-9);
    let got = kept as f64 / n;
    assert!(
        (got - p).abs() <= 4.5 * sd + 1e-12,
        "kept {got:.4} of {n} drafts that reached the position; asked {p} (sd {sd:.4})"
    );
}

#[test]
fn each_position_is_kept_at_its_rate_given_the_ones_before() {
    let c = tally(&[0.8], 4, 42);
    for pos in c {
        near(0.8, pos);
    }
    // A list: position 1 at 0.9, position 2 at 0.5, and the last rate repeats.
    let c = tally(&[0.9, 0.5], 3, 7);
    near(0.9, c[0]);
    near(0.5, c[1]);
    near(0.5, c[2]);
}

#[test]
fn rate_one_proposes_the_reference_and_rate_zero_spoils_the_first_token() {
    let r = long_reference();
    let input = DraftInput {
        id: 3,
        tokens: &r.transcripts[0][..20],
        k: 4,
    };
    let all = Synthetic::new(&[1.0], 1, &r).propose(&[input]).unwrap();
    assert_eq!(all[0], r.transcripts[0][20..24]);
    let none = Synthetic::new(&[0.0], 1, &r).propose(&[input]).unwrap();
    assert_ne!(none[0][0], r.transcripts[0][20]);
    assert_eq!(
        none[0][1..],
        r.transcripts[0][21..24],
        "filler keeps k tokens"
    );
}

#[test]
fn coins_are_seeded_and_a_drifted_request_gets_no_draft() {
    assert_eq!(
        tally(&[0.6], 4, 9),
        tally(&[0.6], 4, 9),
        "same seed, same coins"
    );
    assert_ne!(
        tally(&[0.6], 4, 9),
        tally(&[0.6], 4, 10),
        "another seed, other coins"
    );
    let r = long_reference();
    let mut d = Synthetic::new(&[0.8], 1, &r);
    let mut drifted = r.transcripts[0][..30].to_vec();
    drifted[29] = 1;
    let input = DraftInput {
        id: 5,
        tokens: &drifted,
        k: 4,
    };
    assert_eq!(d.propose(&[input]).unwrap(), vec![Vec::<u32>::new()]);
}

#[test]
fn expected_acceptance_is_the_mean_reach_over_k_positions() {
    let e = expected_acceptance(&[0.8], 4).unwrap();
    assert!((e - (0.8 + 0.64 + 0.512 + 0.4096) / 4.0).abs() < 1e-12);
    let e = expected_acceptance(&[1.0, 0.5], 3).unwrap();
    assert!((e - (1.0 + 0.5 + 0.25) / 3.0).abs() < 1e-12);
    assert_eq!(expected_acceptance(&[], 3), None);
}
