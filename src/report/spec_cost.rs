//! A spec-cost run for people: per (jobs, k) the median decode-step time and its range, the
//! verify step's cost in plain steps, and the acceptance rate above which speculation with `k`
//! drafts pays at that many jobs (for a drafter that costs nothing, each drafted token
//! accepted independently); then one sentence per jobs level. Reads only the record.

use crate::config::run::Format;
use crate::record::spec_cost::{break_even, SpecCostRecord, VerifyCell};
use crate::record::RunRecord;

/// `spec-cost --help`: what every figure means.
pub fn help() -> String {
    "Examples:\n  \
     tokfire spec-cost                                 # jobs 1,2,3 × k 0..4\n  \
     tokfire spec-cost --jobs 1,4 --k 0,2,4,8 --context 1024\n\n\
     Each cell runs JOBS sequences of CONTEXT generated prompt tokens on the engine every verb \
     uses; with K > 0 a drafter proposes K random vocabulary tokens per sequence and step, so \
     every decode step verifies K drafts (almost all rejected). K = 0 is plain decoding.\n\n\
     step median    wall time of a decode step (drafting, the batched forward of JOBS x \
     (K + 1) tokens, sampling, acceptance), median over --steps steps after --warmup.\n\
     cost           step median / the K = 0 step median at the same jobs.\n\
     pays above     the per-token acceptance rate a at which (1 - a^(K+1)) / (1 - a) tokens per \
     step beat plain decoding at that cost: a free drafter, each drafted token accepted \
     independently. A real drafter's own time raises the bar; `run --spec ...` measures both."
        .into()
}

const HEADERS: [&str; 7] = [
    "jobs",
    "k",
    "steps",
    "step median",
    "step range",
    "cost",
    "pays above",
];

fn row(r: &SpecCostRecord, c: &VerifyCell) -> Vec<String> {
    let ms = |s: f64| format!("{:.1} ms", s * 1e3);
    let ratio = r.cost_ratio(c);
    let pays = match (c.k, ratio) {
        (0, _) => "-".to_string(),
        (_, None) => "n/a (no k = 0 cell)".into(),
        (k, Some(x)) => match break_even(x, k) {
            None => "never".into(),
            Some(a) => format!("{:.0} %", a * 100.0),
        },
    };
    vec![
        c.jobs.to_string(),
        c.k.to_string(),
        c.step_s.len().to_string(),
        c.median_s().map_or("n/a".into(), ms),
        c.range_s().map_or("n/a".into(), |(lo, hi)| {
            format!("{:.1}-{:.1} ms", lo * 1e3, hi * 1e3)
        }),
        ratio.map_or("n/a".into(), |x| format!("{x:.2}x")),
        pays,
    ]
}

