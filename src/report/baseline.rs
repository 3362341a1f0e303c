//! The speculation screen of a run: the exact speculation flags, then one line per level with
//! the speedups against the interleaved `--spec none` baseline, the acceptance figures and
//! whether the output text stayed the same. Reads only the record's summary.

use std::fmt::Write;

use super::plural;
use crate::config::spec::{SpecConfig, SpecMethod};
use crate::record::spec::{collapsed, COLLAPSE_RULE};
use crate::record::summary::RunSummary;
use crate::record::RunRecord;

/// The speculation flags as a user would type them.
pub(crate) fn flags(spec: &SpecConfig) -> String {
    let mut out = format!("--spec {} --spec-k {}", spec.method.label(), spec.k);
    if spec.method == SpecMethod::Lookup {
        let _ = write!(out, " --lookup-ngram {}..{}", spec.ngram.0, spec.ngram.1);
    }
    if matches!(spec.method, SpecMethod::Draft { .. }) {
        let _ = write!(out, " --draft-dtype {}", spec.draft_dtype.name());
    }
    if spec.no_baseline {
        out += " --no-baseline";
    }
    out
}

fn times(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("×{v:.2}"))
}

/// The spread of the per-round decode speedups: their range and MAD, with the pair count.
fn spread(b: &crate::record::baseline::VsBaseline) -> String {
    let n = b.spec_decode_speedup_pairs;
    match (b.spec_decode_speedup_min, b.spec_decode_speedup_max) {
        (Some(lo), Some(hi)) => {
            let mad = b
                .spec_decode_speedup_mad
                .map_or(String::new(), |m| format!(", MAD {m:.2}"));
            format!(
                "per round pair ×{lo:.2}–×{hi:.2}{mad}, {}",
                plural(n, "pair")
            )
        }
        _ => "no round pair with a decode clock".to_string(),
    }
}

/// The section, or nothing for a run without speculation.
pub(crate) fn section(run: &RunRecord, d: &RunSummary) -> String {
    let spec = &run.config.spec;
    if spec.method == SpecMethod::None {
        return String::new();
    }
    let mut out = String::new();
    if run.baseline.is_none() {
        let why = if spec.no_baseline {
            "--no-baseline"
        } else {
            "none recorded"
        };
        let _ = writeln!(
            out,
            "speculation ({}): no --spec none baseline ({why}), so no speedup is measured",
            flags(spec)
        );
    } else {
        let _ = writeln!(
            out,
            "speculation ({}) against --spec none on the same loaded model, rounds interleaved (×: with ÷ without, above 1 is faster):",
            flags(spec)
        );
    }
    if let Some(dr) = &run.drafter {
        let weights = match &dr.model {
            Some(m) => format!(
                "draft model {} ({} weights as held, loaded in {:.2} s)",
                m.path.display(),
                crate::report::bytes(dr.weight_bytes),
                dr.load_s
            ),
            None if dr.weight_bytes > 0 => format!(
                "the checkpoint's nextn block ({} weights as held, loaded with the target)",
                crate::report::bytes(dr.weight_bytes)
            ),
            None => "no weights of its own".to_string(),
        };
        let kv = match dr.peak_kv_bytes {
            0 => "no KV cache".to_string(),
            n => format!("its KV peak {}", crate::report::bytes(n)),
        };
        let _ = writeln!(out, "  drafter: {weights}; {kv}");
        if let Some(line) = synthetic_line(spec, dr) {
            out += &line;
        }
    }
    for l in &d.levels {
        let s = &l.spec;
        let b = &s.baseline;
        let mut line = format!("  {:<7} ", plural(l.jobs, "job") + ":");
        if run.baseline.is_some() {
            let same = match b.spec_outputs_identical.as_str() {
                "yes" => "outputs identical".to_string(),
                "no" if run.config.sampling.temperature > 0.0 => format!(
                    "outputs differ ({}; expected with sampling)",
                    b.spec_differing_tasks.join(", ")
                ),
                "no" => format!("outputs DIFFER ({})", b.spec_differing_tasks.join(", ")),
                _ => "outputs n/a".to_string(),
            };
            let _ = write!(
                line,
                "decode {} ({}), TTFT {}, completion {}; {}; ",
                times(b.spec_decode_speedup),
                spread(b),
                times(b.spec_ttft_speedup),
                times(b.spec_completion_speedup),
                same,
            );
        }
        let _ = writeln!(
            line,
            "accepted {} of {} drafted ({} token-weighted; per request median {}, lowest {}), \
             {} tokens per verify (accepted per verify: {}); {}{}",
            s.spec_accepted,
            plural(s.spec_proposed as usize, "token"),
            s.spec_acceptance
                .map_or("n/a".into(), |a| super::percent(Some(a), 0)),
            super::percent(s.spec_acceptance_request_median, 0),
            super::percent(s.spec_acceptance_request_lowest, 0),
            s.spec_accepted_len
                .map_or("n/a".into(), |v| format!("{v:.2}")),
            histogram(&s.spec_accepted_hist),
            plural(l.rounds, "round"),
            if run.baseline.is_some() {
                format!(" + {}", plural(b.spec_baseline_rounds, "baseline round"))
            } else {
                String::new()
            },
        );
        out += &line;
    }
    for c in collapse_within(run, d) {
        out += "  ";
        out += &c;
    }
    out
}

