//! What kind of run a record holds, with the payload only that kind has: a `run`/`sweep`, one
//! arm of an `ab`, the starts of a `cold`, the steps of a `session`, the cells of a `prefill`
//! or a `spec-cost`, or the `--spec none` baseline nested in a speculative run. On file it is a
//! `"kind"` beside the payload under its own key (`"ab"`, `"cold"`, `"session"`, `"prefill"`,
//! `"spec_cost"`), so a reader dispatches on one word; a record from
//! before the word existed (schema ≤ 2) gets it from the payload it carries. A record whose word
//! and payload disagree is refused by name.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::arms::AbArm;
use super::cold::ColdRecord;
use super::prefill::PrefillRecord;
use super::session::SessionRecord;
use super::spec_cost::SpecCostRecord;

/// A run's kind and its own payload.
#[derive(Debug, Clone)]
pub enum RunKind {
    /// `tokfire run` or `sweep` (`config.verb` says which).
    Run,
    /// One arm of a `tokfire ab`.
    AbArm(Box<AbArm>),
    /// `tokfire cold`: every start with its page-cache state and clocks.
    Cold(ColdRecord),
    /// `tokfire session`: every step with what the person waited for.
    Session(SessionRecord),
    /// `tokfire prefill`: every cell of the grid with its samples.
    Prefill(PrefillRecord),
    /// `tokfire spec-cost`: verify-step times over jobs and drafted tokens.
    SpecCost(SpecCostRecord),
    /// The `--spec none` levels beside a speculative run, nested in it.
    Baseline,
}

/// The kind's word on file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KindTag {
    Run,
    AbArm,
    Cold,
    Session,
    Prefill,
    SpecCost,
    Baseline,
}

impl KindTag {
    /// The word as written in a record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::AbArm => "ab-arm",
            Self::Cold => "cold",
            Self::Session => "session",
            Self::Prefill => "prefill",
            Self::SpecCost => "spec-cost",
            Self::Baseline => "baseline",
        }
    }
}

impl RunKind {
    pub fn tag(&self) -> KindTag {
        match self {
            Self::Run => KindTag::Run,
            Self::AbArm(_) => KindTag::AbArm,
            Self::Cold(_) => KindTag::Cold,
            Self::Session(_) => KindTag::Session,
            Self::Prefill(_) => KindTag::Prefill,
            Self::SpecCost(_) => KindTag::SpecCost,
            Self::Baseline => KindTag::Baseline,
        }
    }
}

/// The kind as it is written: the word and the one payload it has.
#[derive(Serialize)]
struct WireOut<'a> {
    kind: KindTag,
    #[serde(skip_serializing_if = "Option::is_none")]
    ab: Option<&'a AbArm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cold: Option<&'a ColdRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a SessionRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefill: Option<&'a PrefillRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec_cost: Option<&'a SpecCostRecord>,
}

/// The kind as it is read: the word (absent before schema 3) and whatever payloads are there.
#[derive(Deserialize)]
struct WireIn {
    #[serde(default)]
    kind: Option<KindTag>,
    #[serde(default)]
    ab: Option<AbArm>,
    #[serde(default)]
    cold: Option<ColdRecord>,
    #[serde(default)]
    session: Option<SessionRecord>,
    #[serde(default)]
    prefill: Option<PrefillRecord>,
    #[serde(default)]
    spec_cost: Option<SpecCostRecord>,
}

impl Serialize for RunKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireOut {
            kind: self.tag(),
            ab: match self {
                Self::AbArm(a) => Some(&**a),
                _ => None,
            },
            cold: match self {
                Self::Cold(c) => Some(c),
                _ => None,
            },
            session: match self {
                Self::Session(s) => Some(s),
                _ => None,
            },
            prefill: match self {
                Self::Prefill(p) => Some(p),
                _ => None,
            },
            spec_cost: match self {
                Self::SpecCost(c) => Some(c),
                _ => None,
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        resolve(WireIn::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The kind a record's word and payloads make, or why they disagree.
fn resolve(w: WireIn) -> Result<RunKind, String> {
    let payloads: Vec<&str> = [
        w.ab.is_some().then_some("ab"),
        w.cold.is_some().then_some("cold"),
        w.session.is_some().then_some("session"),
        w.prefill.is_some().then_some("prefill"),
        w.spec_cost.is_some().then_some("spec_cost"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if payloads.len() > 1 {
        return Err(format!(
            "a run carries {} entries at once; a run has one kind",
            payloads.join(" and ")
        ));
    }
    // Each payload alone was checked above; the word must agree with the one present.
    let kind = match (w.kind, w.ab, w.cold, w.session, w.prefill, w.spec_cost) {
        (None | Some(KindTag::AbArm), Some(a), ..) => RunKind::AbArm(Box::new(a)),
        (None | Some(KindTag::Cold), _, Some(c), ..) => RunKind::Cold(c),
        (None | Some(KindTag::Session), _, _, Some(s), ..) => RunKind::Session(s),
        // Prefill and spec-cost records were born with the word: it is required.
        (Some(KindTag::Prefill), _, _, _, Some(p), _) => RunKind::Prefill(p),
        (Some(KindTag::SpecCost), _, _, _, _, Some(c)) => RunKind::SpecCost(c),
        (None | Some(KindTag::Run), None, None, None, None, None) => RunKind::Run,
        (Some(KindTag::Baseline), None, None, None, None, None) => RunKind::Baseline,
        (None, ..) => {
            return Err(format!(
                "the run's \"{}\" entry has no \"kind\" word, which records of that kind always \
                 carry; the record was edited or damaged",
                payloads.first().unwrap_or(&"?")
            ))
        }
        (Some(tag), ..) => {
            let has = payloads
                .first()
                .map_or("none".to_string(), |p| format!("\"{p}\""));
            return Err(format!(
                "kind \"{}\" does not match the run's entries ({has}); the record was edited or \
                 damaged",
                tag.as_str()
            ));
        }
    };
    Ok(kind)
}

#[cfg(test)]
#[path = "kind_tests.rs"]
mod tests;
