//! The one-screen summary of a run, in the seeds' shape: task, prompts, quality, timing (cold,
//! warm, tail), resources (memory, power, disk), verdict and the exact launch command.

use std::fmt::Write;

use super::text::Derived;
use crate::record::summary as sheet;
use crate::record::verdict;
use crate::record::RunRecord;

fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.3} s"))
}

/// A signed duration in ms to 0.1 (a clock that can come out below zero when the first step
/// was no slower than the steady median), never printing `-0.0`.
fn signed_ms(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| {
        let ms = (v * 1e4).round() / 10.0 + 0.0;
        format!("{ms:+.1} ms")
    })
}

/// Shell-quotes one argument when it needs it.
fn quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The launch command, shell-quoted.
pub fn command_line(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// Renders the summary.
pub fn one_screen(run: &RunRecord, d: &Derived) -> String {
    let w = &run.workload;
    let mut out = String::new();
    let line = |out: &mut String, key: &str, value: String| {
        let _ = writeln!(out, "{key:<11}{value}");
    };
    line(
        &mut out,
        "task:",
        format!(
            "{} — {} ({} tasks per job)",
            w.name,
            w.use_case,
            w.tasks.len()
        ),
    );
    line(
        &mut out,
        "prompts:",
        format!(
            "{} v{}, sha256 {} ({}{})",
            w.name,
            w.version,
            &w.hash[..w.hash.len().min(12)],
            w.source,
            if w.locked {
                ", locked"
            } else {
                ", NOT in the lock"
            }
        ),
    );
    let quality: Vec<String> = d
        .levels
        .iter()
        .map(|s| {
            format!(
                "{}j pass {} / fail {} / abstain {}",
                s.jobs, s.passed, s.failed, s.abstained
            )
        })
        .collect();
    line(&mut out, "quality:", quality.join("; "));
    let first = run.levels.first();
    let load = run.load.seconds;
    let first_ttft = first.and_then(sheet::first_ttft_s);
    let cache = run
        .load
        .page_cache
        .map_or("page-cache state n/a".into(), |r| r.label());
    let warm = d.levels.first();
    line(
        &mut out,
        "timing:",
        format!(
            "cold {} (load {load:.3} s, {cache}; first token {}); warm TTFT {} med, {} {}; kernel warm-up {}",
            secs(first_ttft.map(|t| t + load)),
            secs(first_ttft),
            secs(warm.and_then(|s| s.ttft_median_s)),
            secs(warm.and_then(|s| s.ttft_tail_s)),
            warm.map_or("tail", |s| s.tail_kind.as_str()),
            signed_ms(first.and_then(sheet::kernel_warmup_s)),
        ),
    );
    let clocks: Vec<String> = d
        .levels
        .iter()
        .map(|s| {
            format!(
                "{}j prefill {} tok/s, decode {} tok/s per sequence",
                s.jobs,
                s.prompt_tok_s.map_or("n/a".into(), |v| format!("{v:.0}")),
                s.tpot_median_s
                    .filter(|t| *t > 0.0)
                    .map_or("n/a".into(), |t| format!("{:.1}", 1.0 / t)),
            )
        })
        .collect();
    line(&mut out, "clocks:", clocks.join("; "));
    let peak = d.levels.iter().filter_map(|s| s.peak_rss_bytes).max();
    let disk: Option<u64> = run
        .levels
        .iter()
        .flat_map(|l| &l.rounds)
        .map(|r| r.disk_read_bytes)
        .sum::<Option<u64>>()
        .map(|b| b + run.load.disk_read_bytes.unwrap_or(0));
    let power = match &run.energy_na {
        Some(why) => format!("n/a ({why})"),
        None => {
            let jpt: Vec<String> = d
                .levels
                .iter()
                .map(|s| {
                    format!(
                        "{}j {}",
                        s.jobs,
                        s.joules_per_token
                            .map_or("n/a".into(), |j| format!("{j:.3} J/token"))
                    )
                })
                .collect();
            jpt.join(", ")
        }
    };
    line(
        &mut out,
        "resources:",
        format!(
            "peak memory {}; KV peak {}; power {power}; disk read {}",
            peak.map_or("n/a".into(), super::bytes),
            super::bytes(d.levels.iter().map(|s| s.peak_kv_bytes).max().unwrap_or(0)),
            disk.map_or("n/a".into(), super::bytes),
        ),
    );
    line(&mut out, "verdict:", verdict::overall(&d.verdicts));
    line(&mut out, "command:", command_line(&run.command));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        let args = ["tokfire", "sweep", "--workload", "my tasks.toml", "it's"].map(String::from);
        assert_eq!(
            command_line(&args),
            r"tokfire sweep --workload 'my tasks.toml' 'it'\''s'"
        );
    }

    #[test]
    fn signed_ms_never_prints_minus_zero() {
        assert_eq!(signed_ms(Some(-0.00001)), "+0.0 ms");
        assert_eq!(signed_ms(Some(-0.0013)), "-1.3 ms");
        assert_eq!(signed_ms(Some(0.5194)), "+519.4 ms");
        assert_eq!(signed_ms(None), "n/a");
    }
}
