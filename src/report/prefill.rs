//! A prefill run for people: one row per cell of the grid (prompt tokens, depth, cached share,
//! chunk) with its sample count, median TTFT, spread and prefill rate; the cost model fitted
//! over the lengths with each term's share at the largest; what the machine did meanwhile; the
//! definitions, which are llama-bench's `pp`/`d` so the two can be set side by side. Reads
//! only the record.

use crate::config::run::Format;
use crate::record::prefill::{CellRecord, CostFit, PrefillRecord};
use crate::record::RunRecord;

/// `prefill --help`: what every figure means.
pub fn help() -> String {
    "Examples:\n  \
     tokfire prefill                                   # 128, 512, 2048, 8192 tokens, cold\n  \
     tokfire prefill --lengths 128,512,2048 --depths 0,1024 --cached 0,90\n  \
     tokfire prefill --lengths 2048 --chunks 64,256,1024 --samples 5\n  \
     tokfire prefill --lengths 128,2048 --cold-start      # and a fresh process per cell\n\n\
     Each cell submits DEPTH + LENGTH generated tokens as one request on the engine every verb \
     uses and generates one token. The DEPTH tokens (an earlier turn) and the cached share of \
     the LENGTH tokens are first put in the prefix cache by an unmeasured request, so the \
     measured one copies their KV rows instead of computing them: the cache length at its \
     first prefilled token is the depth plus the cached share, in whole 16-token blocks.\n\n\
     prompt tokens   llama-bench's -p: new tokens in the prompt.\n\
     depth           llama-bench's -d: tokens already in the context before the prompt.\n\
     cached          the share of the prompt found in the prefix cache (cold: none); the \
     tokens actually copied are shown.\n\
     TTFT            submission to the first token: copying cached rows, the prefill forwards \
     (CHUNK tokens at most each), the first sample; median over the samples, range min-max.\n\
     prefill tok/s   computed tokens / TTFT, median over the samples: llama-bench's pp t/s \
     with the first sample and the copy inside the interval.\n\
     cost model      TTFT = a + b*n + c*n^2 fitted (least squares) on the cold depth-0 cells \
     of a chunk size, n = prompt tokens; at the largest n, the share of the fixed part, of the \
     linear part (weights) and of the quadratic part (attention). Needs 3 lengths.\n\n\
     Prompts are token ids drawn from the model's vocabulary (special tokens excluded) with \
     --seed, different in every sample, so no sample finds another's prompt cached; with \
     --prompts WORKLOAD they are cut from the workload's prompts instead (each task's first \
     prompt rendered as the engine submits it, tokenized, joined and repeated to the length), \
     from a seeded offset per sample. The \
     model loads once; every cell runs --warmup unrecorded samples first.\n\n\
     --cold-start adds, per cell at depth 0 with nothing cached, one start of a fresh process \
     (this program) on the cell's first measured prompt: main, loaded, warm (one-token \
     warm-up forward) and first token, seconds after the spawn, with the model file in the \
     page cache (tokfire cold times starts from disk)."
        .into()
}

fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |s| format!("{s:.3} s"))
}

/// The table's headers.
const HEADERS: [&str; 8] = [
    "prompt tokens",
    "depth",
    "cached",
    "chunk",
    "samples",
    "TTFT median",
    "TTFT range",
    "prefill tok/s",
];

fn cached(c: &CellRecord) -> String {
    let depth = c.depth;
    let of_prompt = c.reused_median().map(|r| r.saturating_sub(depth));
    match (c.cached_pct, of_prompt) {
        (0, Some(0) | None) => "cold".into(),
        (p, Some(n)) => format!("{p} % ({n} tok)"),
        (p, None) => format!("{p} % (n/a: no sample)"),
    }
}

