//! `tokfire report RECORD [--run ID|--last|--all] [--format …] [--html FILE]`: re-renders saved
//! runs exactly as `run`, `sweep` and `ab` printed them (an A/B arm as its pair's A/B screen),
//! or as one self-contained HTML page.

use crate::cli::ReportArgs;
use crate::config::run::Format;
use crate::record::kind::KindTag;
use crate::record::{io, RunRecord};
use crate::report::text;

pub(crate) fn run(args: ReportArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.html {
        crate::config::run::check_output("--html", path)?;
    }
    let file = io::read(&args.record)?;
    let runs = io::select(&args.record, &file, args.run.as_deref(), args.all)?;
    let items = items(&file.runs, &runs);
    let out = match args.format {
        // One CSV header over the rows of every run selected (both arms of an A/B pair).
        Format::Csv => {
            // Cold starts, sessions and prefill runs have rows of their own (a start, a step, a
            // sample), with a header each.
            let (cold, bench): (Vec<&RunRecord>, Vec<&RunRecord>) =
                items.iter().flat_map(Item::runs).partition(|r| {
                    matches!(
                        r.kind.tag(),
                        KindTag::Cold | KindTag::Session | KindTag::Prefill | KindTag::SpecCost
                    )
                });
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
            let all: Vec<String> = items
                .iter()
                .map(|i| i.render(args.format).trim_end().to_string())
                .collect();
            text::json_array(&all)
        }
        format => items
            .iter()
            .map(|i| i.render(format))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    print!("{}", crate::report::terminal_safe(&out));
    if args.profile {
        for r in runs.iter().filter(|r| {
            !matches!(
                r.kind.tag(),
                KindTag::Cold | KindTag::Session | KindTag::Prefill | KindTag::SpecCost
            )
        }) {
            let screen = crate::report::profile::screen(r);
            print!("\n{}", crate::report::terminal_safe(&screen));
        }
    }
    if let Some(path) = &args.html {
        let run = runs.last().expect("select returns at least one run");
        let page = html_page(&file.runs, run)?;
        write_file(path, &page)?;
        eprintln!("HTML report written to {}", path.display());
    }
    Ok(())
}

/// What one selected run renders as: an A/B arm as its pair (once per pair), any other run as
/// itself.
enum Item<'a> {
    Pair(&'a RunRecord, &'a RunRecord),
    Run(&'a RunRecord),
}

impl<'a> Item<'a> {
    fn runs(&self) -> Vec<&'a RunRecord> {
        match *self {
            Item::Pair(a, b) => vec![a, b],
            Item::Run(r) => vec![r],
        }
    }

    fn render(&self, format: Format) -> String {
        match *self {
            Item::Pair(a, b) => crate::report::ab::render(a, b, format),
            Item::Run(r) => text::render(r, format),
        }
    }
}

/// The selected runs as items: an A/B arm becomes its pair when the file holds both arms.
fn items<'a>(all: &'a [RunRecord], selected: &[&'a RunRecord]) -> Vec<Item<'a>> {
    let mut shown: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for &run in selected {
        let Some(ab) = run.ab() else {
            out.push(Item::Run(run));
            continue;
        };
        if shown.contains(&ab.pair.as_str()) {
            continue;
        }
        let arm = |name: &str| {
            all.iter()
                .find(|r| r.ab().is_some_and(|x| x.pair == ab.pair && x.arm == name))
        };
        match (arm("A"), arm("B")) {
            (Some(a), Some(b)) => {
                shown.push(&ab.pair);
                out.push(Item::Pair(a, b));
            }
            _ => out.push(Item::Run(run)),
        }
    }
    out
}

/// The HTML page of a run, by its kind: the charted page of a `run`/`sweep`, the plain page of
/// cold starts, a session or an A/B pair (an arm without its pair in the file is refused: a page
/// of one arm would hide the other and the verdict).
fn html_page(all: &[RunRecord], run: &RunRecord) -> anyhow::Result<String> {
    let kind_says = "the kind says so; this is a bug";
    match run.kind.tag() {
        KindTag::Cold => return Ok(crate::report::cold::html(run).expect(kind_says)),
        KindTag::Session => return Ok(crate::report::session::html(run).expect(kind_says)),
        KindTag::Prefill => return Ok(crate::report::prefill::html(run).expect(kind_says)),
        KindTag::SpecCost => return Ok(crate::report::spec_cost::html(run).expect(kind_says)),
        KindTag::AbArm => {
            return match items(all, &[run]).pop() {
                Some(Item::Pair(a, b)) => Ok(crate::report::ab::html(a, b)),
                _ => Err(anyhow::anyhow!(
                    "--html: run {} is one arm of an A/B whose other arm is not in this file; a \
                     page of one arm would hide the other and the verdict",
                    run.id
                )),
            }
        }
        KindTag::Run | KindTag::Baseline => {}
    }
    let d = run.summary();
    let (headers, rows) = text::sheet_cells(&d.levels);
    let mut verdict = text::verdict_lines(run, &d);
    verdict.push(format!("overall: {}", d.verdict.line));
    Ok(crate::report::html::page(
        run,
        &crate::report::html::SheetTable { headers, rows },
        &verdict,
    ))
}

fn write_file(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).map_err(|e| {
        anyhow::anyhow!(
            "cannot write --html {}: {e}; pass a writable path",
            path.display()
        )
    })
}
