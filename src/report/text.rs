//! Renders a run record for people: the results sheet (text, Markdown or CSV), the batching
//! proof, the verdict and the one-screen summary. Reads only the record.

use std::fmt::Write;

use crate::config::run::Format;
use crate::record::summary::{self as sheet, LevelSummary};
use crate::record::verdict::{self, LevelVerdict};
use crate::record::RunRecord;

/// Everything derived from a record that renderers show.
pub struct Derived {
    pub levels: Vec<LevelSummary>,
    pub verdicts: Vec<LevelVerdict>,
}

/// Computes the sheet and verdicts of a record.
pub fn derive(run: &RunRecord) -> Derived {
    let levels: Vec<LevelSummary> = run.levels.iter().map(sheet::summarize).collect();
    let verdicts = levels
        .iter()
        .map(|s| verdict::judge(s, &run.workload.criteria))
        .collect();
    Derived { levels, verdicts }
}

fn f(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

fn mem(v: Option<u64>) -> String {
    v.map_or("n/a".into(), super::bytes)
}

const COLUMNS: [&str; 11] = [
    "jobs",
    "done/tried",
    "TTFT med s",
    "compl med s",
    "compl tail s",
    "job tok/s med",
    "slowest job",
    "agg tok/s",
    "peak mem",
    "fails",
    "abstain",
];

fn row(s: &LevelSummary) -> [String; 11] {
    [
        s.jobs.to_string(),
        format!("{}/{}", s.completed, s.attempted),
        f(s.ttft_median_s, 3),
        f(s.completion_median_s, 2),
        format!("{} ({})", f(s.completion_tail_s, 2), s.tail_kind),
        f(s.job_tok_s_median, 1),
        f(s.job_tok_s_slowest, 1),
        f(s.aggregate_tok_s, 1),
        mem(s.peak_rss_bytes),
        s.failed.to_string(),
        s.abstained.to_string(),
    ]
}

/// The sheet as aligned text.
fn table_text(levels: &[LevelSummary]) -> String {
    let rows: Vec<[String; 11]> = levels.iter().map(row).collect();
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([COLUMNS[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..COLUMNS.len()).map(width).collect();
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(COLUMNS.to_vec());
    for r in &rows {
        out += &line(r.iter().map(String::as_str).collect());
    }
    out
}

fn table_md(levels: &[LevelSummary]) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len())
    );
    for s in levels {
        out += &format!("| {} |\n", row(s).join(" | "));
    }
    out
}

fn table_csv(levels: &[LevelSummary]) -> String {
    let head = "jobs,rounds,attempted,completed,passed,failed,abstained,ttft_median_s,ttft_tail_s,completion_median_s,completion_tail_s,tail_kind,job_tok_s_median,job_tok_s_slowest,aggregate_tok_s,prompt_tok_s,peak_rss_bytes,peak_kv_bytes,full_step_fraction,harness_fraction,decode_step_ms_median,prefill_step_fraction\n";
    let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    let mut out = head.to_string();
    for s in levels {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            s.jobs,
            s.rounds,
            s.attempted,
            s.completed,
            s.passed,
            s.failed,
            s.abstained,
            o(s.ttft_median_s),
            o(s.ttft_tail_s),
            o(s.completion_median_s),
            o(s.completion_tail_s),
            s.tail_kind,
            o(s.job_tok_s_median),
            o(s.job_tok_s_slowest),
            o(s.aggregate_tok_s),
            o(s.prompt_tok_s),
            s.peak_rss_bytes.map_or(String::new(), |b| b.to_string()),
            s.peak_kv_bytes,
            o(s.full_step_fraction),
            o(s.harness_fraction),
            o(s.decode_step_ms_median),
            o(s.prefill_step_fraction),
        );
    }
    out
}

/// What the scheduler actually did, per level.
fn batching(levels: &[LevelSummary]) -> String {
    let mut out = String::from("batching (decode steps by sequences carried):\n");
    for s in levels {
        let total: usize = s.decode_steps_by_seqs.values().sum();
        let hist: Vec<String> = s
            .decode_steps_by_seqs
            .iter()
            .map(|(k, n)| format!("{k}:{:.0}%", 100.0 * *n as f64 / total.max(1) as f64))
            .collect();
        let _ = writeln!(
            out,
            "  {} job{}: {} over {} steps, {} carried all {}; decode-only step {} med; prefill steps {} of wall; harness {}",
            s.jobs,
            if s.jobs == 1 { " " } else { "s" },
            hist.join(" "),
            total,
            pct(s.full_step_fraction, 0),
            s.jobs,
            s.decode_step_ms_median
                .map_or("n/a".into(), |v| format!("{v:.1} ms")),
            pct(s.prefill_step_fraction, 0),
            pct(s.harness_fraction, 2),
        );
    }
    out
}

/// A fraction as a percentage with `digits` decimals, or `n/a`.
fn pct(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{:.digits$} %", v * 100.0))
}

fn verdicts(run: &RunRecord, d: &Derived) -> String {
    let mut out = format!("verdict ({}):\n", run.workload.criteria.label);
    for v in &d.verdicts {
        let what = if v.comfortable {
            "comfortable".to_string()
        } else {
            format!("not comfortable: {}", v.failed.join("; "))
        };
        let _ = writeln!(
            out,
            "  {} job{}: {what}",
            v.jobs,
            if v.jobs == 1 { " " } else { "s" }
        );
    }
    out
}

/// The full stdout rendering in `format`.
pub fn render(run: &RunRecord, format: Format) -> String {
    let d = derive(run);
    match format {
        Format::Json => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => table_csv(&d.levels),
        Format::Md => format!(
            "{}\n\n{}\n```\n{}{}```\n\n```\n{}```\n",
            header(run),
            table_md(&d.levels),
            batching(&d.levels),
            verdicts(run, &d),
            super::summary::one_screen(run, &d)
        ),
        Format::Text => format!(
            "{}\n\n{}\n{}\n{}\n{}",
            header(run),
            table_text(&d.levels),
            batching(&d.levels),
            verdicts(run, &d),
            super::summary::one_screen(run, &d)
        ),
    }
}

fn header(run: &RunRecord) -> String {
    let c = &run.config;
    format!(
        "tokfire {} · workload {} v{} · model {} · {} · {} measured round{} + {} warm-up per level",
        c.verb,
        run.workload.name,
        run.workload.version,
        c.model.model,
        run.runtime,
        c.rounds,
        if c.rounds == 1 { "" } else { "s" },
        c.warmup_rounds
    )
}