fn row(c: &CellRecord) -> Vec<String> {
    if let Some(why) = &c.skipped {
        let mut r = vec![
            c.length.to_string(),
            c.depth.to_string(),
            format!("{} %", c.cached_pct),
        ];
        r.extend([c.chunk.to_string(), "0".into(), format!("n/a ({why})")]);
        r.extend(["".into(), "".into()]);
        return r;
    }
    let range = c
        .ttft_range()
        .map_or("n/a".into(), |(lo, hi)| format!("{lo:.3}-{hi:.3} s"));
    vec![
        c.length.to_string(),
        c.depth.to_string(),
        cached(c),
        c.chunk.to_string(),
        c.samples.len().to_string(),
        secs(c.ttft_median()),
        range,
        c.tok_s_median().map_or("n/a".into(), |r| format!("{r:.1}")),
    ]
}

fn aligned(rows: &[Vec<String>]) -> String {
    let shape = super::layout::Shape { keys: 4, left: 0 };
    super::layout::table(&HEADERS, rows, shape, super::layout::WIDTH)
}

/// The fit as a sentence: the formula and the shares at the largest length.
fn fit_line(chunk: usize, fit: Option<CostFit>) -> String {
    let Some(f) = fit else {
        return format!(
            "cost model (chunk {chunk}): n/a (needs cold, depth-0 cells at 3 or more lengths)"
        );
    };
    let formula = format!(
        "cost model (cold, depth 0, chunk {chunk}, {} lengths): TTFT = {:.4} s + {:.3} ms * n \
         + {:.3e} s * n^2",
        f.points,
        f.a,
        f.b * 1e3,
        f.c
    );
    let shares = match f.shares() {
        Some([a, b, c]) => format!(
            "at {} tokens: fixed {:.0} %, linear (weights) {:.0} %, quadratic (attention) \
             {:.0} % of {:.3} s",
            f.n_max,
            a * 100.0,
            b * 100.0,
            c * 100.0,
            f.at(f.n_max as f64)
        ),
        None => "shares n/a: a term came out negative (the spread is larger than that term)".into(),
    };
    format!("{formula}\n  {shares}")
}

/// The fits, one per chunk size, and the machine's line.
fn notes(run: &RunRecord, p: &PrefillRecord) -> String {
    let mut out = String::new();
    for &chunk in &p.chunks {
        out += &fit_line(chunk, p.fit(chunk));
        out.push('\n');
    }
    out += &super::prefill_cold::section(p);
    out += &format!("machine: {}\n", machine_line(p));
    if !matches!(run.status, crate::record::RunStatus::Complete) {
        out += &format!(
            "status {}: {} of {} cells kept\n",
            run.status.label(),
            p.cells.len(),
            cells_asked(p)
        );
    }
    out
}

/// What else the machine did while the cells ran, from the OS's counters.
pub fn machine_line(p: &PrefillRecord) -> String {
    let readings = p.cells.iter().filter_map(|c| c.sentinel.as_ref());
    let quiet = crate::record::quiet::QuietFigures::of_readings(readings);
    quiet.line("cells").unwrap_or_else(|| {
        "n/a (no cell ran 0.25 s or more; the OS's 10 ms ticks cannot tell)".into()
    })
}

