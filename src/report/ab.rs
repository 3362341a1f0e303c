//! The A/B screen and the side-by-side comparison of two runs: both arms' medians and noise, the
//! verdict with its effect and interval, what else moved, output drift by task, the noise
//! sentinel and what the OS says the process did. Reads only records.

use std::fmt::Write;

use crate::record::ab::{pct, Effect, Metric, Verdict};
use crate::record::arms::round_figures;
use crate::record::summary::LevelSummary;
use crate::record::RunRecord;

fn value(m: Metric, v: f64) -> String {
    match m {
        Metric::Ttft | Metric::Completion | Metric::Load => format!("{v:.3} s"),
        Metric::Memory => super::bytes(v.max(0.0) as u64),
        _ => format!("{v:.1} tok/s"),
    }
}

fn arm_name(run: &RunRecord) -> String {
    match run.ab() {
        Some(a) if a.vary == "aa" => format!("{} (same)", a.arm),
        Some(a) => format!("{} {}={}", a.arm, a.vary, a.value),
        None => run.id.clone(),
    }
}

/// The verdict block shared by `ab`, `compare` and `rerun`.
pub fn verdict_block(a: &RunRecord, b: &RunRecord, v: &Verdict) -> String {
    let mut out = String::new();
    if let Some(e) = &v.effect {
        let _ = writeln!(
            out,
            "{:<32} {:>14} {:>14}   B/A {:.3} [{:.3}, {:.3}]\n{:<32} noise A {:.1} %, B {:.1} % \
             ({} / {} rounds)",
            format!("{}, median of rounds", e.metric.label()),
            value(e.metric, e.median_a),
            value(e.metric, e.median_b),
            e.ratio,
            e.ci_low,
            e.ci_high,
            "",
            e.noise_a * 100.0,
            e.noise_b * 100.0,
            e.n_a,
            e.n_b
        );
    }
    let _ = writeln!(out, "verdict: {} — {}", v.decision, v.reason);
    if v.looks > 1 {
        let _ = writeln!(
            out,
            "  sequential: {} planned looks (--until-decided), each interval at {} % (5 % / {}, \
             Bonferroni), so stopping early keeps 5 %; this is look {}",
            v.looks,
            super::fixed(100.0 - 5.0 / v.looks as f64, 2),
            v.looks,
            v.look
        );
    }
    if let Some(n) = v.more_rounds {
        // Name a flag the verb that shows this accepts: `ab` adds rounds itself, `compare` and
        // `rerun` need runs with more measured rounds.
        if b.ab().is_some() {
            let _ = writeln!(out, "  (--until-decided {n} would add them)");
        } else {
            let have = v.effect.as_ref().map_or(0, |e| e.n_a.min(e.n_b));
            let _ = writeln!(
                out,
                "  (runs of {} measured rounds would likely settle it: tokfire rerun RECORD --rounds {})",
                have + n,
                have + n
            );
        }
    }
    let moved: Vec<String> = v.also_moved.iter().map(Effect::label).collect();
    let family = match v.also_judged {
        0 => String::new(),
        n => format!(" (Holm over {n} metrics not named by --expect)"),
    };
    let _ = writeln!(
        out,
        "also moved{family}: {}",
        if moved.is_empty() {
            "nothing beyond its noise".into()
        } else {
            moved.join("; ")
        }
    );
    let tasks = b.workload.tasks.len();
    if v.changed_tasks.is_empty() {
        let _ = writeln!(
            out,
            "outputs: identical between A and B on all {tasks} tasks"
        );
    } else {
        let _ = writeln!(out, "outputs: {} task(s) changed:", v.changed_tasks.len());
        for t in &v.changed_tasks {
            let _ = writeln!(
                out,
                "  {}: {}{}",
                t.task,
                if t.same_output {
                    "same text"
                } else {
                    "text drifted"
                },
                if t.outcome_a == t.outcome_b {
                    String::new()
                } else {
                    format!(", {} → {}", t.outcome_a, t.outcome_b)
                }
            );
        }
    }
    out += &sentinel_lines(a, b, v);
    out
}