/// For `--spec synthetic:`: where its drafts come from and the acceptance to expect.
fn synthetic_line(spec: &SpecConfig, dr: &crate::record::spec::DrafterInfo) -> Option<String> {
    let SpecMethod::Synthetic { rates } = &spec.method else {
        return None;
    };
    let expected = crate::spec::synthetic::expected_acceptance(rates, spec.k);
    let pass = match (dr.reference_requests, dr.reference_s) {
        (Some(n), Some(s)) => format!("{} in {s:.2} s, untimed", plural(n, "request")),
        _ => "not recorded".into(),
    };
    Some(format!(
        "  synthetic: drafts the greedy output of a reference pass ({pass}); position i kept \
         with rate(i) given the ones before: {} token-weighted expected when all {} are drafted\n",
        super::percent(expected, 0),
        plural(spec.k, "position"),
    ))
}

/// The collapse guard within a run: each level whose token-weighted acceptance collapsed
/// against the same drafter's at the run's fewest-jobs level (rule: [`COLLAPSE_RULE`]).
pub(crate) fn collapse_within(run: &RunRecord, d: &RunSummary) -> Vec<String> {
    if run.config.spec.method == SpecMethod::None {
        return Vec::new();
    }
    let Some(first) = d.levels.iter().min_by_key(|l| l.jobs) else {
        return Vec::new();
    };
    let reached = first.spec.spec_acceptance;
    d.levels
        .iter()
        .filter(|l| l.jobs != first.jobs && collapsed(l.spec.spec_acceptance, reached))
        .map(|l| {
            collapse_line(
                l.jobs,
                l.spec.spec_acceptance,
                reached,
                &format!("at {}", plural(first.jobs, "job")),
            )
        })
        .collect()
}

/// The collapse guard between two runs of the same drafter (the same `--spec` and
/// `--spec-k`): each level both measured whose acceptance in `new` collapsed against `old`'s.
pub(crate) fn collapse_between(old: &RunRecord, new: &RunRecord, old_name: &str) -> Vec<String> {
    let (so, sn) = (&old.config.spec, &new.config.spec);
    if sn.method == SpecMethod::None || so.method != sn.method || so.k != sn.k {
        return Vec::new();
    }
    let olds = old.summary().levels;
    new.summary()
        .levels
        .iter()
        .filter_map(|l| {
            let o = olds.iter().find(|o| o.jobs == l.jobs)?;
            collapsed(l.spec.spec_acceptance, o.spec.spec_acceptance).then(|| {
                collapse_line(
                    l.jobs,
                    l.spec.spec_acceptance,
                    o.spec.spec_acceptance,
                    &format!("in {old_name}"),
                )
            })
        })
        .collect()
}

fn collapse_line(jobs: usize, got: Option<f64>, reached: Option<f64>, there: &str) -> String {
    format!(
        "speculation: acceptance COLLAPSED at {}: {} token-weighted against {} {there} with the \
         same drafter ({COLLAPSE_RULE}); a slower speed there is the drafter missing, not the \
         cost of verifying\n",
        plural(jobs, "job"),
        super::percent(got, 0),
        super::percent(reached, 0),
    )
}

/// `0 ×12 · 1 ×5 · 2 ×3`: verifies by drafted tokens kept; `n/a` in records without it.
fn histogram(h: &[u64]) -> String {
    if h.is_empty() {
        return "n/a".into();
    }
    h.iter()
        .enumerate()
        .map(|(n, c)| format!("{n} ×{c}"))
        .collect::<Vec<_>>()
        .join(" · ")
}
