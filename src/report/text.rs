//! Renders a run record for people and scripts: the results sheet (text, Markdown or CSV, all
//! from [`super::columns`]), the batching proof, the verdict, the one-screen summary, and the JSON
//! summary. Reads only the record.

use std::fmt::Write;

use serde::Serialize;

use super::columns::{self, IDENTITY};
use super::layout;
use super::plural;
use crate::config::run::Format;
use crate::record::kind::KindTag;
use crate::record::summary::{LevelSummary, RunSummary};
use crate::record::{RunRecord, FORMAT};

/// The sheet as aligned text, split into blocks (each starting with `jobs`) to fit the width.
fn table_text(levels: &[LevelSummary]) -> String {
    let (headers, rows) = sheet_cells(levels);
    let shape = layout::Shape { keys: 1, left: 0 };
    layout::table(&headers, &rows, shape, layout::WIDTH)
}

/// The formatted sheet (headers, one row per level) for HTML.
pub(crate) fn sheet_cells(levels: &[LevelSummary]) -> (Vec<String>, Vec<Vec<String>>) {
    let cols = columns::sheet(levels);
    let headers = cols.iter().map(|c| c.header.to_string()).collect();
    let rows = levels
        .iter()
        .map(|s| cols.iter().map(|c| (c.text)(s)).collect())
        .collect();
    (headers, rows)
}

/// Markdown: the identity columns, then every sheet column.
pub(crate) fn table_md(run: &RunRecord, levels: &[LevelSummary]) -> String {
    let cols = columns::sheet(levels);
    let headers: Vec<&str> = IDENTITY
        .iter()
        .map(|(k, _)| *k)
        .chain(cols.iter().map(|c| c.header))
        .collect();
    let id = columns::identity(run);
    let rows: Vec<Vec<String>> = levels
        .iter()
        .map(|s| {
            id.iter()
                .cloned()
                .chain(cols.iter().map(|c| (c.text)(s)))
                .collect()
        })
        .collect();
    layout::markdown(&headers, &rows)
}

/// The CSV header line (identity, then every column key).
pub(crate) fn csv_header() -> String {
    let keys: Vec<&str> = IDENTITY
        .iter()
        .map(|(k, _)| *k)
        .chain(columns::all().map(|c| c.key))
        .collect();
    keys.join(",") + "\n"
}

/// CSV rows, one per level, without the header.
pub(crate) fn csv_rows(run: &RunRecord, levels: &[LevelSummary]) -> String {
    let id: Vec<String> = columns::identity(run)
        .iter()
        .map(|v| columns::csv_escape(v))
        .collect();
    let mut out = String::new();
    for s in levels {
        let cells: Vec<String> = id
            .iter()
            .cloned()
            .chain(columns::all().map(|c| columns::csv_value(&(c.value)(s))))
            .collect();
        out += &(cells.join(",") + "\n");
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
        // The drafter's own time is counted apart from the harness's.
        let drafter = s
            .drafter_fraction
            .map_or(String::new(), |d| format!("; drafter {}", pct(Some(d), 2)));
        let _ = writeln!(
            out,
            "  {:<7} {} over {}, {} carried all {}; decode-only step {} med; prefill steps {} of wall; harness {}{drafter}",
            plural(s.jobs, "job") + ":",
            hist.join(" "),
            plural(total, "step"),
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
    super::percent(v, digits)
}

/// Per level: the verdict label, then speed and quality with every check's value and margin.
pub(crate) fn verdict_lines(run: &RunRecord, d: &RunSummary) -> Vec<String> {
    use crate::record::verdict::Aspect;
    let mut out = Vec::new();
    for v in &d.verdicts {
        out.push(format!("{:<7} {}", plural(v.jobs, "job") + ":", v.label()));
        for (aspect, name) in [(Aspect::Speed, "speed"), (Aspect::Quality, "quality")] {
            let checks: Vec<String> = v
                .checks
                .iter()
                .filter(|c| c.aspect == aspect)
                .map(|c| c.describe())
                .collect();
            if !checks.is_empty() {
                out.push(format!("          {name:<8}{}", checks.join("; ")));
            }
        }
    }
    if out.is_empty() {
        out.push(format!("no levels measured ({})", run.status.label()));
    }
    out
}

fn verdicts(run: &RunRecord, d: &RunSummary) -> String {
    let mut out = format!(
        "verdict ({}; headroom {:.0} %):\n",
        run.workload.criteria.label,
        run.config.headroom * 100.0
    );
    for l in verdict_lines(run, d) {
        let _ = writeln!(out, "  {l}");
    }
    out
}

/// The JSON summary of a run: provenance, config and derived figures, no raw samples.
#[derive(Serialize)]
struct JsonRun<'a> {
    tokfire_results: u32,
    id: &'a str,
    started_utc: &'a str,
    status: &'a crate::record::RunStatus,
    command: &'a [String],
    config: &'a crate::config::run::RunConfig,
    build: &'a crate::measure::provenance::Build,
    machine: &'a crate::measure::provenance::Machine,
    runtime: &'a crate::config::RuntimeInfo,
    scheduler: &'a crate::record::scheduler::SchedulerRecord,
    model: &'a crate::record::ModelInfo,
    workload: JsonWorkload<'a>,
    load: &'a crate::record::LoadClock,
    energy_na: &'a Option<String>,
    summary: &'a RunSummary,
}

#[derive(Serialize)]
struct JsonWorkload<'a> {
    name: &'a str,
    version: u32,
    hash: &'a str,
    source: &'a str,
    locked: bool,
    tasks: usize,
    criteria: &'a crate::workload::Criteria,
}

