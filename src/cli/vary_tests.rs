//! Unit tests of `crate::cli::vary`.

use super::*;

#[test]
fn every_excluded_name_is_a_flag_of_ab() {
    let cmd = AbArgs::augment_args(Command::new("ab"));
    for (name, _) in NOT_VARIED {
        assert!(
            cmd.get_arguments().any(|a| a.get_long() == Some(name)),
            "NOT_VARIED names --{name}, which ab does not have"
        );
    }
}

#[test]
fn the_keys_are_the_value_flags_and_include_every_earlier_key() {
    let names: Vec<String> = keys().iter().filter_map(long).collect();
    for k in [
        "threads",
        "kernels",
        "max-batch-tokens",
        "prefill-chunk",
        "max-seqs",
        "kv-budget",
        "max-tokens",
        "dtype",
        "model",
        "schedule",
        "spec",
        "spec-k",
        "prefix-cache",
        "load",
        "temperature",
        "device",
    ] {
        assert!(names.iter().any(|n| n == k), "{k} missing from {names:?}");
    }
    for flag in [
        "exit-code",
        "profile",
        "aa",
        "no-baseline",
        "rounds",
        "vary",
    ] {
        assert!(!names.iter().any(|n| n == flag), "{flag} is not a key");
    }
}

#[test]
fn a_refused_key_says_why_and_an_unknown_one_lists_the_keys() {
    assert!(key("rounds").unwrap_err().contains("same rounds"));
    let e = key("colour").unwrap_err();
    assert!(
        e.contains("unknown key 'colour'") && e.contains("prefill-chunk"),
        "{e}"
    );
    assert_eq!(key("spec-k").unwrap().get_long(), Some("spec-k"));
}

#[test]
fn the_help_fits_100_columns_and_shows_possible_values() {
    let h = help();
    assert!(h.lines().all(|l| l.chars().count() <= 100), "{h}");
    let at = h.find("\n  dtype ").expect("dtype is a key");
    let entry = &h[at..at + 200];
    assert!(entry.contains("[values: q, f32, f16, bf16]"), "{entry}");
}
