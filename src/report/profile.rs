//! The scheduler's one screen (`--profile`): per level, side by side, what the scheduler did
//! (queue depth, KV and budget use, preemptions), what it cost (the planner clock) and what it
//! cost the answers (decode stalls, the worst inter-token gap). Reads the record's summary only.

use std::fmt::Write;

use crate::record::profile::ProfileFigures;
use crate::record::RunRecord;

fn num(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.digits$}{unit}"))
}

fn pct(v: Option<f64>, digits: usize) -> String {
    super::percent(v, digits)
}

/// Rows of the screen: a label and the cell of one level.
type Row = (&'static str, fn(&ProfileFigures) -> String);

const ROWS: &[Row] = &[
    ("planner µs/step med", |p| num(p.plan_us_median, 1, "")),
    ("planner µs/step max", |p| num(p.plan_us_max, 1, "")),
    ("planner share of wall", |p| pct(p.plan_fraction, 3)),
    ("queue depth mean", |p| num(p.queue_mean, 2, "")),
    ("queue depth max", |p| num(p.queue_max, 0, "")),
    ("KV peak of budget", |p| pct(p.kv_peak_fraction, 1)),
    ("step budget fill", |p| pct(p.budget_fill, 1)),
    ("preemptions", |p| p.preemptions.to_string()),
    ("worst token gap ms", |p| num(p.worst_gap_ms, 0, "")),
    ("stall worst ms", |p| num(p.stall_ms_worst, 1, "")),
    ("stall ms per token", |p| num(p.stall_ms_per_token, 2, "")),
    ("stall med ms", |p| num(p.stall_ms_median, 1, "")),
    ("decode stalls", |p| p.stalls.to_string()),
];

/// The profile screen of a run.
pub(crate) fn screen(run: &RunRecord) -> String {
    let d = run.summary();
    let mut out = String::new();
    let rounds = d.levels.first().map_or(0, |l| l.rounds);
    let _ = writeln!(
        out,
        "scheduler profile: --schedule {}, {} tokens per step, {} per chunk, KV budget {} tokens ({} per level)",
        run.scheduler.schedule,
        run.scheduler.max_batch_tokens,
        run.scheduler.prefill_chunk,
        run.scheduler.kv_budget_tokens,
        super::plural(rounds, "measured round"),
    );
    let headers: Vec<String> = std::iter::once(String::new())
        .chain(d.levels.iter().map(|l| super::plural(l.jobs, "job")))
        .collect();
    let rows: Vec<Vec<String>> = ROWS
        .iter()
        .map(|(label, cell)| {
            std::iter::once(label.to_string())
                .chain(d.levels.iter().map(|l| cell(&l.profile)))
                .collect()
        })
        .collect();
    let shape = super::layout::Shape { keys: 1, left: 1 };
    out += &super::layout::table(&headers, &rows, shape, super::layout::WIDTH);
    if d.levels.iter().all(|l| l.profile.plan_us_median.is_none()) {
        let _ = writeln!(
            out,
            "n/a: this record has no scheduler timeline (it was made before the timeline was recorded)"
        );
    }
    out += "stall: a step with prompt tokens delays each running answer's next token by its time beyond a\n\
            decode-only step of the same size (a ready answer it skipped, by the whole step); per token:\n\
            stall time over every token after an answer's first. Lower is less waiting on each row.\n";
    super::layout::wrap(&out, super::layout::WIDTH)
}
