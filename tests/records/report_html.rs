//! The HTML report on a stored record (a 2-level sweep): the page parses as XML, holds one
//! `<svg>` per plot, each level's timeline has exactly one bar per request per phase, no number
//! is NaN or infinite, nothing is fetched from the network, and user text is escaped. Degenerate
//! records (no levels, no measured rounds, no tasks, zero or non-finite durations) render too.
//!
//! Set `TOKFIRE_HTML_OUT=/tmp/report.html` to keep the fixture's page for a look in a browser.

use std::path::Path;

use roxmltree::{Document, Node, ParsingOptions};
use tokfire::record::summary::summarize;
use tokfire::record::{ResultsFile, RoundRecord, RunRecord, RunStatus, TaskSample};
use tokfire::report::html::{page, SheetTable};

fn fixture() -> RunRecord {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/record-v1.json");
    let text = std::fs::read_to_string(path).expect("fixture present");
    let file: ResultsFile = serde_json::from_str(&text).expect("fixture is a record");
    file.runs.into_iter().next().expect("fixture has a run")
}

fn sheet() -> SheetTable {
    SheetTable {
        headers: vec!["jobs".into(), "median TTFT (s)".into(), "agg tok/s".into()],
        rows: vec![
            vec!["1".into(), "0.39".into(), "7.5".into()],
            vec!["2".into(), "1.83".into(), "2.8".into()],
        ],
    }
}

/// A sheet with the record's own figures (what `report` would pass), formatted here by hand.
fn sheet_of(run: &RunRecord) -> SheetTable {
    let f = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
    let headers = [
        "jobs",
        "completed/attempted",
        "median TTFT (s)",
        "median completion (s)",
        "per-job tok/s median",
        "slowest job tok/s",
        "aggregate tok/s",
    ];
    let rows = (run.levels.iter().map(summarize))
        .map(|s| {
            vec![
                s.jobs.to_string(),
                format!("{}/{}", s.completed, s.attempted),
                f(s.ttft_median_s),
                f(s.completion_median_s),
                f(s.job_tok_s_median),
                f(s.job_tok_s_slowest),
                f(s.aggregate_tok_s),
            ]
        })
        .collect();
    SheetTable {
        headers: headers.map(String::from).to_vec(),
        rows,
    }
}

/// Verdict lines shaped as `report` passes them: a level's label, its checks indented under it.
fn verdict() -> Vec<String> {
    vec![
        "1 job:  comfortable at 1 job".into(),
        "          speed   median TTFT 0.53 s ≤ 1 s".into(),
        "2 jobs: not comfortable at 2 jobs".into(),
        "          speed   median TTFT 1.22 s > 1 s".into(),
        "          quality pass rate 0 % < 80 %".into(),
        "overall: not comfortable at 2 jobs".into(),
    ]
}

/// The bars the timeline must hold for one task, counted from the record with the documented
/// rule: queue `[start, start+wait]`, prefill `[start+wait, start+ttft]` (to completion without
/// a first token), decode `[start+ttft, start+completion]`; a bar only with finite ends and a
/// length above zero.
fn expected_bars(t: &TaskSample) -> [usize; 3] {
    let ok = |a: f64, b: f64| usize::from(a.is_finite() && b.is_finite() && b > a);
    let (a, q, e) = (
        t.start_s,
        t.start_s + t.queue_wait_s,
        t.start_s + t.completion_s,
    );
    match t.ttft_s {
        Some(f) => [ok(a, q), ok(q, a + f), ok(a + f, e)],
        None => [ok(a, q), ok(q, e), 0],
    }
}

fn last_measured(run: &RunRecord, level: usize) -> Option<&RoundRecord> {
    run.levels[level].rounds.iter().rev().find(|r| !r.warmup)
}

/// Parses as XML; the page's `<!DOCTYPE html>` is the one DTD it carries.
fn parse(html: &str) -> Result<Document<'_>, roxmltree::Error> {
    let opt = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(html, opt)
}

fn has_class(n: &Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|w| w == class))
}

fn svgs<'a>(doc: &'a Document) -> Vec<Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .collect()
}

