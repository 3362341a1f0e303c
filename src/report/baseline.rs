//! The speculation screen of a run: the exact speculation flags, then one line per level with
//! the speedups against the interleaved `--spec none` baseline, the acceptance figures and
//! whether the output text stayed the same. Reads only the record's summary.

use std::fmt::Write;

use super::plural;
use crate::config::spec::{SpecConfig, SpecMethod};
use crate::record::summary::RunSummary;
use crate::record::RunRecord;

/// The speculation flags as a user would type them.
pub(crate) fn flags(spec: &SpecConfig) -> String {
    let mut out = format!("--spec {} --spec-k {}", spec.method.label(), spec.k);
    if spec.method == SpecMethod::Lookup {
        let _ = write!(out, " --lookup-ngram {}..{}", spec.ngram.0, spec.ngram.1);
    }
    if matches!(spec.method, SpecMethod::Draft { .. }) {
        let _ = write!(out, " --draft-dtype {}", dtype_name(spec.draft_dtype));
    }
    if spec.no_baseline {
        out += " --no-baseline";
    }
    out
}

fn dtype_name(d: crate::config::WeightDType) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
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
    out
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
