//! `tokfire report RECORD [--run ID|--last|--all] [--format …] [--html FILE]`: re-renders saved
//! runs exactly as `run`, `sweep` and `ab` printed them (an A/B arm as its pair's A/B screen),
//! or as one self-contained HTML page.

use crate::cli::ReportArgs;
use crate::config::run::Format;
use crate::record::{io, RunRecord};
use crate::report::text;

pub(crate) fn run(args: ReportArgs) -> anyhow::Result<()> {
    let file = io::read(&args.record)?;
    let runs = io::select(&args.record, &file, args.run.as_deref(), args.all)?;
    let out = match args.format {
        // One CSV header over the rows of every run selected.
        Format::Csv => {
            // Cold starts and sessions have rows of their own (a start, a step), with a header each.
            let (cold, bench): (Vec<&crate::record::RunRecord>, Vec<_>) = runs
                .iter()
                .copied()
                .partition(|r| r.cold.is_some() || r.session.is_some());
            let rows: String = bench
                .iter()
                .map(|r| text::csv_rows(r, &r.summary().levels))
                .collect();
            let cold: String = cold.iter().map(|r| text::render(r, Format::Csv)).collect();
            match (bench.is_empty(), cold.is_empty()) {
                (true, false) => cold,
                (false, false) => text::csv_header() + &rows + &cold,
                _ => text::csv_header() + &rows,
            }
        }
        Format::Json | Format::JsonFull if args.all => {
            let all: Vec<String> = runs
                .iter()
                .map(|r| match args.format {
                    Format::Json => text::json_summary(r, &r.summary()),
                    _ => serde_json::to_string_pretty(r).expect("records serialize; this is a bug"),
                })
                .collect();
            text::json_array(&all)
        }
        Format::Text => text_screens(&file.runs, &runs),
        format => runs
            .iter()
            .map(|r| text::render(r, format))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    print!("{out}");
    if args.profile {
        for r in runs.iter().filter(|r| r.cold.is_none()) {
            print!("\n{}", crate::report::profile::screen(r));
        }
    }
    if let Some(path) = &args.html {
        let page = html_page(runs.last().expect("select returns at least one run"));
        write_file(path, &page)?;
        eprintln!("HTML report written to {}", path.display());
    }
    Ok(())
}

/// Each selected run as its verb printed it: an A/B arm as the A/B screen of its pair (once per
/// pair, with the verdict and the noise sentinel), any other run as its sheet.
fn text_screens(all: &[RunRecord], selected: &[&RunRecord]) -> String {
    let mut shown: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for run in selected {
        let Some(ab) = &run.ab else {
            out.push(text::render(run, Format::Text));
            continue;
        };
        if shown.contains(&ab.pair.as_str()) {
            continue;
        }
        let arm = |name: &str| {
            all.iter().find(|r| {
                r.ab.as_ref()
                    .is_some_and(|x| x.pair == ab.pair && x.arm == name)
            })
        };
        match (arm("A"), arm("B")) {
            (Some(a), Some(b)) => {
                shown.push(&ab.pair);
                out.push(crate::report::ab::screen(a, b));
            }
            _ => out.push(text::render(run, Format::Text)),
        }
    }
    out.join("\n")
}

fn html_page(run: &crate::record::RunRecord) -> String {
    let d = run.summary();
    let (headers, rows) = text::sheet_cells(&d.levels);
    let mut verdict = text::verdict_lines(run, &d);
    verdict.push(format!("overall: {}", d.verdict.line));
    crate::report::html::page(
        run,
        &crate::report::html::SheetTable { headers, rows },
        &verdict,
    )
}

fn write_file(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| {
        anyhow::anyhow!(
            "cannot write --html {}: {e}; pass a writable path",
            path.display()
        )
    })
}
