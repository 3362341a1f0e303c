//! Renders a `tokfire cold` record: the clocks side by side (cold and warm medians and slowest),
//! then every start with its page-cache state, clocks, disk reads and failure reason. Reads only
//! the record.

use std::fmt::Write;

use serde::Serialize;

use super::secs;
use crate::config::run::Format;
use crate::measure::pagecache::Residency;
use crate::record::cold::{summarize, ColdRecord, ColdSummary, Counted, StartRecord};
use crate::record::RunRecord;

/// `cold --help`: the clocks, the terms and examples.
pub fn help() -> String {
    "Clocks (each start, seconds after the parent started the child process):
  main         exec, dynamic loading and runtime start, up to the child's main (after argument parsing)
  loaded       + open, header, tokenizer, weights: the model is ready
  load split   the child's own split of its load, seconds: header/tokenizer/weights/first
               touch of the mapped pages, then how the weights came in (mmap or copy)
  warm-up done + one forward of one token (as llama.cpp's warm-up run): first touch of the
               weights and kernel set-up
  first token  + the prompt's prefill and the first sample
  last token   + decode to the output limit or the stop token
  exit         the child has exited
  read         bytes the child read from storage (/proc/self/io read_bytes; page-cache hits do
               not count)
Starts: cold and warm interleaved (cold, warm, cold, …), each in a fresh process. Before a cold
start the model's files are evicted (posix_fadvise DONTNEED, checked with mincore: the resident
fraction before and after is recorded); a cold start whose files stayed more than 5 % resident is
'not cold' and kept out of both columns, with the reason and the fix (the processes that map
the file, found in /proc/*/maps; a file on tmpfs; a refused open). --private-copy cold-starts a
copy made beside the results file instead. Before a warm start the files are read into the page
cache. A start that crashes, is killed or outlives --timeout is a failed start: listed with its
reason, never dropped. Medians and the slowest start per clock. Ctrl-C (SIGINT) or SIGTERM kills
the running child and ends the run marked interrupted, keeping the starts done so far.

Examples:
  tokfire cold                                  # 5 cold + 5 warm starts of the chat workload's first task
  tokfire cold --repeat 7 --prompt 'The capital of France is' -n 16 --threads 2
  sudo tokfire cold --drop-caches --format md   # also drop the whole page cache before each cold start
  tokfire cold --model my.gguf --private-copy   # my.gguf is mapped by a running server
"
    .into()
}

fn pct(r: Option<Residency>) -> String {
    r.map_or("n/a".into(), |r| format!("{:.0} %", r.fraction() * 100.0))
}

/// The header line: what ran, where, how often.
pub fn header(run: &RunRecord, c: &ColdRecord) -> String {
    format!(
        "tokfire cold · task {}/{} · model {} · {} · {} cold + {} warm starts, each a fresh process · -n {}",
        run.workload.name,
        c.settings.task,
        run.config.model.label(),
        run.runtime,
        c.settings.repeat,
        c.settings.repeat,
        c.settings.max_tokens,
    )
}

/// Rows of the side-by-side table: clock, cold median, cold slowest, warm median, warm slowest.
fn side_by_side(s: &ColdSummary) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let headers = vec![
        "clock",
        "cold median",
        "cold slowest",
        "warm median",
        "warm slowest",
    ];
    let mut rows: Vec<Vec<String>> = s
        .cold
        .clocks
        .iter()
        .zip(&s.warm.clocks)
        .map(|(c, w)| {
            vec![
                c.clock.to_string(),
                secs(c.median_s),
                secs(c.slowest_s),
                secs(w.median_s),
                secs(w.slowest_s),
            ]
        })
        .collect();
    let bytes = |b: Option<f64>| b.map_or("n/a".into(), |b| super::bytes(b as u64));
    let frac = |f: Option<f64>| f.map_or("n/a".into(), |f| format!("{:.0} %", f * 100.0));
    rows.push(vec![
        "read (median)".into(),
        bytes(s.cold.read_bytes_median),
        String::new(),
        bytes(s.warm.read_bytes_median),
        String::new(),
    ]);
    rows.push(vec![
        "resident at start".into(),
        frac(s.cold.resident_median),
        String::new(),
        frac(s.warm.resident_median),
        String::new(),
    ]);
    (headers, rows)
}

fn start_row(s: &StartRecord) -> Vec<String> {
    let counted = match s.counted {
        Counted::Cold => "cold",
        Counted::Warm => "warm",
        Counted::NotCold => "NOT cold",
        Counted::Failed => "FAILED",
    };
    let eviction = s.eviction.as_ref().map_or("-".into(), |e| {
        let mut t = format!("{} → {}", pct(e.before), pct(e.after));
        if let Some(err) = &e.error {
            t += &format!(" ({err})");
        }
        t
    });
    let c = s.clocks.as_ref();
    let mut row = vec![
        (s.index + 1).to_string(),
        counted.into(),
        eviction,
        pct(s.residency),
        secs(c.map(|c| c.loaded_s)),
        split(s.load_split.as_ref()),
        secs(c.map(|c| c.warm_s)),
        secs(c.map(|c| c.first_token_s)),
        secs(c.map(|c| c.last_token_s)),
        s.read_bytes.map_or("n/a".into(), super::bytes),
        s.output_tokens.to_string(),
    ];
    row.push(s.failure.clone().unwrap_or_default());
    row
}

/// The child's load split, seconds: header/tokenizer/weights/first touch, how the weights
/// came in and what repacking them (inside weights) took.
fn split(l: Option<&crate::record::load::LoadSplitRecord>) -> String {
    l.map_or("n/a".into(), |l| {
        let mode = serde_json::to_value(l.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let device = l.device.as_ref().map_or(String::new(), |d| {
            format!(", device open {:.3} copy {:.3}", d.open_s, d.upload_s)
        });
        let repack = match l.repacked_bytes {
            0 => String::new(),
            _ => format!(", repack {:.3}", l.repack_s),
        };
        format!(
            "{:.3}/{:.3}/{:.3}/{:.3} {mode}{repack}{device}",
            l.header_s, l.tokenizer_s, l.weights_s, l.first_touch_s
        )
    })
}

const START_HEADERS: [&str; 12] = [
    "#",
    "start",
    "evicted (before → after)",
    "resident",
    "loaded",
    "load split s (header/tokenizer/weights/touch)",
    "warm-up done",
    "first token",
    "last token",
    "read",
    "tokens",
    "failure",
];

fn aligned(headers: &[&str], rows: &[Vec<String>]) -> String {
    let shape = super::layout::Shape { keys: 1, left: 1 };
    super::layout::table(headers, rows, shape, super::layout::WIDTH)
}

/// The closing lines: what was left out and why, and whether outputs agreed.
fn notes(run: &RunRecord, c: &ColdRecord, s: &ColdSummary) -> String {
    let mut out = String::new();
    if let crate::record::RunStatus::Interrupted { signal } = &run.status {
        let _ = writeln!(
            out,
            "interrupted by {signal} after {} of {} starts: the child running then was killed and its start is not kept",
            c.starts.len(),
            c.settings.repeat * 2
        );
    }
    let files: Vec<String> = c
        .settings
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let _ = writeln!(
        out,
        "eviction: posix_fadvise(DONTNEED) on {}{}{}, checked with mincore",
        if c.settings.private_copy {
            "a private copy (--private-copy), "
        } else {
            ""
        },
        files.join(", "),
        if c.settings.drop_caches {
            " + /proc/sys/vm/drop_caches (whole machine)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "counted: {} cold, {} warm, {} not cold (eviction did not take: more than 5 % stayed resident), {} failed",
        s.cold.starts, s.warm.starts, s.not_cold, s.failed
    );
    let quiet = crate::record::quiet::QuietFigures::of_readings(
        c.starts.iter().filter_map(|x| x.sentinel.as_ref()),
    );
    if let Some(l) = quiet.line("starts") {
        let _ = writeln!(out, "machine: {l}");
    }
    // Why the eviction did not take, once per distinct reason.
    let mut said: Vec<&str> = Vec::new();
    for w in c
        .starts
        .iter()
        .filter(|x| x.counted == Counted::NotCold)
        .filter_map(|x| x.eviction.as_ref()?.why_not.as_deref())
    {
        if !said.contains(&w) {
            said.push(w);
            let _ = writeln!(out, "not cold: {w}");
        }
    }
    for f in c.starts.iter().filter(|x| x.counted == Counted::Failed) {
        let _ = writeln!(
            out,
            "failed start {}: {}",
            f.index + 1,
            f.failure.as_deref().unwrap_or("unknown")
        );
    }
    let _ = writeln!(
        out,
        "outputs identical across starts: {}",
        if s.outputs_identical {
            "yes"
        } else {
            "no (or fewer than 2 finished)"
        }
    );
    out
}

#[derive(Serialize)]
struct JsonCold<'a> {
    id: &'a str,
    started_utc: &'a str,
    status: &'a crate::record::RunStatus,
    command: &'a [String],
    config: &'a crate::config::run::RunConfig,
    build: &'a crate::measure::provenance::Build,
    machine: &'a crate::measure::provenance::Machine,
    runtime: &'a crate::config::RuntimeInfo,
    model: &'a crate::record::ModelInfo,
    settings: &'a crate::record::cold::ColdSettings,
    summary: &'a ColdSummary,
}

/// The one sentence a cold record comes down to: exec to first token, cold and warm.
fn lead(s: &ColdSummary) -> String {
    let first = |g: &crate::record::cold::GroupSummary| {
        g.clocks
            .iter()
            .find(|c| c.clock == "first token")
            .and_then(|c| c.median_s)
            .map(|m| (m, g.starts))
    };
    match (first(&s.cold), first(&s.warm)) {
        (Some((c, n)), Some((w, m))) => format!(
            "From exec to the first token: {c:.3} s on a cold page cache, {w:.3} s warm \
             (medians of {} and {}).",
            super::plural(n, "start"),
            super::plural(m, "start")
        ),
        (Some((c, n)), None) => format!(
            "From exec to the first token: {c:.3} s on a cold page cache (median of {}); no warm \
             start finished.",
            super::plural(n, "start")
        ),
        (None, Some((w, m))) => format!(
            "From exec to the first token: {w:.3} s warm (median of {}); no start counted as \
             cold.",
            super::plural(m, "start")
        ),
        (None, None) => "No start reached its first token.".into(),
    }
}

/// The HTML page of a cold run: the lead, the clocks side by side, every start, the notes.
pub fn html(run: &RunRecord) -> Option<String> {
    use super::html_plain::{cells, page, Block};
    let c = run.cold()?;
    let s = summarize(c);
    let (h, rows) = side_by_side(&s);
    let starts: Vec<Vec<String>> = c.starts.iter().map(start_row).collect();
    let title = format!("cold starts · {}", run.config.model.label());
    let head = super::layout::wrap(
        &format!("{}\nstatus: {}", header(run, c), run.status.label()),
        super::layout::WIDTH,
    );
    Some(page(
        &title,
        &lead(&s),
        vec![
            ("Clocks", vec![Block::Pre(head), cells(&h, &rows)]),
            ("Starts", vec![cells(&START_HEADERS, &starts)]),
            ("Notes", vec![Block::Pre(notes(run, c, &s))]),
        ],
    ))
}

/// The whole stdout rendering of a cold run in `format`.
pub fn render(run: &RunRecord, format: Format) -> String {
    let Some(c) = run.cold() else {
        return format!("run {} has no cold starts\n", run.id);
    };
    let s = summarize(c);
    let (h, rows) = side_by_side(&s);
    let starts: Vec<Vec<String>> = c.starts.iter().map(start_row).collect();
    match format {
        Format::Json => {
            let j = JsonCold {
                id: &run.id,
                started_utc: &run.started_utc,
                status: &run.status,
                command: &run.command,
                config: &run.config,
                build: &run.build,
                machine: &run.machine,
                runtime: &run.runtime,
                model: &run.model,
                settings: &c.settings,
                summary: &s,
            };
            serde_json::to_string_pretty(&j).expect("summaries serialize; this is a bug") + "\n"
        }
        Format::JsonFull => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => {
            let mut out = format!("run,{}\n", START_HEADERS.join(",").replace("→", "->"));
            for r in &starts {
                let cells: Vec<String> = r
                    .iter()
                    .map(|v| crate::report::columns::csv_escape(v))
                    .collect();
                let _ = writeln!(out, "{},{}", run.id, cells.join(","));
            }
            out
        }
        Format::Md => format!(
            "{}\n\n{}\n{}\n```\n{}```\n",
            super::layout::wrap(&header(run, c), super::layout::WIDTH),
            super::layout::markdown(&h, &rows),
            super::layout::markdown(&START_HEADERS, &starts),
            super::layout::wrap(&notes(run, c, &s), super::layout::WIDTH)
        ),
        Format::Text => super::layout::wrap(
            &format!(
                "{}\nstatus: {}\n\n{}\n{}\n{}",
                header(run, c),
                run.status.label(),
                aligned(&h, &rows),
                aligned(&START_HEADERS, &starts),
                notes(run, c, &s)
            ),
            super::layout::WIDTH,
        ),
    }
}