/// Two prefill runs cell by cell (cells matched by prompt tokens, depth, cached share and
/// chunk): both median TTFTs, new ÷ old, and the change: `same` within `min_effect`, `faster`
/// or `slower` when the two runs' sample ranges do not overlap, else `within spread`.
pub fn compare(old: &PrefillRecord, new: &PrefillRecord, min_effect: f64) -> String {
    use super::change::{verdict, Change};
    let key = |c: &CellRecord| (c.length, c.depth, c.cached_pct, c.chunk);
    let mut rows = Vec::new();
    let mut changes = Vec::new();
    for n in &new.cells {
        let Some(o) = old.cells.iter().find(|o| key(o) == key(n)) else {
            continue;
        };
        let (Some(a), Some(b), Some(ra), Some(rb)) = (
            o.ttft_median(),
            n.ttft_median(),
            o.ttft_range(),
            n.ttft_range(),
        ) else {
            continue;
        };
        let change = Change::of((a, ra), (b, rb), min_effect);
        changes.push(change);
        rows.push(vec![
            n.length.to_string(),
            n.depth.to_string(),
            cached(n),
            n.chunk.to_string(),
            format!("{a:.3} s"),
            format!("{b:.3} s"),
            format!("{:.3}", b / a),
            change.label(min_effect),
        ]);
    }
    let headers = [
        "prompt tokens",
        "depth",
        "cached",
        "chunk",
        "old TTFT",
        "new TTFT",
        "new / old",
        "change",
    ];
    let shape = super::layout::Shape { keys: 4, left: 0 };
    let mut out = super::layout::table(&headers, &rows, shape, super::layout::WIDTH);
    let left_out = old.cells.len().max(new.cells.len()) > rows.len();
    out += &verdict(&changes, "median TTFT", left_out);
    out
}

fn cells_asked(p: &PrefillRecord) -> usize {
    p.lengths.len() * p.depths.len() * p.cached_pct.len() * p.chunks.len()
}

fn head(run: &RunRecord, p: &PrefillRecord) -> String {
    let prompts = match &p.prompts {
        Some(w) => format!("prompts from {w}"),
        None => "generated prompts".into(),
    };
    format!(
        "tokfire prefill · {} · {} × {} (+{} warm-up) · {prompts}, seed {} · {} · status {}",
        run.config.model.label(),
        super::plural(p.cells.len(), "cell"),
        super::plural(p.samples, "sample"),
        p.warmup,
        p.seed,
        run.runtime,
        run.status.label()
    )
}

const CSV_HEADERS: [&str; 11] = [
    "run_id",
    "prompt_tokens",
    "depth",
    "cached_pct",
    "chunk",
    "sample",
    "ttft_s",
    "reused_tokens",
    "prefilled_tokens",
    "forward_s",
    "steps",
];

/// One CSV row per sample.
fn csv(run: &RunRecord, p: &PrefillRecord) -> String {
    let mut out = CSV_HEADERS.join(",") + "\n";
    for c in &p.cells {
        for (i, s) in c.samples.iter().enumerate() {
            let cells = [
                crate::report::columns::csv_escape(&run.id),
                c.length.to_string(),
                c.depth.to_string(),
                c.cached_pct.to_string(),
                c.chunk.to_string(),
                (i + 1).to_string(),
                s.ttft_s.to_string(),
                s.reused_tokens.to_string(),
                s.prefilled_tokens.to_string(),
                s.forward_s.to_string(),
                s.steps.to_string(),
            ];
            out += &(cells.join(",") + "\n");
        }
    }
    out
}

/// The HTML page of a prefill run: the table, the fit and TTFT against length per depth and
/// cached share.
pub fn html(run: &RunRecord) -> Option<String> {
    use super::html_plain::{cells, page, Block};
    let p = run.prefill()?;
    let rows: Vec<Vec<String>> = p.cells.iter().map(row).collect();
    let lead = match p.chunks.first().and_then(|&c| p.fit(c)) {
        Some(f) => match f.shares() {
            Some([_, _, q]) => format!(
                "At {} prompt tokens the fitted TTFT is {:.3} s, {:.0} % of it growing with the \
                 square of the length (attention).",
                f.n_max,
                f.at(f.n_max as f64),
                q * 100.0
            ),
            None => format!("TTFT over {} cells.", p.cells.len()),
        },
        None => format!("TTFT over {} cells.", p.cells.len()),
    };
    Some(page(
        &format!("prefill · {}", run.config.model.label()),
        &lead,
        vec![
            (
                "Cells",
                vec![
                    Block::Pre(super::layout::wrap(&head(run, p), super::layout::WIDTH)),
                    cells(&HEADERS, &rows),
                ],
            ),
            ("TTFT against prompt length", vec![Block::Svg(chart(p))]),
            (
                "Cost model and notes",
                vec![Block::Pre(super::layout::wrap(
                    &notes(run, p),
                    super::layout::WIDTH,
                ))],
            ),
        ],
    ))
}

