//! The HTML report's scheduler timelines, drawn under each level's request timeline from the
//! same (last measured) round's per-step timeline rows: sequences running and waiting with the
//! steps that preempted marked, and KV tokens held and step tokens used as shares of their
//! budgets. Every `<svg>` has an id (`sched-N`, `budget-N`); it only reads the record.

use super::svg::{nice_ticks, Axis, Chart, Key, Scale};
use crate::record::profile::PlanRow;
use crate::record::{LevelRecord, RoundRecord, RunRecord};

/// Width of every plot, pixels (as the rest of the page).
const WIDTH: f64 = 1200.0;

/// One line: CSS class, legend label, a value per timeline row.
type Line = (&'static str, &'static str, fn(&PlanRow, &Budgets) -> f64);

/// The budgets shares are taken of.
struct Budgets {
    kv: f64,
    step: f64,
}

const SEQS: &[Line] = &[
    ("r-med", "running sequences", |r, _| r.running as f64),
    ("r-slow", "waiting requests (queue depth)", |r, _| {
        r.waiting as f64
    }),
];

const SHARES: &[Line] = &[
    ("r-agg", "KV tokens held / KV budget (%)", |r, b| {
        100.0 * r.kv_tokens as f64 / b.kv
    }),
    ("r-med", "step tokens / --max-batch-tokens (%)", |r, b| {
        100.0 * r.tokens() as f64 / b.step
    }),
];

/// The two scheduler charts of level `i`.
pub(crate) fn charts(run: &RunRecord, level: &LevelRecord, i: usize) -> String {
    let Some(round) = level.rounds.iter().rfind(|r| !r.warmup) else {
        return String::new();
    };
    let b = Budgets {
        kv: run.scheduler.kv_budget_tokens.max(1) as f64,
        step: run.scheduler.max_batch_tokens.max(1) as f64,
    };
    let title = format!("Scheduler, level {}: sequences per step", i + 1);
    let mut out = chart(&format!("sched-{i}"), &title, round, &b, SEQS, "sequences");
    let title = format!("Scheduler, level {}: budget use per step", i + 1);
    out += &chart(
        &format!("budget-{i}"),
        &title,
        round,
        &b,
        SHARES,
        "% of budget",
    );
    out
}

fn chart(
    id: &str,
    title: &str,
    round: &RoundRecord,
    b: &Budgets,
    lines: &[Line],
    unit: &str,
) -> String {
    let mut c = Chart::new(id, WIDTH, 260.0, title);
    let n = round.timeline.len().min(round.steps.len());
    if n == 0 {
        c.empty("no scheduler timeline in this round (recorded before it existed)");
        return c.finish();
    }
    let at = |k: usize| round.steps[k].at_s;
    let end = (0..n)
        .map(|k| round.steps[k].at_s + round.steps[k].step_s)
        .chain([round.wall_s])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let hi = (round.timeline[..n].iter())
        .flat_map(|r| lines.iter().map(move |l| (l.2)(r, b)))
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let (xt, xd) = nice_ticks(0.0, end, 10);
    let (yt, yd) = nice_ticks(0.0, hi, 5);
    let x = Scale::new(xt[0], xt[xt.len() - 1], c.left, c.right);
    let y = Scale::new(yt[0], yt[yt.len() - 1], c.bottom, c.top);
    let xa = Axis::numeric("time since the round's start (s)", &xt, xd);
    c.axes(&x, &xa, &y, &Axis::numeric(unit, &yt, yd));
    let mut keys = Vec::new();
    for (class, label, value) in lines {
        let points: Vec<(f64, f64)> = (0..n)
            .map(|k| (at(k), value(&round.timeline[k], b)))
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|(t, v)| (x.at(t), y.at(v)))
            .collect();
        c.polyline(&points, &format!("series {class}"));
        keys.push(Key::dot(class, label));
    }
    if id.starts_with("sched") {
        let mut preempted = 0;
        for k in (0..n).filter(|&k| round.timeline[k].preempted > 0) {
            let r = &round.timeline[k];
            let tip = format!("step at {:.3} s: {} preempted", at(k), r.preempted);
            c.circle(
                x.at(at(k)),
                y.at(r.waiting as f64),
                4.0,
                "stall",
                Some(&tip),
            );
            preempted += r.preempted;
        }
        keys.push(Key::dot(
            "stall",
            &format!("preemption ({preempted} in this round)"),
        ));
    }
    c.legend(&keys);
    c.finish()
}
