//! The HTML report: one self-contained page for one run (no network, scripts, fonts or images;
//! inline CSS; well-formed XML, so it parses as XHTML too). It opens with the run's one-sentence
//! verdict and the throughput chart, then the results sheet, the prefill and decode speeds, the
//! prefix cache (when on), speculation against its baseline (when on), the verdict with each level's checks nested under it, the run's
//! identity, and SVG plots computed from the record's raw samples of the measured rounds
//! (warm-up rounds are left out). Every figure that has a name in the sheet comes from the
//! stored summary, never derived again here; the plots draw the raw samples behind them:
//!
//! 0. per-job tok/s (median and slowest job) and aggregate tok/s against jobs, every job's own
//!    sample behind the lines, the axis spanning every point;
//! 1. per level, a request timeline of the last measured round: one lane per job, and for every
//!    task up to three bars, queue wait `[start, start + queue_wait]`, prefill
//!    `[start + queue_wait, start + TTFT]` and decode `[start + TTFT, start + completion]`. A task
//!    without a first token has no decode bar and its prefill bar runs to its completion. **A bar
//!    is drawn only when both its ends are finite and its length is above zero**; bars narrower
//!    than one pixel are widened to one so they can be hovered. At most 512 lanes are drawn.
//!    Steps that carried prompt tokens while sequences were decoding are shaded: there, prefill
//!    stalled the decoders. Under it, the scheduler timelines of the same round (running and
//!    waiting sequences with preemptions, KV and step budget use; `html_sched.rs`);
//! 2. TTFT and 3. completion distributions per level: every sample a dot (jittered sideways by
//!    a fixed sequence, so the page is the same on every render), the median a line;
//! 4. the batch-size histogram: decode steps by sequences carried, per level.
//!
//! Every `<svg>` has an `id` (`timeline-N`, `ttft`, `completion`, `rates`, `batch`) and every
//! bar and dot a `class` and a `<title>` tooltip. It only reads the record.

use std::fmt::Write;

use super::svg::{esc, nice_ticks, text_width, Axis, Chart, Key, Scale};
use crate::record::summary::{job_rates, LevelSummary};
use crate::record::{LevelRecord, RoundRecord, RunRecord, TaskSample};
use crate::workload::Outcome;

