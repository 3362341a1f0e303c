//! Unit tests of `crate::config::schedule`.

use super::*;

#[test]
fn names_round_trip_through_serde_and_old_records_default_to_fifo() {
    for s in [
        Schedule::Fifo,
        Schedule::DecodeFirst,
        Schedule::PrefillFirst,
    ] {
        let json = serde_json::to_string(&s).expect("serializes");
        assert_eq!(json, format!("\"{}\"", s.name()));
        assert_eq!(serde_json::from_str::<Schedule>(&json).ok(), Some(s));
    }
    assert_eq!(Schedule::default(), Schedule::Fifo);
}