/// The run as the JSON summary (`--format json`), keys in the record's order.
pub(crate) fn json_summary(run: &RunRecord, d: &RunSummary) -> String {
    let w = &run.workload;
    let j = JsonRun {
        tokfire_results: FORMAT,
        id: &run.id,
        started_utc: &run.started_utc,
        status: &run.status,
        command: &run.command,
        config: &run.config,
        build: &run.build,
        machine: &run.machine,
        runtime: &run.runtime,
        scheduler: &run.scheduler,
        model: &run.model,
        workload: JsonWorkload {
            name: &w.name,
            version: w.version,
            hash: &w.hash,
            source: &w.source,
            locked: w.locked,
            tasks: w.tasks.len(),
            criteria: &w.criteria,
        },
        load: &run.load,
        energy_na: &run.energy_na,
        summary: d,
    };
    serde_json::to_string_pretty(&j).expect("summaries serialize; this is a bug")
}

/// The full stdout rendering in `format`.
pub fn render(run: &RunRecord, format: Format) -> String {
    match run.kind.tag() {
        KindTag::Cold => return super::cold::render(run, format),
        KindTag::Session => return super::session::render(run, format),
        KindTag::Prefill => return super::prefill::render(run, format),
        KindTag::SpecCost => return super::spec_cost::render(run, format),
        KindTag::Run | KindTag::AbArm | KindTag::Baseline => {}
    }
    let d = run.summary();
    match format {
        Format::Json => json_summary(run, &d) + "\n",
        Format::JsonFull => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => csv_header() + &csv_rows(run, &d.levels),
        Format::Md => format!(
            "{}\n\n{}\n```\n{}```\n\n```\n{}```\n",
            layout::wrap(&header(run), layout::WIDTH),
            table_md(run, &d.levels),
            layout::wrap(
                &format!(
                    "{}{}{}{}",
                    batching(&d.levels),
                    super::prefix::section(run, &d.levels),
                    super::baseline::section(run, &d),
                    verdicts(run, &d)
                ),
                layout::WIDTH
            ),
            layout::wrap(&super::summary::one_screen(run, &d), layout::WIDTH)
        ),
        Format::Text => layout::wrap(
            &format!(
                "{}\n\n{}\n{}{}{}\n{}\n{}",
                header(run),
                table_text(&d.levels),
                batching(&d.levels),
                super::prefix::section(run, &d.levels),
                super::baseline::section(run, &d),
                verdicts(run, &d),
                super::summary::one_screen(run, &d)
            ),
            layout::WIDTH,
        ),
    }
}

/// For a run that did not complete, a second header line: how it ended and the measured rounds
/// each level actually has (the figures below cover only those); empty for a complete run.
pub(crate) fn unfinished(run: &RunRecord) -> String {
    if run.status == crate::record::RunStatus::Complete {
        return String::new();
    }
    let done: Vec<String> = run
        .levels
        .iter()
        .map(|l| {
            let n = l.rounds.iter().filter(|r| !r.warmup).count();
            format!("{} {n} of {}", plural(l.jobs, "job"), run.config.rounds)
        })
        .collect();
    let done = if done.is_empty() {
        "none".to_string()
    } else {
        done.join(", ")
    };
    format!(
        "\nstatus: {}; measured rounds done: {done}; the figures cover only these",
        run.status.label()
    )
}

/// Pretty JSON documents as one JSON array.
pub(crate) fn json_array(docs: &[String]) -> String {
    format!("[\n{}\n]\n", docs.join(",\n"))
}

/// The sheet's first line: what ran, where, how often.
pub(crate) fn header(run: &RunRecord) -> String {
    let c = &run.config;
    format!(
        "tokfire {} · workload {} v{} · model {} · {} · {} + {} per level",
        c.verb,
        run.workload.name,
        run.workload.version,
        c.model.label(),
        run.runtime,
        plural(c.rounds, "measured round"),
        plural(c.warmup_rounds, "warm-up round"),
    ) + &unfinished(run)
        + &c.notes
            .iter()
            .map(|n| format!("\nnote: {n}"))
            .collect::<String>()
}