/// Parses the page and checks what must hold for any record.
fn check_page(run: &RunRecord, html: &str) {
    let doc = parse(html).unwrap_or_else(|e| panic!("page is not XML: {e}"));
    let plots = svgs(&doc);
    let measured: Vec<usize> = (run.levels.iter().enumerate())
        .filter(|(_, l)| l.rounds.iter().any(|r| !r.warmup))
        .map(|(i, _)| i)
        .collect();
    let expected = run.levels.len() + 4 + 2 * measured.len();
    assert_eq!(plots.len(), expected, "one <svg> per plot");
    for i in measured {
        for id in [format!("sched-{i}"), format!("budget-{i}")] {
            assert!(plots.iter().any(|s| s.attribute("id") == Some(&id)), "{id}");
        }
    }
    for id in ["ttft", "completion", "rates", "batch"] {
        assert!(plots.iter().any(|s| s.attribute("id") == Some(id)), "{id}");
    }
    for n in doc.descendants().filter(|n| n.is_element()) {
        for a in n.attributes() {
            let numeric = [
                "x", "y", "width", "height", "cx", "cy", "r", "x1", "y1", "x2", "y2",
            ];
            if numeric.contains(&a.name()) {
                let v: f64 = a.value().parse().unwrap_or(f64::NAN);
                assert!(v.is_finite(), "{}={:?}", a.name(), a.value());
            }
        }
    }
    let words: Vec<&str> = html.split(|c: char| !c.is_alphanumeric()).collect();
    for bad in ["NaN", "inf", "Infinity", "infinity"] {
        assert!(!words.contains(&bad), "the page contains {bad:?}");
    }
    let allowed = ["http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml"];
    for (i, _) in html.match_indices("http") {
        let rest = &html[i..];
        if rest.starts_with("http://") || rest.starts_with("https://") {
            let ok = allowed.iter().any(|a| rest.starts_with(&format!("{a}\"")))
                && html[..i].ends_with("xmlns=\"");
            assert!(ok, "network reference: {}", &rest[..rest.len().min(60)]);
        }
    }
    for tag in ["script", "link", "img", "iframe", "object", "image", "use"] {
        assert!(
            !doc.descendants().any(|n| n.tag_name().name() == tag),
            "{tag}"
        );
    }
    // Every timeline bar's count matches the record.
    for (i, _) in run.levels.iter().enumerate() {
        let id = format!("timeline-{i}");
        let svg = plots
            .iter()
            .find(|s| s.attribute("id") == Some(id.as_str()))
            .unwrap_or_else(|| panic!("no {id}"));
        let bars = |phase: &str| {
            svg.descendants()
                .filter(|n| has_class(n, "bar") && has_class(n, phase))
                .inspect(|n| {
                    let tip = n.children().find(|c| c.tag_name().name() == "title");
                    assert!(tip.and_then(|t| t.text()).is_some(), "bar without tooltip");
                })
                .count()
        };
        let want = last_measured(run, i).map_or([0; 3], |r| {
            r.tasks.iter().map(expected_bars).fold([0; 3], |acc, b| {
                [acc[0] + b[0], acc[1] + b[1], acc[2] + b[2]]
            })
        });
        let got = [bars("queue"), bars("prefill"), bars("decode")];
        assert_eq!(got, want, "{id}: queue, prefill, decode bars");
    }
}

