//! The one-screen summary of a run, in the seeds' shape: task, prompts, quality, timing (the
//! first request of the process against the same prompt later, warm, tail), resources (memory, power, disk), verdict and the exact launch command.

use std::fmt::Write;

use super::secs;
use crate::record::summary::{LevelSummary, RunSummary};
use crate::record::RunRecord;

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
pub(crate) fn command_line(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// Renders the summary.
/// With a prefix cache: the first level's cold and cached prompt TTFTs, apart.
fn prefix_timing(run: &RunRecord, level: Option<&LevelSummary>) -> String {
    match (run.scheduler.prefix_cache_tokens, level) {
        (0, _) | (_, None) => String::new(),
        (_, Some(s)) => format!(
            "; prefix cache: TTFT cold {} med ({} prompts), cached {} med ({} prompts)",
            secs(s.prefix.prefix_ttft_cold_s),
            s.prefix.prefix_cold_prompts,
            secs(s.prefix.prefix_ttft_cached_s),
            s.prefix.prefix_cached_prompts,
        ),
    }
}

pub(crate) fn one_screen(run: &RunRecord, d: &RunSummary) -> String {
    let w = &run.workload;
    let mut out = String::new();
    let line = |out: &mut String, key: &str, value: String| {
        let _ = writeln!(out, "{key:<11}{value}");
    };
    let unfinished = super::text::unfinished(run);
    if !unfinished.is_empty() {
        let text = unfinished.trim_start().trim_start_matches("status: ");
        line(&mut out, "status:", text.to_string());
    }
    line(
        &mut out,
        "task:",
        format!(
            "{} — {} ({} per job)",
            w.name,
            w.use_case,
            if w.tasks.len() == 1 {
                "1 task".to_string()
            } else {
                format!("{} tasks", w.tasks.len())
            }
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
            } else if w.source.starts_with("builtin:") {
                ", NOT in the lock"
            } else {
                ", your own file: hash recorded, no lock needed"
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
    let load = run.load.seconds;
    let cache = run
        .load
        .page_cache
        .map_or("page-cache state n/a".into(), |r| r.label());
    let warm = d.levels.first();
    line(
        &mut out,
        "timing:",
        format!(
            "first request {} (load {load:.3} s, {cache}; first token {}, the same prompt later {} med); warm TTFT {} med, {} {}; kernel warm-up {}",
            secs(d.cold_first_token_s),
            secs(d.first_ttft_s),
            secs(d.first_prompt_later_ttft_s),
            secs(warm.and_then(|s| s.ttft_median_s)),
            secs(warm.and_then(|s| s.ttft_tail_s)),
            warm.map_or("tail", |s| s.tail_kind.as_str()),
            d.kernel_warmup
                .map_or("n/a (too few decode steps)".into(), |w| w.label()),
        ) + &prefix_timing(run, warm),
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
    let gpu = d.levels.iter().filter_map(|s| s.peak_device_bytes).max();
    let gpu = gpu.map_or(String::new(), |b| format!(", GPU {}", super::bytes(b)));
    let disk = d.disk_read_bytes;
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
                            .filter(|j| *j > 0.0)
                            .map_or("n/a".into(), |j| {
                                format!("{j:.3} J/token ({:.1} tok/J)", 1.0 / j)
                            })
                    )
                })
                .collect();
            let from = run
                .energy_source
                .as_deref()
                .map_or(String::new(), |f| format!(" ({f})"));
            jpt.join(", ") + &from
        }
    };
    line(
        &mut out,
        "resources:",
        format!(
            "peak memory {}{gpu}; {}; power {power}; disk read {}",
            peak.map_or("n/a".into(), super::bytes),
            state_peak(d),
            disk.map_or("n/a".into(), super::bytes),
        ),
    );
    if let Some(machine) = machine_line(d) {
        line(&mut out, "machine:", machine);
    }
    if let Some(w) = quiet_wait_line(run) {
        line(&mut out, "", w);
    }
    // One line per level: the changepoint verdict of its decode steps.
    for (i, l) in d.levels.iter().enumerate() {
        if let Some(s) = l.steady.describe() {
            let key = if i == 0 { "steady:" } else { "" };
            line(&mut out, key, format!("{}j {s}", l.jobs));
        }
    }
    line(&mut out, "verdict:", d.verdict.line.clone());
    for c in super::baseline::collapse_within(run, d) {
        line(&mut out, "", c.trim_end().to_string());
    }
    line(&mut out, "command:", command_line(&run.command));
    out
}

/// What `--quiet-wait` did before the measured rounds: total and longest wait, and how many
/// rounds started while the machine was still busy; none without the flag.
fn quiet_wait_line(run: &RunRecord) -> Option<String> {
    let waits: Vec<crate::measure::sentinel::QuietWait> = run
        .levels
        .iter()
        .flat_map(|l| &l.rounds)
        .filter_map(|r| r.quiet_wait)
        .collect();
    if waits.is_empty() {
        return None;
    }
    let total: f64 = waits.iter().map(|w| w.waited_s).sum();
    let longest = waits.iter().map(|w| w.waited_s).fold(0.0, f64::max);
    let busy = waits.iter().filter(|w| !w.quiet).count();
    Some(format!(
        "--quiet-wait {}: waited {total:.1} s before {} rounds (longest {longest:.1} s); {busy} \
         started with the machine still busy",
        run.config.quiet_wait_s,
        waits.len()
    ))
}

/// "KV peak X", or for a hybrid model the state held at its peak split into KV rows and
/// recurrent state.
fn state_peak(d: &RunSummary) -> String {
    let most = |f: fn(&crate::record::summary::LevelSummary) -> u64| {
        d.levels.iter().map(f).max().unwrap_or(0)
    };
    let (kv, state) = (most(|s| s.peak_kv_bytes), most(|s| s.peak_state_bytes));
    match state {
        0 => format!("KV peak {}", super::bytes(kv)),
        _ => format!(
            "state peak {} (KV {} + recurrent {})",
            super::bytes(kv + state),
            super::bytes(kv),
            super::bytes(state)
        ),
    }
}

/// What the noise sentinel saw, over every level: quiet, or which levels were disturbed and by
/// how much; none for records without sentinel readings.
pub(crate) fn machine_line(d: &RunSummary) -> Option<String> {
    let q: Vec<&crate::record::quiet::QuietFigures> = d
        .levels
        .iter()
        .map(|l| &l.quiet)
        .filter(|q| q.disturbed_rounds.is_some())
        .collect();
    if q.is_empty() {
        return None;
    }
    let rounds: u64 = q.iter().map(|q| q.sentinel_rounds).sum();
    let disturbed: u64 = q.iter().filter_map(|q| q.disturbed_rounds).sum();
    let most = |f: fn(&crate::record::quiet::QuietFigures) -> Option<f64>| {
        q.iter()
            .filter_map(|q| f(q))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let other = most(|q| q.other_cores);
    if disturbed == 0 {
        let other = other.map_or("n/a".into(), |o| format!("{o:.2}"));
        return Some(format!(
            "quiet: 0 of {rounds} rounds disturbed (other processes at most {other} cores busy, median per level)"
        ));
    }
    // Per level the sheet's `disturbed` column and the verdict say which; this line names the
    // worst level's causes (other processes, the hypervisor's steal) and fits 100 columns.
    let why = crate::record::quiet::causes(other, most(|q| q.steal_fraction));
    Some(format!(
        "{disturbed} of {rounds} rounds disturbed (at worst {why})"
    ))
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
