//! Speculation counters of one round, from the engine's `Drafted` / `Verified` events and the
//! forward time of the steps that verified.

use std::collections::BTreeMap;

use crate::engine::batching::{Event, EventKind};
use crate::record::spec::{RequestSpec, SpecSample};

/// The round's speculation counters (all zero when nothing was drafted).
pub fn spec_sample(events: &[Event]) -> SpecSample {
    let mut s = SpecSample::default();
    let mut requests: BTreeMap<u64, RequestSpec> = BTreeMap::new();
    let mut verified_in_step = false;
    for ev in events {
        match ev.kind {
            EventKind::StepStart { .. } => verified_in_step = false,
            EventKind::Drafted { draft_us, .. } => s.draft_s += draft_us as f64 / 1e6,
            EventKind::Verified { proposed, accepted } => {
                verified_in_step = true;
                s.verifies += 1;
                s.proposed += proposed as u64;
                s.accepted += accepted as u64;
                if s.proposed_at.len() < proposed {
                    s.proposed_at.resize(proposed, 0);
                    s.accepted_at.resize(proposed, 0);
                }
                for p in 0..proposed {
                    s.proposed_at[p] += 1;
                    s.accepted_at[p] += u64::from(p < accepted);
                }
                if s.accepted_hist.len() <= accepted {
                    s.accepted_hist.resize(accepted + 1, 0);
                }
                s.accepted_hist[accepted] += 1;
                let r = requests.entry(ev.id.unwrap_or(u64::MAX)).or_default();
                r.verifies += 1;
                r.proposed += proposed as u64;
                r.accepted += accepted as u64;
            }
            EventKind::StepEnd { forward_us } if verified_in_step => {
                s.verify_forward_s += forward_us as f64 / 1e6;
                s.verify_steps += 1;
            }
            _ => {}
        }
    }
    s.per_request = requests.into_values().collect();
    s
}