#[test]
fn fixture_page_is_complete_and_well_formed() {
    let run = fixture();
    assert_eq!(run.levels.len(), 2, "the fixture is a 2-level sweep");
    let html = page(&run, &sheet_of(&run), &verdict());
    if let Some(out) = std::env::var_os("TOKFIRE_HTML_OUT") {
        std::fs::write(out, &html).expect("TOKFIRE_HTML_OUT is writable");
    }
    check_page(&run, &html);
    let doc = parse(&html).expect("checked above");
    // The fixture's last measured rounds: 6 and 12 tasks, each with prefill and decode.
    let decode = |id: &str| {
        svgs(&doc)
            .into_iter()
            .find(|s| s.attribute("id") == Some(id))
            .map_or(0, |s| {
                s.descendants()
                    .filter(|n| has_class(n, "bar") && has_class(n, "decode"))
                    .count()
            })
    };
    assert_eq!((decode("timeline-0"), decode("timeline-1")), (6, 12));
    // Every measured TTFT and completion sample is a dot: 2 levels × 3 rounds × (6 + 12) tasks.
    for id in ["ttft", "completion"] {
        let svg = svgs(&doc)
            .into_iter()
            .find(|s| s.attribute("id") == Some(id));
        let dots = svg.map_or(0, |s| {
            s.descendants().filter(|n| has_class(n, "dot")).count() - 1 // minus the legend's
        });
        assert_eq!(dots, 3 * 6 + 3 * 12, "{id} dots");
    }
    let cells: Vec<&str> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "td")
        .filter_map(|n| n.text())
        .collect();
    assert!(
        cells.contains(&"36/36") && cells.contains(&"1.47"),
        "{cells:?}"
    );
    assert!(html.contains("chat v1") && html.contains("smollm2-135m-instruct-q4_1"));
    assert!(html.contains("not comfortable at 2 jobs"));
    // It opens with the one-sentence verdict, then the throughput chart.
    let body: Vec<Node> = doc
        .descendants()
        .find(|n| n.tag_name().name() == "body")
        .unwrap()
        .children()
        .filter(|n| n.is_element())
        .collect();
    let tags: Vec<&str> = body.iter().take(3).map(|n| n.tag_name().name()).collect();
    assert_eq!(tags, ["h1", "p", "svg"], "verdict sentence, then the chart");
    assert_eq!(body[2].attribute("id"), Some("rates"));
    let line = tokfire::record::summary::summarize_run(&run).verdict.line;
    assert_eq!(body[1].text(), Some(line.as_str()));
    // Decode and prefill speeds are shown; each level's checks nest under its verdict.
    assert!(html.contains("decode tok/s per sequence") && html.contains("prefill tok/s"));
    let nested = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "li")
        .filter(|n| n.children().any(|c| c.tag_name().name() == "ul"))
        .count();
    assert!(nested >= 2, "both levels' checks nest under the level");
    // Every point of the throughput chart lies inside its axis.
    let rates = body[2];
    let top = rates
        .descendants()
        .filter(|n| has_class(n, "grid") || has_class(n, "axis"))
        .filter_map(|n| n.attribute("y1").and_then(|v| v.parse::<f64>().ok()))
        .fold(f64::INFINITY, f64::min);
    let points = rates
        .descendants()
        .filter(|n| n.tag_name().name() == "circle" && !has_class(n, "key"));
    for c in points {
        let cy: f64 = c.attribute("cy").unwrap().parse().unwrap();
        assert!(
            cy >= top - 0.5,
            "a point above the axis: cy {cy} < top {top}"
        );
    }
}