/// One sentence per jobs level: the k that pays at the lowest acceptance rate.
fn notes(r: &SpecCostRecord) -> String {
    let mut out = String::new();
    for &jobs in &r.jobs {
        let best = r
            .cells
            .iter()
            .filter(|c| c.jobs == jobs && c.k > 0)
            .filter_map(|c| Some((c.k, break_even(r.cost_ratio(c)?, c.k)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        out += &match best {
            Some((k, a)) => format!(
                "at {}: k = {k} pays from the lowest acceptance, {:.0} % per drafted token\n",
                super::plural(jobs, "job"),
                a * 100.0
            ),
            None => format!(
                "at {}: no measured k pays at any acceptance (or no k = 0 cell)\n",
                super::plural(jobs, "job")
            ),
        };
    }
    let readings = r.cells.iter().filter_map(|c| c.sentinel.as_ref());
    let quiet = crate::record::quiet::QuietFigures::of_readings(readings);
    let machine = quiet.line("cells").unwrap_or_else(|| {
        "n/a (no cell ran 0.25 s or more; the OS's 10 ms ticks cannot tell)".into()
    });
    let accepted: usize = r.cells.iter().map(|c| c.accepted).sum();
    let proposed: usize = r.cells.iter().map(|c| c.proposed).sum();
    out += &format!("drafts accepted: {accepted} of {proposed} (random drafts: the cost alone)\n");
    out += &format!("machine: {machine}\n");
    out
}

/// Two spec-cost runs cell by cell (cells matched by jobs and k): both median step times,
/// new ÷ old and the change, and each run's cost in plain steps (what decides whether a k
/// pays, so a build that sped up the plain step more than the verify step shows it).
pub fn compare(old: &SpecCostRecord, new: &SpecCostRecord, min_effect: f64) -> String {
    use super::change::{verdict, Change};
    let ms = |s: f64| format!("{:.1} ms", s * 1e3);
    let cost = |r: &SpecCostRecord, c: &VerifyCell| {
        r.cost_ratio(c).map_or("n/a".into(), |x| format!("{x:.2}x"))
    };
    let mut rows = Vec::new();
    let mut changes = Vec::new();
    for n in &new.cells {
        let Some(o) = old.cells.iter().find(|o| (o.jobs, o.k) == (n.jobs, n.k)) else {
            continue;
        };
        let (Some(a), Some(b), Some(ra), Some(rb)) =
            (o.median_s(), n.median_s(), o.range_s(), n.range_s())
        else {
            continue;
        };
        let change = Change::of((a, ra), (b, rb), min_effect);
        changes.push(change);
        rows.push(vec![
            n.jobs.to_string(),
            n.k.to_string(),
            ms(a),
            ms(b),
            format!("{:.3}", b / a),
            cost(old, o),
            cost(new, n),
            change.label(min_effect),
        ]);
    }
    let headers = [
        "jobs",
        "k",
        "old step",
        "new step",
        "new / old",
        "old cost",
        "new cost",
        "change",
    ];
    let shape = super::layout::Shape { keys: 2, left: 0 };
    let mut out = super::layout::table(&headers, &rows, shape, super::layout::WIDTH);
    let left_out = old.cells.len().max(new.cells.len()) > rows.len();
    out += &verdict(&changes, "median step time", left_out);
    if (old.context, old.steps) != (new.context, new.steps) {
        out += &format!(
            "note: context {} vs {} tokens, {} vs {} steps per cell: the cells differ in more \
             than the build\n",
            old.context, new.context, old.steps, new.steps
        );
    }
    out
}

fn head(run: &RunRecord, r: &SpecCostRecord) -> String {
    format!(
        "tokfire spec-cost · {} · context {} · {} per cell (+{} warm-up) · {} · status {}",
        run.config.model.label(),
        r.context,
        super::plural(r.steps, "step"),
        r.warmup,
        run.runtime,
        run.status.label()
    )
}

const CSV_HEADERS: [&str; 7] = [
    "run_id", "jobs", "k", "step", "step_s", "proposed", "accepted",
];

fn csv(run: &RunRecord, r: &SpecCostRecord) -> String {
    let mut out = CSV_HEADERS.join(",") + "\n";
    for c in &r.cells {
        for (i, s) in c.step_s.iter().enumerate() {
            let id = crate::report::columns::csv_escape(&run.id);
            out += &format!(
                "{id},{},{},{},{s},{},{}\n",
                c.jobs,
                c.k,
                i + 1,
                c.proposed,
                c.accepted
            );
        }
    }
    out
}

/// The HTML page of a spec-cost run: the table and the sentences.
pub fn html(run: &RunRecord) -> Option<String> {
    use super::html_plain::{cells, page, Block};
    let r = run.spec_cost()?;
    let rows: Vec<Vec<String>> = r.cells.iter().map(|c| row(r, c)).collect();
    let lead = notes(r).lines().next().unwrap_or_default().to_string();
    Some(page(
        &format!("spec-cost · {}", run.config.model.label()),
        &lead,
        vec![
            (
                "Verify steps",
                vec![
                    Block::Pre(super::layout::wrap(&head(run, r), super::layout::WIDTH)),
                    cells(&HEADERS, &rows),
                ],
            ),
            ("When speculation pays", vec![Block::Pre(notes(r))]),
        ],
    ))
}

/// The spec-cost run in `format` (JSON formats: the whole record).
pub fn render(run: &RunRecord, format: Format) -> String {
    let Some(r) = run.spec_cost() else {
        return format!("run {} is not a spec-cost run\n", run.id);
    };
    let rows: Vec<Vec<String>> = r.cells.iter().map(|c| row(r, c)).collect();
    match format {
        Format::Json | Format::JsonFull => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => csv(run, r),
        Format::Md => {
            super::layout::markdown(&HEADERS, &rows)
                + "\n"
                + &super::layout::wrap(&notes(r), super::layout::WIDTH)
        }
        Format::Text => {
            let shape = super::layout::Shape { keys: 2, left: 0 };
            let table = super::layout::table(&HEADERS, &rows, shape, super::layout::WIDTH);
            super::layout::wrap(
                &(head(run, r) + "\n\n" + &table + "\n" + &notes(r)),
                super::layout::WIDTH,
            )
        }
    }
}