/// The results sheet, already formatted: one row per concurrency level.
#[derive(Debug, Clone)]
pub struct SheetTable {
    /// Column names, with units.
    pub headers: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

/// Width of every plot, pixels.
const WIDTH: f64 = 1200.0;

/// A timeline draws at most this many job lanes (a record claiming more is damaged or beyond
/// what one page can show); tasks of jobs past the last lane are left out.
const MAX_LANES: usize = 512;

pub(super) const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1240px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px}
th{background:#f2f2f2;text-align:left}td{font-variant-numeric:tabular-nums}
table.meta th{width:140px}ul.verdict{font-size:14px}p.lead{font-size:16px;margin:4px 0 12px}
pre{font-size:13px;background:#fafafa;border:1px solid #ddd;padding:8px}
svg.plot{display:block;margin:12px 0 24px;background:#fff;border:1px solid #ddd}
svg text{font-family:system-ui,sans-serif}
.title{font-size:15px;font-weight:600;fill:#222}.legend,.tick{font-size:12px;fill:#333}
.label{font-size:13px;fill:#222}.note{font-size:14px;fill:#777}
.axis{stroke:#444;stroke-width:1}.grid{stroke:#e6e6e6;stroke-width:1}
.lane{fill:#fafafa}.lane.odd{fill:#f0f0f0}
.queue{fill:#8c8c8c}.prefill{fill:#f28e2b}.decode{fill:#4e79a7}
.stall{fill:#e15759;fill-opacity:.35;stroke:#b8282f;stroke-width:1}
.barlabel{font-size:10px;fill:#111;paint-order:stroke;stroke:#fff;stroke-width:3px}
.dot{fill:#4e79a7;fill-opacity:.7;stroke:#1f3b5a;stroke-width:.5}
.median{stroke:#e15759;stroke-width:3}rect.median{fill:#e15759;stroke:none}
.medlabel{font-size:12px;font-weight:600;fill:#b8282f;paint-order:stroke;stroke:#fff;stroke-width:3px}
.r-med{fill:#4e79a7;stroke:#4e79a7}.r-slow{fill:#e15759;stroke:#e15759}
.r-agg{fill:#59a14f;stroke:#59a14f}.series{fill:none;stroke-width:2}
.sample{fill-opacity:.1;stroke-width:1.2}
.s0{fill:#4e79a7}.s1{fill:#f28e2b}.s2{fill:#59a14f}.s3{fill:#b07aa1}
.s4{fill:#76b7b2}.s5{fill:#edc948}.s6{fill:#9c755f}.s7{fill:#ff9da7}
.series.s0{stroke:#4e79a7}.series.s1{stroke:#f28e2b}.series.s2{stroke:#59a14f}
.series.s3{stroke:#b07aa1}.series.s4{stroke:#76b7b2}.series.s5{stroke:#edc948}
.series.s6{stroke:#9c755f}.series.s7{stroke:#ff9da7}.series{fill:none}";

/// One self-contained page for one run.
pub fn page(run: &RunRecord, sheet: &SheetTable, verdict: &[String]) -> String {
    let d = run.summary();
    let name = format!(
        "{} v{} · {}",
        run.workload.name,
        run.workload.version,
        run.config.model.label()
    );
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n\
         <meta charset=\"utf-8\"/>\n<title>TokFire report: {}</title>\n<style>\n{CSS}\n</style>\n\
         </head>\n<body>\n<h1>TokFire report: {}</h1>\n<p class=\"lead\">{}</p>\n",
        esc(&name),
        esc(&name),
        esc(&d.verdict.line)
    );
    out.push_str(&rates(run, &d.levels));
    out.push_str("<h2>Results</h2>\n");
    out.push_str(&table(sheet));
    out.push_str("<h2>Speeds and memory</h2>\n");
    out.push_str(&table(&speeds(&d.levels)));
    if let Some(budget) = super::prefix::budget_line(run) {
        let (headers, rows) = super::prefix::cells(&d.levels);
        let _ = write!(out, "<h2>Prefix cache</h2>\n<p>{}</p>\n", esc(&budget));
        out.push_str(&table(&SheetTable { headers, rows }));
    }
    let spec = super::baseline::section(run, &d);
    if !spec.trim().is_empty() {
        // The text screen's speculation block: flags, speedups against the baseline, acceptance.
        let text = super::layout::wrap(spec.trim_end(), super::layout::WIDTH);
        let _ = writeln!(out, "<h2>Speculation</h2>\n<pre>{}</pre>", esc(&text));
        if let Some(t) = super::html_spec::by_position(&d.levels) {
            out.push_str("<p>Acceptance by draft position (accepted ÷ proposed there):</p>\n");
            out.push_str(&table(&t));
        }
        if let Some(t) = super::html_spec::kept_histogram(&d.levels) {
            out.push_str("<p>Verifies by drafted tokens kept:</p>\n");
            out.push_str(&table(&t));
        }
    }
    out.push_str("<h2>Verdict</h2>\n");
    out.push_str(&verdict_list(verdict));
    out.push_str("<h2>Run</h2>\n");
    out.push_str(&meta(run, &d));
    out.push_str("<h2>Request timelines</h2>\n");
    for (i, level) in run.levels.iter().enumerate() {
        out.push_str(&timeline(level, i));
        out.push_str(&super::html_sched::charts(run, level, i));
    }
    if run.levels.is_empty() {
        out.push_str("<p>No level was run, so there is no timeline.</p>\n");
    }
    out.push_str("<h2>Distributions and batch sizes</h2>\n");
    out.push_str(&distribution(run, Metric::Ttft));
    out.push_str(&distribution(run, Metric::Completion));
    out.push_str(&batch_histogram(&d.levels));
    out.push_str("</body>\n</html>\n");
    out
}

/// Prefill and decode speeds per level, from the summary: prompt tokens/s and decode tokens/s per
/// sequence (1 ÷ median time per output token), as the one-screen summary's clocks line; then
/// the KV peak and, for a hybrid model, its recurrent state and the sum (the state peak).
fn speeds(levels: &[LevelSummary]) -> SheetTable {
    let hybrid = levels.iter().any(|s| s.peak_state_bytes > 0);
    let mut headers = vec![
        "jobs",
        "prefill tok/s",
        "decode tok/s per sequence",
        "KV peak",
    ];
    if hybrid {
        headers.extend(["recurrent state peak", "state peak (KV + recurrent)"]);
    }
    let rows = levels
        .iter()
        .map(|s| {
            let mut row = vec![
                s.jobs.to_string(),
                s.prompt_tok_s.map_or("n/a".into(), |v| format!("{v:.0}")),
                s.tpot_median_s
                    .filter(|t| *t > 0.0)
                    .map_or("n/a".into(), |t| format!("{:.1}", 1.0 / t)),
                super::bytes(s.peak_kv_bytes),
            ];
            if hybrid {
                row.push(super::bytes(s.peak_state_bytes));
                row.push(super::bytes(s.peak_kv_bytes + s.peak_state_bytes));
            }
            row
        })
        .collect();
    SheetTable {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// The verdict lines as a list, each indented line nested under the line above it (a level's
/// speed and quality checks under the level's label).
fn verdict_list(lines: &[String]) -> String {
    let mut out = String::from("<ul class=\"verdict\">\n");
    let mut open = false;
    for line in lines {
        let nested = line.starts_with(' ');
        match (nested, open) {
            (true, false) => {
                out.push_str("<ul>\n");
                open = true;
            }
            (false, true) => {
                out.push_str("</ul></li>\n");
                open = false;
            }
            (false, false) if !out.ends_with("\">\n") => out.push_str("</li>\n"),
            _ => {}
        }
        match nested {
            true => {
                let _ = writeln!(out, "<li>{}</li>", esc(line.trim()));
            }
            false => {
                let _ = write!(out, "<li>{}", esc(line));
            }
        }
    }
    match (open, lines.is_empty()) {
        (true, _) => out.push_str("</ul></li>\n"),
        (false, false) => out.push_str("</li>\n"),
        _ => {}
    }
    out.push_str("</ul>\n");
    out
}

/// The run's identity as a two-column table.
fn meta(run: &RunRecord, d: &crate::record::summary::RunSummary) -> String {
    let sha = crate::fmt::hash_prefix(&run.model.sha256);
    let status = match super::text::unfinished(run) {
        u if u.is_empty() => run.status.label(),
        u => u.trim_start().trim_start_matches("status: ").to_string(),
    };
    let rows = [
        (
            "workload",
            format!("{} v{}", run.workload.name, run.workload.version),
        ),
        (
            "model",
            format!("{} (sha256 {sha})", run.config.model.label()),
        ),
        ("runtime", run.runtime.to_string()),
        (
            "kernel level",
            match run.runtime.level_by.as_str() {
                "" => "n/a (candle's kernels, or a record from before it was kept)".into(),
                by => by.to_string(),
            },
        ),
        ("run id", run.id.clone()),
        ("started (UTC)", run.started_utc.clone()),
        ("status", status),
        (
            "machine",
            super::summary::machine_line(d)
                .unwrap_or_else(|| "n/a (no sentinel readings in this record)".into()),
        ),
        ("git commit", run.build.git_commit.clone()),
        ("command", run.command.join(" ")),
    ];
    let mut out = String::from("<table class=\"meta\">\n");
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    out.push_str("</table>\n");
    out
}

/// The sheet as an HTML table.
pub(super) fn table(sheet: &SheetTable) -> String {
    let mut out = String::from("<table class=\"sheet\">\n<thead><tr>");
    for h in &sheet.headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &sheet.rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", esc(&super::layout::glue_units(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// "1 job", "3 jobs".
fn jobs_label(n: usize) -> String {
    super::plural(n, "job")
}

/// Seconds in the unit that reads best; "n/a" when not finite.
fn secs(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "n/a".into()
    } else if a >= 1.0 {
        format!("{v:.2} s")
    } else if a >= 1e-3 {
        format!("{:.1} ms", v * 1e3)
    } else {
        format!("{:.0} µs", v * 1e6)
    }
}

fn measured(level: &LevelRecord) -> impl Iterator<Item = &RoundRecord> {
    level.rounds.iter().filter(|r| !r.warmup)
}

/// The bars of one task: (class, start, end), seconds after the round's start, by the rule in
/// the module docs.
fn phases(t: &TaskSample) -> Vec<(&'static str, f64, f64)> {
    let a = t.start_s;
    let q = a + t.queue_wait_s;
    let e = a + t.completion_s;
    let mut v = vec![("queue", a, q)];
    match t.ttft_s {
        Some(f) => v.extend([("prefill", q, a + f), ("decode", a + f, e)]),
        None => v.push(("prefill", q, e)),
    }
    v.retain(|(_, s, e)| s.is_finite() && e.is_finite() && e > s);
    v
}

fn outcome(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail { .. } => "fail",
        Outcome::Abstain { .. } => "abstain",
    }
}

/// Per level: the request timeline of its last measured round.
fn timeline(level: &LevelRecord, i: usize) -> String {
    let id = format!("timeline-{i}");
    let n_measured = measured(level).count();
    let Some(round) = measured(level).last() else {
        let title = format!(
            "Request timeline, {}: no measured round",
            jobs_label(level.jobs)
        );
        let mut c = Chart::new(&id, WIDTH, 120.0, &title);
        c.empty("no measured round in this level");
        return c.finish();
    };
    let lanes = (round.tasks.iter())
        .map(|t| t.job.saturating_add(1))
        .chain([level.jobs, 1])
        .max()
        .map_or(1, |n| n.min(MAX_LANES));
    let lane_h = (420.0 / lanes as f64).clamp(6.0, 36.0);
    // The sentinel's word on this very round: a disturbed round is marked in its title.
    let mark = match round.sentinel.as_ref() {
        Some(s) if s.disturbed => format!(
            " — DISTURBED: {}",
            s.why.as_deref().unwrap_or("other work on the machine")
        ),
        _ => String::new(),
    };
    let title = format!(
        "Request timeline, {}: measured round {n_measured} of {n_measured} (round index {}){mark}",
        jobs_label(level.jobs),
        round.index
    );
    let mut c = Chart::new(&id, WIDTH, 64.0 + lanes as f64 * lane_h + 50.0, &title);
    let end = round
        .tasks
        .iter()
        .flat_map(phases)
        .map(|p| p.2)
        .chain(round.steps.iter().map(|s| s.at_s + s.step_s))
        .chain([round.wall_s])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (ticks, dec) = nice_ticks(0.0, end, 10);
    let x = Scale::new(ticks[0], ticks[ticks.len() - 1], c.left, c.right);
    let y = Scale::new(0.0, lanes as f64, c.top, c.bottom);
    let every = lanes.div_ceil(24);
    let lane_ticks = (0..lanes)
        .step_by(every)
        .map(|j| (j as f64 + 0.5, format!("job {j}")))
        .collect();
    let ya = Axis {
        label: "job".into(),
        ticks: lane_ticks,
    };
    for j in 0..lanes {
        let class = if j % 2 == 1 { "lane odd" } else { "lane" };
        c.rect(
            c.left,
            y.at(j as f64),
            c.right - c.left,
            lane_h,
            class,
            None,
        );
    }
    let xa = Axis::numeric("time since the round's start (s)", &ticks, dec);
    c.axes(&x, &xa, &y, &ya);
    for t in round.tasks.iter().filter(|t| t.job < lanes) {
        task_bars(&mut c, t, &x, y.at(t.job as f64), lane_h);
    }
    let stalls = stall_bands(&mut c, round, &x);
    let stall_key = match stalls {
        0 => "prefill stalled decoders (none in this round)".to_string(),
        n => format!("prefill stalled decoders ({n} step{})", plural(n)),
    };
    c.legend(&[
        Key::bar("queue", "queue wait"),
        Key::bar("prefill", "prefill (to first token)"),
        Key::bar("decode", "decode"),
        Key::bar("stall", &stall_key),
    ]);
    c.finish()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Shades the steps that carried prompt tokens while others decoded; returns how many.
fn stall_bands(c: &mut Chart, round: &RoundRecord, x: &Scale) -> usize {
    let mut n = 0;
    for s in &round.steps {
        let (a, b) = (s.at_s, s.at_s + s.step_s);
        if s.prefill_tokens == 0 || s.decode_tokens == 0 || !(a.is_finite() && b.is_finite()) {
            continue;
        }
        let tip = format!(
            "step at {}: {} prompt + {} decode tokens over {} sequences, {}; the decoders waited \
             for this prefill",
            secs(a),
            s.prefill_tokens,
            s.decode_tokens,
            s.seqs,
            secs(s.step_s)
        );
        let w = (x.at(b) - x.at(a)).max(1.0);
        let (top, h) = (c.top, c.bottom - c.top);
        c.rect(x.at(a), top, w, h, "stall", Some(&tip));
        n += 1;
    }
    n
}

/// One task's bars in its lane, and its name where the bars leave room for it.
fn task_bars(c: &mut Chart, t: &TaskSample, x: &Scale, lane_top: f64, lane_h: f64) {
    let ps = phases(t);
    let pad = (lane_h * 0.15).min(4.0);
    for (class, a, b) in &ps {
        let tip = format!(
            "{} · job {} · {}: {} ({} to {}) · {}",
            t.task,
            t.job,
            class,
            secs(b - a),
            secs(*a),
            secs(*b),
            outcome(&t.outcome)
        );
        let w = (x.at(*b) - x.at(*a)).max(1.0);
        let class = format!("bar {class}");
        c.rect(
            x.at(*a),
            lane_top + pad,
            w,
            lane_h - 2.0 * pad,
            &class,
            Some(&tip),
        );
    }
    let (Some(first), Some(last)) = (ps.first(), ps.last()) else {
        return;
    };
    let width = x.at(last.2) - x.at(first.1);
    if lane_h >= 16.0 && width > text_width(&t.task, 10.0) + 8.0 {
        let y = lane_top + lane_h / 2.0 + 3.5;
        c.text(x.at(first.1) + 4.0, y, "start", "barlabel", &t.task);
    }
}

/// Which per-request figure a distribution plot shows.
#[derive(Clone, Copy)]
enum Metric {
    Ttft,
    Completion,
}

impl Metric {
    fn id(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Completion => "completion",
        }
    }

    fn of(self, t: &TaskSample) -> Option<f64> {
        match self {
            Metric::Ttft => t.ttft_s,
            Metric::Completion => Some(t.completion_s),
        }
        .filter(|v| v.is_finite())
    }
}

/// A fixed sideways offset in [-0.5, 0.5) for the k-th dot (the golden-ratio sequence).
fn jitter(k: usize) -> f64 {
    (k as f64 * 0.618_033_988_749_895).fract() - 0.5
}

/// Per level, every measured sample of `m` as a dot and its median as a line.
fn distribution(run: &RunRecord, m: Metric) -> String {
    let (what, axis) = match m {
        Metric::Ttft => ("TTFT", "TTFT: submission to first token (s)"),
        Metric::Completion => ("Completion", "completion: submission to last token (s)"),
    };
    let per_level: Vec<Vec<(&RoundRecord, &TaskSample, f64)>> = run
        .levels
        .iter()
        .map(|l| {
            let samples = measured(l).flat_map(|r| r.tasks.iter().map(move |t| (r, t)));
            samples
                .filter_map(|(r, t)| m.of(t).map(|v| (r, t, v)))
                .collect()
        })
        .collect();
    let missing: usize = run
        .levels
        .iter()
        .flat_map(|l| measured(l).flat_map(|r| &r.tasks))
        .filter(|t| m.of(t).is_none())
        .count();
    let mut title = format!("{what} per request, by level (measured rounds)");
    if missing > 0 {
        let _ = write!(title, "; {missing} without a value not drawn");
    }
    let mut c = Chart::new(m.id(), WIDTH, 380.0, &title);
    let hi = per_level.iter().flatten().map(|s| s.2).fold(0.0, f64::max);
    if per_level.iter().all(|v| v.is_empty()) {
        c.empty("no measured samples");
        return c.finish();
    }
    let (ticks, dec) = nice_ticks(0.0, hi, 6);
    let y = Scale::new(ticks[0], ticks[ticks.len() - 1], c.bottom, c.top);
    let n = run.levels.len() as f64;
    let x = Scale::new(0.0, n, c.left, c.right);
    let xa = Axis {
        label: "concurrency level".into(),
        ticks: (run.levels.iter().enumerate())
            .map(|(i, l)| (i as f64 + 0.5, jobs_label(l.jobs)))
            .collect(),
    };
    c.axes(&x, &xa, &y, &Axis::numeric(axis, &ticks, dec));
    let band = x.at(1.0) - x.at(0.0);
    for (i, samples) in per_level.iter().enumerate() {
        let cx = x.at(i as f64 + 0.5);
        for (k, (r, t, v)) in samples.iter().enumerate() {
            let tip = format!(
                "{} · job {} · round index {}: {}",
                t.task,
                t.job,
                r.index,
                secs(*v)
            );
            c.circle(
                cx + jitter(k) * band * 0.5,
                y.at(*v),
                3.5,
                "dot",
                Some(&tip),
            );
        }
        let values: Vec<f64> = samples.iter().map(|s| s.2).collect();
        if let Some(med) = crate::measure::stats::median(&values) {
            let half = band * 0.35;
            c.line(cx - half, y.at(med), cx + half, y.at(med), "median");
            let label = format!("median {med:.3} s");
            c.text(cx - half, y.at(med) - 6.0, "start", "medlabel", &label);
        }
    }
    c.legend(&[
        Key::dot("dot", "one request"),
        Key::bar("median", "median of the level"),
    ]);
    c.finish()
}

/// One line of the throughput plot: CSS class, legend label, (jobs, tok/s) points.
type Series = (&'static str, &'static str, Vec<(usize, f64)>);

/// The three throughput lines from the levels' summaries, finite points only.
fn rate_series(sums: &[LevelSummary]) -> [Series; 3] {
    let pick = |f: fn(&LevelSummary) -> Option<f64>| -> Vec<(usize, f64)> {
        (sums.iter())
            .filter_map(|s| f(s).filter(|v| v.is_finite()).map(|v| (s.jobs, v)))
            .collect()
    };
    [
        ("r-agg", "aggregate tok/s (median over rounds)", {
            pick(|s| s.aggregate_tok_s)
        }),
        (
            "r-med",
            "per-job tok/s, median",
            pick(|s| s.job_tok_s_median),
        ),
        ("r-slow", "per-job tok/s, slowest job", {
            pick(|s| s.job_tok_s_slowest)
        }),
    ]
}

/// Per-job tok/s (median and slowest job) and aggregate tok/s against jobs.
fn rates(run: &RunRecord, sums: &[LevelSummary]) -> String {
    let title = "Throughput against jobs (measured rounds)";
    let mut c = Chart::new("rates", WIDTH, 380.0, title);
    let series = rate_series(sums);
    // The axis spans every point drawn: the lines and each job's own samples behind them.
    let samples = (run.levels.iter())
        .flat_map(|l| measured(l).flat_map(job_rates).map(|(_, v)| v))
        .filter(|v| v.is_finite());
    let hi = (series.iter())
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .chain(samples)
        .fold(0.0, f64::max);
    if hi <= 0.0 {
        c.empty("no measured throughput");
        return c.finish();
    }
    let jobs: Vec<usize> = sums.iter().map(|s| s.jobs).collect();
    let (lo_j, hi_j) = (jobs.iter().min(), jobs.iter().max());
    let (lo_j, hi_j) = (*lo_j.unwrap_or(&1) as f64, *hi_j.unwrap_or(&1) as f64);
    let pad = ((hi_j - lo_j) * 0.05).max(0.5);
    let x = Scale::new(lo_j - pad, hi_j + pad, c.left, c.right);
    let (ticks, dec) = nice_ticks(0.0, hi, 6);
    let y = Scale::new(ticks[0], ticks[ticks.len() - 1], c.bottom, c.top);
    let xa = Axis {
        label: "concurrent jobs".into(),
        ticks: jobs.iter().map(|&j| (j as f64, j.to_string())).collect(),
    };
    c.axes(&x, &xa, &y, &Axis::numeric("output tokens/s", &ticks, dec));
    per_job_samples(&mut c, run, &x, &y);
    for ((class, label, points), r) in series.iter().zip([7.0, 5.0, 3.5]) {
        let px: Vec<(f64, f64)> = (points.iter())
            .map(|(j, v)| (x.at(*j as f64), y.at(*v)))
            .collect();
        c.polyline(&px, &format!("series {class}"));
        for ((j, v), (cx, cy)) in points.iter().zip(&px) {
            let tip = format!("{}: {label} {v:.1}", jobs_label(*j));
            c.circle(*cx, *cy, r, class, Some(&tip));
        }
    }
    let mut keys: Vec<Key> = series.iter().map(|s| Key::dot(s.0, s.1)).collect();
    keys.push(Key::dot("r-med sample", "one job in one round"));
    c.legend(&keys);
    c.finish()
}

/// Every (job, round) tok/s sample as a small hollow dot behind the per-job lines.
fn per_job_samples(c: &mut Chart, run: &RunRecord, x: &Scale, y: &Scale) {
    for l in &run.levels {
        for r in measured(l) {
            for (j, v) in job_rates(r).into_iter().filter(|(_, v)| v.is_finite()) {
                let tip = format!(
                    "{}: job {j}, round index {}: {v:.1} tok/s",
                    jobs_label(l.jobs),
                    r.index
                );
                c.circle(
                    x.at(l.jobs as f64),
                    y.at(v),
                    2.0,
                    "r-med sample",
                    Some(&tip),
                );
            }
        }
    }
}

/// Decode steps by sequences carried, one bar per level in each group.
fn batch_histogram(levels: &[LevelSummary]) -> String {
    let title = "Batch sizes: decode steps by sequences carried (measured rounds)";
    let mut c = Chart::new("batch", WIDTH, 380.0, title);
    let hists: Vec<_> = levels
        .iter()
        .map(|l| (l.jobs, &l.decode_steps_by_seqs))
        .collect();
    let mut sizes: Vec<usize> = hists.iter().flat_map(|h| h.1.keys().copied()).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let hi = hists.iter().flat_map(|h| h.1.values()).max().copied();
    let Some(hi) = hi.filter(|_| !sizes.is_empty()) else {
        c.empty("no decode steps in measured rounds");
        return c.finish();
    };
    let (ticks, _) = nice_ticks(0.0, (hi as f64).max(5.0), 6);
    let y = Scale::new(ticks[0], ticks[ticks.len() - 1], c.bottom, c.top);
    let x = Scale::new(0.0, sizes.len() as f64, c.left, c.right);
    let xa = Axis {
        label: "sequences in the decode step".into(),
        ticks: (sizes.iter().enumerate())
            .map(|(i, s)| (i as f64 + 0.5, s.to_string()))
            .collect(),
    };
    c.axes(&x, &xa, &y, &Axis::numeric("decode steps", &ticks, 0));
    let group = x.at(1.0) - x.at(0.0);
    // Bars at most 70 px wide, the group centred on its tick.
    let bar = (group * 0.8 / hists.len().max(1) as f64).min(70.0);
    let offset = (group - bar * hists.len() as f64) / 2.0;
    for (li, (jobs, h)) in hists.iter().enumerate() {
        for (si, size) in sizes.iter().enumerate() {
            let n = h.get(size).copied().unwrap_or(0);
            let left = x.at(si as f64) + offset + li as f64 * bar;
            let tip = format!(
                "{}: {n} decode step{} carried {size} sequence{}",
                jobs_label(*jobs),
                plural(n),
                plural(*size)
            );
            let class = format!("hbar s{}", li % 8);
            let top = y.at(n as f64);
            c.rect(left, top, bar * 0.95, c.bottom - top, &class, Some(&tip));
        }
    }
    let keys: Vec<Key> = (hists.iter().enumerate())
        .map(|(i, (j, _))| Key::bar(&format!("s{}", i % 8), &jobs_label(*j)))
        .collect();
    c.legend(&keys);
    c.finish()
}