/// One curve of the chart: (depth, cached %, chunk) and its (prompt tokens, TTFT s) points.
type Series = ((usize, u32, usize), Vec<(f64, f64)>);

/// TTFT medians against prompt tokens, one line per (depth, cached share, chunk).
fn chart(p: &PrefillRecord) -> String {
    use super::svg::{nice_ticks, Axis, Chart, Key, Scale};
    let mut series: Vec<Series> = Vec::new();
    for c in &p.cells {
        let Some(t) = c.ttft_median() else { continue };
        let key = (c.depth, c.cached_pct, c.chunk);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, pts)) => pts.push((c.length as f64, t)),
            None => series.push((key, vec![(c.length as f64, t)])),
        }
    }
    let mut chart = Chart::new(
        "prefill-ttft",
        760.0,
        400.0,
        "TTFT median (s) by prompt tokens",
    );
    let xmax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let ymax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    if series.is_empty() || xmax <= 0.0 || ymax <= 0.0 {
        chart.empty("no cell has a sample");
        return chart.finish();
    }
    let several_chunks = p.chunks.len() > 1;
    let keys: Vec<Key> = series
        .iter()
        .enumerate()
        .map(|(i, ((depth, pct, chunk), _))| {
            let cache = match pct {
                0 => "cold".to_string(),
                p => format!("{p} % cached"),
            };
            let chunk = match several_chunks {
                true => format!(", chunk {chunk}"),
                false => String::new(),
            };
            Key::dot(
                &format!("s{}", i % 8),
                &format!("depth {depth}, {cache}{chunk}"),
            )
        })
        .collect();
    chart.legend(&keys);
    let (xt, xd) = nice_ticks(0.0, xmax, 5);
    let (yt, yd) = nice_ticks(0.0, ymax, 5);
    let x = Scale::new(0.0, *xt.last().unwrap_or(&xmax), chart.left, chart.right);
    let y = Scale::new(0.0, *yt.last().unwrap_or(&ymax), chart.bottom, chart.top);
    let (xa, ya) = (
        Axis::numeric("prompt tokens", &xt, xd),
        Axis::numeric("TTFT s", &yt, yd),
    );
    chart.axes(&x, &xa, &y, &ya);
    for (i, (_, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let class = format!("s{}", i % 8);
        let xy: Vec<(f64, f64)> = pts.iter().map(|&(n, t)| (x.at(n), y.at(t))).collect();
        chart.polyline(&xy, &format!("series {class}"));
        for (&(n, t), &(cx, cy)) in pts.iter().zip(&xy) {
            let tip = format!("{n} tokens: {t:.3} s");
            chart.circle(cx, cy, 3.5, &class, Some(&tip));
        }
    }
    chart.finish()
}

/// The prefill run in `format` (JSON formats: the whole record).
pub fn render(run: &RunRecord, format: Format) -> String {
    let Some(p) = run.prefill() else {
        return format!("run {} is not a prefill run\n", run.id);
    };
    let rows: Vec<Vec<String>> = p.cells.iter().map(row).collect();
    match format {
        Format::Json | Format::JsonFull => {
            serde_json::to_string_pretty(run).expect("records serialize; this is a bug") + "\n"
        }
        Format::Csv => csv(run, p),
        Format::Md => {
            super::layout::markdown(&HEADERS, &rows)
                + "\n"
                + &super::layout::wrap(&notes(run, p), super::layout::WIDTH)
        }
        Format::Text => super::layout::wrap(
            &(head(run, p) + "\n\n" + &aligned(&rows) + "\n" + &notes(run, p)),
            super::layout::WIDTH,
        ),
    }
}
