//! Unit tests of `crate::config::spec`.

use super::*;

#[test]
fn a_value_after_a_method_that_takes_none_is_refused_not_dropped() {
    for v in ["lookup:3", "lookup:", "none:x", "mtp:2"] {
        let err = SpecMethod::parse(v).unwrap_err().to_string();
        assert!(err.contains("takes no value"), "{v}: {err}");
    }
    assert_eq!(SpecMethod::parse("lookup").unwrap(), SpecMethod::Lookup);
    assert_eq!(SpecMethod::parse(" mtp ").unwrap(), SpecMethod::Mtp);
    assert!(SpecMethod::parse("layerskip:3").is_ok());
}

#[test]
fn synthetic_takes_rates_in_zero_to_one_and_round_trips_its_label() {
    let m = SpecMethod::parse("synthetic:0.9, 0.7").unwrap();
    assert_eq!(
        m,
        SpecMethod::Synthetic {
            rates: vec![0.9, 0.7]
        }
    );
    assert_eq!(SpecMethod::parse(&m.label()).unwrap(), m);
    let long = vec!["0.5"; MAX_SYNTHETIC_RATES + 1].join(",");
    for v in [
        "synthetic",
        "synthetic:",
        "synthetic:1.5",
        "synthetic:-0.1",
        "synthetic:NaN",
    ] {
        let err = SpecMethod::parse(v).unwrap_err().to_string();
        assert!(err.contains("acceptance rates in 0..1"), "{v}: {err}");
    }
    assert!(SpecMethod::parse(&format!("synthetic:{long}")).is_err());
}

#[test]
fn synthetic_needs_greedy_decoding_and_no_more_rates_than_k() {
    let cfg = |rates: Vec<f64>, k| SpecConfig {
        method: SpecMethod::Synthetic { rates },
        k,
        ..Default::default()
    };
    assert!(cfg(vec![0.8], 4).validate(0.0).is_ok());
    let err = cfg(vec![0.8], 4).validate(0.7).unwrap_err().to_string();
    assert!(err.contains("--temperature 0"), "{err}");
    let err = cfg(vec![0.9, 0.8, 0.7], 2)
        .validate(0.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--spec-k 2"), "{err}");
}
