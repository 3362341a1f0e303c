//! A session run for people: one row per step (or repetition) with what the person waited for
//! — load, warm-up, time to first token, completion — which loads hit a cold page cache, and
//! the totals (waiting vs generating vs idle); the time scale is stated whenever idle gaps were
//! shrunk. Reads only the record.

use crate::config::run::Format;
use crate::record::session::{totals, SessionRecord, StepKindTag, StepRecord};
use crate::record::RunRecord;

fn secs(v: Option<f64>) -> String {
    v.map_or("-".into(), |s| format!("{s:.3} s"))
}

fn row(s: &StepRecord) -> Vec<String> {
    let resident =
        |r: crate::measure::pagecache::Residency| format!("{:.0} % resident", r.fraction() * 100.0);
    let cache = match (s.kind, s.residency) {
        (StepKindTag::Load, Some(r)) => {
            format!("{}, {}", residency_word(r), resident(r))
                + if s.eviction_failed.is_some() {
                    " (eviction failed)"
                } else {
                    ""
                }
        }
        (StepKindTag::Load, None) => "n/a (mincore unreadable)".into(),
        _ => "-".into(),
    };
    let label = if s.repeat > 0 {
        format!("{} (repeat {})", s.label, s.repeat + 1)
    } else {
        s.label.clone()
    };
    let idle = match (s.idle_script_s, s.idle_s) {
        (Some(a), Some(b)) if (a - b).abs() > 0.05 => format!("{b:.3} s (script {a} s)"),
        (_, b) => secs(b),
    };
    let tokens = match s.kind {
        StepKindTag::Request => {
            let notes: Vec<String> = [
                s.earlier_turns.map(|n| format!("chat turn {}", n + 1)),
                s.reused_tokens.map(|n| format!("{n} cached")),
            ]
            .into_iter()
            .flatten()
            .collect();
            let notes = match notes.is_empty() {
                true => String::new(),
                false => format!(" ({})", notes.join(", ")),
            };
            format!("{} → {}{notes}", s.prompt_tokens, s.output_tokens)
        }
        _ => "-".into(),
    };
    vec![
        format!("{}", s.step + 1),
        format!("{}", s.line),
        label,
        format!("{:.3} s", s.at_s),
        cache,
        secs(s.load_s),
        secs(s.warmup_s),
        secs(s.ttft_s),
        secs(s.completion_s),
        idle,
        tokens,
    ]
}

const HEADERS: [&str; 11] = [
    "step",
    "line",
    "what",
    "at",
    "page cache",
    "load",
    "warm-up",
    "TTFT",
    "completion",
    "idle",
    "tokens in → out",
];

fn aligned(rows: &[Vec<String>]) -> String {
    // Only the step number repeats: a model path in `what` can take most of the width.
    let shape = super::layout::Shape {
        keys: 1,
        left: HEADERS.len(),
    };
    super::layout::table(&HEADERS, rows, shape, super::layout::WIDTH)
}

/// `cold` (at most 5 % resident), `warm` (at least 95 %) or `partly cached`: the thresholds
/// every verb uses.
fn residency_word(r: crate::measure::pagecache::Residency) -> &'static str {
    use crate::measure::pagecache::{COLD_MAX, WARM_MIN};
    match r.fraction() {
        f if f <= COLD_MAX => "cold",
        f if f >= WARM_MIN => "warm",
        _ => "partly cached",
    }
}

/// The totals and the time-scale note.
fn notes(s: &SessionRecord) -> String {
    let t = totals(s);
    let mut out = String::new();
    for st in &s.steps {
        if let Some(why) = &st.eviction_failed {
            out += &format!(
                "step {} (line {}): evict = true did not take: {why}\n",
                st.step + 1,
                st.line
            );
        }
    }
    let failed = s
        .steps
        .iter()
        .filter(|x| x.eviction_failed.is_some())
        .count();
    let failed = if failed > 0 {
        format!(", {} failed", super::plural(failed, "asked eviction"))
    } else {
        String::new()
    };
    out += &format!(
        "waiting   {:.3} s in all: loads + warm-ups {:.3} s ({}, {} on a cold page cache{failed}), time to first token {:.3} s over {}\n",
        t.waiting_s,
        t.loading_s,
        super::plural(t.loads, "load"),
        t.cold_loads,
        t.ttft_s,
        super::plural(t.requests, "request"),
    );
    out += &format!(
        "generating {:.3} s (first → last token, summed); idle {:.3} s; session wall {:.3} s\n",
        t.generating_s, t.idle_s, t.wall_s
    );
    if t.ttft_s > 0.0 {
        out += &format!(
            "the whole wait is {:.1}× the requests' time to first token alone\n",
            t.waiting_s / t.ttft_s
        );
    }
    let quiet = crate::record::quiet::QuietFigures::of_readings(
        s.steps.iter().filter_map(|x| x.sentinel.as_ref()),
    );
    if let Some(l) = quiet.line("steps") {
        out += &format!("machine: {l}\n");
    }
    if s.time_scale != 1.0 {
        out += &format!(
            "time scale {}: idle gaps shrunk from {:.1} s in the script to {:.3} s slept (--time-scale)\n",
            s.time_scale, t.idle_script_s, t.idle_s
        );
    }
    out
}