fn sentinel_lines(a: &RunRecord, b: &RunRecord, v: &Verdict) -> String {
    let mut out = String::new();
    for (run, discounted) in [(a, v.discounted_a), (b, v.discounted_b)] {
        let Some(ab) = run.ab() else { continue };
        let seen: Vec<_> = ab
            .rounds
            .iter()
            .filter_map(|r| r.sentinel.as_ref())
            .collect();
        if seen.is_empty() {
            continue;
        }
        let disturbed = seen.iter().filter(|s| s.disturbed).count();
        let avg = |f: &dyn Fn(&crate::measure::sentinel::RoundSentinel) -> Option<f64>| {
            let v: Vec<f64> = seen.iter().filter_map(|s| f(s)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let busy = avg(&|s| s.cores_busy);
        let other = avg(&|s| s.other_cpu_s.map(|o| o / s.wall_s.max(1e-9)));
        let threads = run.runtime.threads;
        let mut line = format!(
            "{}: {} of {} rounds disturbed{}; other processes {}; --threads {threads}, {} cores busy on average",
            arm_name(run),
            disturbed,
            seen.len(),
            if discounted > 0 {
                format!(" ({discounted} left out)")
            } else if disturbed > 0 {
                format!(" (kept: fewer than {} calm rounds would remain)", crate::record::ab::MIN_ROUNDS)
            } else {
                String::new()
            },
            other.map_or("n/a".into(), |o| format!("{o:.2} cores")),
            busy.map_or("n/a".into(), |b| format!("{b:.2}")),
        );
        if let Some(b) = busy.filter(|b| *b < 0.75 * threads as f64) {
            let _ = write!(
                line,
                " — mismatch: --threads {threads} but {b:.1} cores busy"
            );
        }
        let last = seen.last().expect("not empty");
        let _ = write!(
            line,
            "; switches vol/invol {}/{} per round; load avg {}; governor {}; {}",
            avg(&|s| s.voluntary_switches.map(|x| x as f64))
                .map_or("n/a".into(), |x| format!("{x:.0}")),
            avg(&|s| s.involuntary_switches.map(|x| x as f64))
                .map_or("n/a".into(), |x| format!("{x:.0}")),
            last.loadavg_1m.map_or("n/a".into(), |l| format!("{l:.2}")),
            last.governor.as_deref().unwrap_or("n/a (no cpufreq)"),
            last.freq_mhz
                .map_or("freq n/a".into(), |f| format!("{f:.0} MHz")),
        );
        let _ = writeln!(out, "{line}; kernels {}", run.runtime.kernels);
    }
    out
}

/// The `ab` screen: header, both arms' medians per metric, the verdict block, the record.
pub fn screen(a: &RunRecord, b: &RunRecord) -> String {
    let mut out = super::text::header(a);
    let (fa, fb) = (round_figures(a), round_figures(b));
    let _ = writeln!(
        out,
        "\n{:<22} {:>14} {:>14}",
        "median of rounds",
        arm_name(a),
        arm_name(b)
    );
    for m in Metric::ALL {
        let med = |f: &[crate::record::ab::RoundFigures]| {
            crate::measure::stats::median(&f.iter().filter_map(|r| m.of(r)).collect::<Vec<_>>())
        };
        if let (Some(x), Some(y)) = (med(&fa), med(&fb)) {
            let _ = writeln!(
                out,
                "{:<22} {:>14} {:>14}   {}",
                m.label(),
                value(m, x),
                value(m, y),
                pct(y / x - 1.0)
            );
        }
    }
    for run in [a, b]
        .into_iter()
        .filter(|r| r.scheduler.prefix_cache_tokens > 0)
    {
        for s in run.summary().levels {
            let _ = writeln!(
                out,
                "prefix cache, {}: {}",
                arm_name(run),
                super::prefix::figures(&s)
            );
        }
    }
    for run in [a, b] {
        for s in run
            .summary()
            .levels
            .iter()
            .filter(|s| s.spec.spec_proposed > 0)
        {
            let f = &s.spec;
            let _ = writeln!(
                out,
                "speculation, {} at {}: accepted {} token-weighted (per request median {}, \
                 lowest {}), {} tokens per verify",
                arm_name(run),
                super::plural(s.jobs, "job"),
                super::percent(f.spec_acceptance, 0),
                super::percent(f.spec_acceptance_request_median, 0),
                super::percent(f.spec_acceptance_request_lowest, 0),
                f.spec_accepted_len
                    .map_or("n/a".into(), |v| format!("{v:.2}")),
            );
        }
    }
    for c in super::baseline::collapse_between(a, b, &arm_name(a)) {
        out += &c;
    }
    if let Some(note) = same_plans(a, b) {
        out += &note;
    }
    out.push('\n');
    match b.ab().and_then(|x| x.verdict.as_ref()) {
        Some(v) => out += &verdict_block(a, b, v),
        None => out += "verdict: none (the run did not finish)\n",
    }
    super::layout::wrap(&out, super::layout::WIDTH)
}

/// Scheduler variables whose arms differ only in how steps are planned.
const PLANNING: [&str; 3] = ["schedule", "prefill-chunk", "max-batch-tokens"];

/// When the arms vary how steps are planned yet planned the same steps (the same sequences,
/// prompt and decode tokens, step by step, in every measured round of every level): a line
/// saying so, with the largest prompt and the chunk — what the comparison could not see.
fn same_plans(a: &RunRecord, b: &RunRecord) -> Option<String> {
    let vary = b.ab()?.vary.as_str();
    if !PLANNING.contains(&vary) || a.levels.is_empty() || a.levels.len() != b.levels.len() {
        return None;
    }
    let plan = |r: &crate::record::RoundRecord| -> Vec<(usize, usize, usize)> {
        (r.steps.iter())
            .map(|s| (s.seqs, s.prefill_tokens, s.decode_tokens))
            .collect()
    };
    let measured = |l: &crate::record::LevelRecord| -> Vec<Vec<(usize, usize, usize)>> {
        l.rounds.iter().filter(|r| !r.warmup).map(plan).collect()
    };
    let same = a.levels.iter().zip(&b.levels).all(|(x, y)| {
        let (px, py) = (measured(x), measured(y));
        x.jobs == y.jobs && !px.is_empty() && px == py
    });
    if !same {
        return None;
    }
    let largest = (a.levels.iter())
        .flat_map(|l| &l.rounds)
        .flat_map(|r| &r.tasks)
        .map(|t| t.prompt_tokens)
        .max()
        .unwrap_or(0);
    Some(format!(
        "note: both arms planned the same steps in every measured round (largest prompt {largest} \
         tokens, prefill chunk {} and {}): {vary} could not make a difference on this workload; \
         longer prompts or more jobs would let it\n",
        a.config.engine.prefill_chunk, b.config.engine.prefill_chunk
    ))
}

/// The HTML page of an A/B pair: the decision in one sentence, then the `ab` screen itself.
pub fn html(a: &RunRecord, b: &RunRecord) -> String {
    let lead = match b.ab().and_then(|x| x.verdict.as_ref()) {
        Some(v) => format!("{}: {}", v.decision, v.reason),
        None => "No verdict: the A/B did not finish.".into(),
    };
    let title = format!(
        "A/B {} · {}",
        b.ab().map_or("", |x| x.vary.as_str()),
        a.config.model.model
    );
    super::html_plain::page(
        &title,
        &lead,
        vec![(
            "Arms and verdict",
            vec![super::html_plain::Block::Pre(screen(a, b))],
        )],
    )
}

/// Two runs' sheets side by side: per job count both runs measured, each figure old → new and
/// the ratio (levels are matched by job count, never by position); a level only one run has is
/// named, not compared.
pub fn side_by_side(old: &[LevelSummary], new: &[LevelSummary]) -> String {
    let mut out = String::new();
    let both: Vec<LevelSummary> = old.iter().chain(new).cloned().collect();
    let cols = super::columns::sheet(&both);
    for (side, this, other) in [("old", old, new), ("new", new, old)] {
        for l in this
            .iter()
            .filter(|l| !other.iter().any(|o| o.jobs == l.jobs))
        {
            let _ = writeln!(
                out,
                "{}: only the {side} run measured it (not compared)",
                super::plural(l.jobs, "job")
            );
        }
    }
    let pairs = old
        .iter()
        .filter_map(|o| new.iter().find(|n| n.jobs == o.jobs).map(|n| (o, n)));
    for (o, n) in pairs {
        let _ = writeln!(out, "{}:", super::plural(o.jobs, "job"));
        for c in &cols {
            let (vo, vn) = ((c.text)(o), (c.text)(n));
            let ratio = match (num(&(c.value)(o)), num(&(c.value)(n))) {
                (Some(x), Some(y)) if x != 0.0 => format!("{:.3}", y / x),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<18} {:>16} {:>16}  {ratio}",
                c.header.replace('\n', " "),
                vo,
                vn
            );
        }
    }
    out
}

fn num(v: &super::columns::Value) -> Option<f64> {
    match v {
        super::columns::Value::Count(n) => Some(*n as f64),
        super::columns::Value::Num(x) => *x,
        super::columns::Value::Text(_) => None,
    }
}

/// The A/B pair in `format`: the screen (text), the screen and both arms' sheets (Markdown),
/// both arms' rows (CSV: the `run_id` and `status` columns tell them apart), or one JSON
/// document with the pair, its verdict and both arms' summaries.
pub fn render(a: &RunRecord, b: &RunRecord, format: crate::config::run::Format) -> String {
    use super::text;
    use crate::config::run::Format;
    match format {
        Format::Text => screen(a, b),
        Format::Md => format!(
            "```\n{}```\n\n**A**: {}\n\n{}\n**B**: {}\n\n{}",
            screen(a, b),
            arm_name(a),
            text::table_md(a, &a.summary().levels),
            arm_name(b),
            text::table_md(b, &b.summary().levels)
        ),
        Format::Csv => {
            text::csv_header()
                + &text::csv_rows(a, &a.summary().levels)
                + &text::csv_rows(b, &b.summary().levels)
        }
        Format::Json | Format::JsonFull => {
            let arm = |r: &RunRecord| -> serde_json::Value {
                let doc = match format {
                    Format::Json => text::json_summary(r, &r.summary()),
                    _ => serde_json::to_string(r).expect("records serialize; this is a bug"),
                };
                serde_json::from_str(&doc).expect("our own JSON parses; this is a bug")
            };
            let x = b.ab();
            let doc = serde_json::json!({
                "ab": {
                    "pair": x.map(|x| x.pair.as_str()),
                    "vary": x.map(|x| x.vary.as_str()),
                    "values": [
                        a.ab().map(|x| x.value.as_str()),
                        x.map(|x| x.value.as_str()),
                    ],
                    "expect": x.map(|x| x.expect),
                    "min_effect": x.map(|x| x.min_effect),
                    "verdict": x.and_then(|x| x.verdict.as_ref()),
                },
                "a": arm(a),
                "b": arm(b),
            });
            serde_json::to_string_pretty(&doc).expect("JSON values serialize; this is a bug") + "\n"
        }
    }
}