#[test]
fn user_text_is_escaped() {
    let nasty = "<b>&amp;\"x\"'y'</b>";
    let mut run = fixture();
    run.workload.name = nasty.into();
    run.config.model.model = nasty.into();
    run.status = RunStatus::Failed {
        error: nasty.into(),
    };
    for r in &mut run.levels[0].rounds {
        for t in &mut r.tasks {
            t.task = nasty.into();
        }
    }
    let mut sheet = sheet();
    sheet.headers[0] = nasty.into();
    sheet.rows[0][0] = nasty.into();
    let html = page(&run, &sheet, &[nasty.into()]);
    check_page(&run, &html);
    assert!(!html.contains("<b>"), "raw markup leaked into the page");
    let doc = parse(&html).expect("checked above");
    let texts = |tag: &str| {
        doc.descendants()
            .filter(|n| n.tag_name().name() == tag)
            .filter_map(|n| n.text().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert!(texts("h1").iter().any(|t| t.contains(nasty)));
    assert!(texts("th").iter().any(|t| t == nasty));
    assert!(texts("td").iter().any(|t| t == nasty));
    assert!(texts("li").iter().any(|t| t == nasty));
    assert!(
        texts("title").iter().any(|t| t.starts_with(nasty)),
        "task tooltip"
    );
}

#[test]
fn failed_run_with_no_levels() {
    let mut run = fixture();
    run.levels.clear();
    run.status = RunStatus::Failed {
        error: "model did not load".into(),
    };
    let html = page(
        &run,
        &SheetTable {
            headers: vec![],
            rows: vec![],
        },
        &[],
    );
    check_page(&run, &html);
    assert!(html.contains("failed: model did not load"));
}

#[test]
fn degenerate_samples_render_without_nan() {
    let base = fixture();
    let mut cases: Vec<(&str, RunRecord)> = Vec::new();
    let mut zero = base.clone();
    for l in &mut zero.levels {
        for r in &mut l.rounds {
            (r.wall_s, r.forward_s) = (0.0, 0.0);
            for t in &mut r.tasks {
                (t.start_s, t.queue_wait_s, t.completion_s) = (0.0, 0.0, 0.0);
                t.ttft_s = Some(0.0);
                t.output_tokens = 0;
            }
            for s in &mut r.steps {
                (s.at_s, s.forward_s, s.step_s) = (0.0, 0.0, 0.0);
            }
        }
    }
    cases.push(("all-zero durations", zero));
    let mut no_ttft = base.clone();
    no_ttft
        .levels
        .iter_mut()
        .flat_map(|l| &mut l.rounds)
        .for_each(|r| {
            r.tasks.iter_mut().for_each(|t| t.ttft_s = None);
        });
    cases.push(("no TTFT", no_ttft));
    let mut warm_only = base.clone();
    warm_only.levels[1].rounds.retain(|r| r.warmup);
    cases.push(("a level without measured rounds", warm_only));
    let mut no_tasks = base.clone();
    no_tasks
        .levels
        .iter_mut()
        .flat_map(|l| &mut l.rounds)
        .for_each(|r| {
            r.tasks.clear();
            r.steps.clear();
        });
    cases.push(("no tasks", no_tasks));
    let mut mixed = base.clone();
    let r = &mut mixed.levels[0].rounds[1];
    r.tasks[0].start_s = f64::NAN;
    r.tasks[1].completion_s = f64::INFINITY;
    r.tasks[2].ttft_s = Some(f64::NEG_INFINITY);
    r.tasks[3].queue_wait_s = -1.0;
    r.wall_s = f64::NAN;
    r.steps[0].step_s = f64::INFINITY;
    // Scheduler timeline rows beside those steps, one of them preempting.
    r.timeline = (r.steps.iter())
        .map(|s| tokfire::record::profile::PlanRow {
            running: 2,
            waiting: 1,
            decode_tokens: s.decode_tokens as u64,
            kv_tokens: 40,
            ..Default::default()
        })
        .collect();
    r.timeline[1].preempted = 1;
    // A step that prefilled while others decoded is shaded.
    mixed.levels[1].rounds[3].steps[4].prefill_tokens = 10;
    cases.push(("non-finite samples", mixed));
    for (what, run) in &cases {
        let html = page(run, &sheet(), &verdict());
        println!("case: {what}");
        check_page(run, &html);
    }
    // A damaged record claiming absurd job indices renders a bounded page.
    let mut huge = base;
    huge.levels[0].jobs = usize::MAX;
    if let Some(r) = huge.levels[0].rounds.last_mut() {
        r.tasks[0].job = usize::MAX;
    }
    let html = page(&huge, &sheet(), &verdict());
    let doc = parse(&html).expect("page is XML");
    assert_eq!(svgs(&doc).len(), 3 * huge.levels.len() + 4);
    assert!(html.len() < 1_000_000, "{} bytes", html.len());
}

#[test]
fn steps_that_prefilled_while_decoding_are_shaded() {
    let mut run = fixture();
    // Two decode steps of the 2-job level's last round also carry prompt tokens.
    let round = run.levels[1].rounds.last_mut().expect("fixture has rounds");
    round.steps[4].prefill_tokens = 30;
    round.steps[11].prefill_tokens = 12;
    let html = page(&run, &sheet_of(&run), &verdict());
    if let Some(out) = std::env::var_os("TOKFIRE_HTML_OUT") {
        let out = Path::new(&out).with_extension("stall.html");
        std::fs::write(out, &html).expect("TOKFIRE_HTML_OUT is writable");
    }
    check_page(&run, &html);
    let doc = parse(&html).expect("checked above");
    let bands = |id: &str| {
        svgs(&doc)
            .into_iter()
            .find(|s| s.attribute("id") == Some(id))
            .map_or(0, |s| {
                (s.descendants())
                    .filter(|n| n.tag_name().name() == "rect" && has_class(n, "stall"))
                    .filter(|n| !has_class(n, "key"))
                    .count()
            })
    };
    assert_eq!((bands("timeline-0"), bands("timeline-1")), (0, 2));
    assert!(html.contains("prefill stalled decoders (2 steps)"));
    assert!(html.contains("prefill stalled decoders (none in this round)"));
}

#[test]
fn the_page_names_a_converted_dtype() {
    let mut run = fixture();
    run.config.model.dtype = tokfire::config::WeightDType::Bf16;
    let html = page(&run, &sheet(), &[]);
    let want = format!("{} (dtype bf16)", run.config.model.model);
    assert!(
        html.matches(&want).count() >= 2,
        "title and model row: {html}"
    );
}