/// The CSV columns: one row per step, clocks in seconds as plain numbers, empty when a step
/// has no such clock.
const CSV_HEADERS: [&str; 24] = [
    "run_id",
    "step",
    "line",
    "repeat",
    "kind",
    "what",
    "at_s",
    "cold",
    "resident_fraction",
    "load_s",
    "header_s",
    "tokenizer_s",
    "weights_s",
    "first_touch_s",
    "warmup_s",
    "ttft_s",
    "completion_s",
    "idle_script_s",
    "idle_s",
    "prompt_tokens",
    "output_tokens",
    "earlier_turns",
    "reused_tokens",
    "time_scale",
];

/// The session as CSV: a header, then one row per step (or repetition) with its clocks.
fn csv(run: &RunRecord, s: &SessionRecord) -> String {
    let num = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let mut out = CSV_HEADERS.join(",") + "\n";
    for st in &s.steps {
        let kind = serde_json::to_value(st.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let split = st.split.as_ref();
        let cells = [
            run.id.clone(),
            (st.step + 1).to_string(),
            st.line.to_string(),
            (st.repeat + 1).to_string(),
            kind,
            st.label.clone(),
            st.at_s.to_string(),
            st.cold.map_or(String::new(), |c| c.to_string()),
            num(st.residency.map(|r| r.fraction())),
            num(st.load_s),
            num(split.map(|l| l.header_s)),
            num(split.map(|l| l.tokenizer_s)),
            num(split.map(|l| l.weights_s)),
            num(split.map(|l| l.first_touch_s)),
            num(st.warmup_s),
            num(st.ttft_s),
            num(st.completion_s),
            num(st.idle_script_s),
            num(st.idle_s),
            st.prompt_tokens.to_string(),
            st.output_tokens.to_string(),
            st.earlier_turns.map_or(String::new(), |n| n.to_string()),
            st.reused_tokens.map_or(String::new(), |n| n.to_string()),
            s.time_scale.to_string(),
        ];
        let cells: Vec<String> = cells
            .iter()
            .map(|c| crate::report::columns::csv_escape(c))
            .collect();
        out += &(cells.join(",") + "\n");
    }
    out
}

/// The HTML page of a session: the whole wait in one sentence, every step, the totals.
pub fn html(run: &RunRecord) -> Option<String> {
    use super::html_plain::{cells, page, Block};
    let s = run.session()?;
    let rows: Vec<Vec<String>> = s.steps.iter().map(row).collect();
    let t = totals(s);
    let lead = format!(
        "The person waited {:.3} s in all ({:.3} s loading and warming up, {:.3} s for first \
         tokens) and watched answers for {:.3} s, over a session of {:.3} s.",
        t.waiting_s, t.loading_s, t.ttft_s, t.generating_s, t.wall_s
    );
    let title = format!("session {} · {}", s.session.name, s.session.source);
    let head = format!(
        "{} · status {}",
        super::plural(s.steps.len(), "step"),
        run.status.label()
    );
    Some(page(
        &title,
        &lead,
        vec![
            ("Steps", vec![Block::Pre(head), cells(&HEADERS, &rows)]),
            ("Totals", vec![Block::Pre(notes(s))]),
        ],
    ))
}

/// The session in `format` (JSON formats: the whole record).
pub fn render(run: &RunRecord, format: Format) -> String {
    let Some(s) = run.session() else {
        return format!("run {} is not a session\n", run.id);
    };
    let rows: Vec<Vec<String>> = s.steps.iter().map(row).collect();
    match format {
        Format::Json | Format::JsonFull => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => csv(run, s),
        Format::Md => {
            super::layout::markdown(&HEADERS, &rows)
                + "\n"
                + &super::layout::wrap(&notes(s), super::layout::WIDTH)
        }
        Format::Text => {
            let head = format!(
                "tokfire session {} · {} · {} · status {}\n\n",
                s.session.name,
                s.session.source,
                super::plural(s.steps.len(), "step"),
                run.status.label()
            );
            super::layout::wrap(
                &(head + &aligned(&rows) + "\n" + &notes(s)),
                super::layout::WIDTH,
            )
        }
    }
}
