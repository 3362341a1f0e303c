//! `tokfire run --prefix-cache on` end to end on the tiny synthetic model: the report's
//! prefix-cache block with cold and cached prompts apart, the record's per-task reuse, the same
//! outputs as without the cache, and clear errors for budgets that cannot work.

use tokfire::record::ResultsFile;

use crate::support;
use support::{args, read, tiny, tokfire, workload};

/// Every task shares a long system prompt (many 16-token blocks) and asks a short question.
const SHARED: &str = r#"
name = "tiny-shared"
version = 1
use_case = "test"
description = "A long shared system prompt and short questions."
system = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega one two three four five six seven eight nine ten"

[criteria]
label = "test targets"
pass_rate_min = 0.0

[[tasks]]
id = "q1"
user = "first?"
max_tokens = 4
checks = [{ kind = "regex", pattern = "." }]

[[tasks]]
id = "q2"
user = "second?"
max_tokens = 4
checks = [{ kind = "regex", pattern = "." }]

[[tasks]]
id = "q3"
user = "third?"
max_tokens = 4
checks = [{ kind = "regex", pattern = "." }]
"#;

fn run(dir: &std::path::Path, name: &str, extra: &[&str]) -> (String, ResultsFile) {
    let m = tiny(dir);
    let wl = workload(dir, SHARED);
    let out = dir.join(name);
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut a = vec!["run", "--jobs", "1", "--threads=1"];
    a.extend(extra);
    a.extend(args(m, wl, o));
    let res = tokfire().args(&a).output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    (
        String::from_utf8_lossy(&res.stdout).into_owned(),
        read(&out),
    )
}

#[test]
fn cold_and_cached_prompts_are_reported_apart_with_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (plain_out, plain) = run(dir.path(), "off.json", &[]);
    let (out, on) = run(dir.path(), "on.json", &["--prefix-cache", "on"]);
    assert!(!plain_out.contains("prefix cache ("), "{plain_out}");
    assert!(
        support::has(&out, "prefix cache (--prefix-cache on;"),
        "{out}"
    );
    assert!(
        support::has(&out, "cold 3 prompts") && support::has(&out, "cached 6 prompts"),
        "one job, three tasks, three rounds: the first task of each round is cold\n{out}"
    );
    let run = &on.runs[0];
    assert!(run.config.engine.prefix_cache.is_on());
    assert!(run.scheduler.prefix_cache_tokens > 0);
    // The block size is the record's, not the rendering binary's: an older record without it
    // says so instead of printing today's size.
    assert_eq!(run.scheduler.prefix_block_tokens, Some(16));
    assert!(support::has(&out, "16-token blocks"), "{out}");
    let mut old = run.clone();
    old.scheduler.prefix_block_tokens = None;
    let text = tokfire::report::text::render(&old, tokfire::config::run::Format::Text);
    assert!(
        support::has(&text, "blocks of a size this record does not hold"),
        "{text}"
    );
    let outputs = |r: &ResultsFile| -> Vec<String> {
        r.runs[0].levels[0]
            .rounds
            .iter()
            .flat_map(|r| r.tasks.iter().map(|t| t.output.clone()))
            .collect()
    };
    assert_eq!(outputs(&on), outputs(&plain));
    for round in &run.levels[0].rounds {
        for t in &round.tasks {
            let first = t.start_s
                == round
                    .tasks
                    .iter()
                    .map(|t| t.start_s)
                    .fold(f64::MAX, f64::min);
            assert_eq!(
                t.first_turn_reused == 0,
                first,
                "{}: {}",
                t.task,
                t.first_turn_reused
            );
            assert!(t.reused_tokens < t.prompt_tokens);
        }
    }
    let s = run.summary.as_ref().unwrap();
    assert_eq!(s.levels[0].prefix.prefix_cached_prompts, 6);
    assert!(s.levels[0].prefix.prefix_hit_rate.unwrap() > 0.3);
    let csv = tokfire()
        .args([
            "report",
            dir.path().join("on.json").to_str().unwrap(),
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    for (name, has) in [("on.json", true), ("off.json", false)] {
        let html = dir.path().join(format!("{name}.html"));
        let res = tokfire()
            .args(["report", dir.path().join(name).to_str().unwrap()])
            .args(["--html", html.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(res.status.success());
        let page = std::fs::read_to_string(&html).unwrap();
        assert_eq!(support::has(&page, "<h2>Prefix cache</h2>"), has, "{name}");
    }
    assert!(
        csv.lines().next().unwrap().contains("prefix_hit_rate"),
        "{csv}"
    );
}

#[test]
fn budgets_that_cannot_work_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let wl = workload(dir.path(), SHARED);
    let o = dir.path().join("x.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        o.to_str().unwrap(),
    );
    for (extra, want) in [
        (vec!["--prefix-cache-budget", "8"], "--prefix-cache-budget"),
        (
            vec!["--prefix-cache-budget", "16384"],
            "--prefix-cache-budget",
        ),
        (
            vec!["--prefix-cache-budget", "lots"],
            "--prefix-cache-budget",
        ),
        (vec!["--spec", "mtp"], "--prefix-cache"),
    ] {
        let mut a = vec!["run", "--jobs", "1", "--prefix-cache", "on"];
        a.extend(&extra);
        a.extend(args(m, wl, o));
        let res = tokfire().args(&a).output().unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert!(!res.status.success(), "{extra:?} succeeded");
        assert!(!support::has(&err, "panicked"), "{err}");
        assert!(support::has(&err, want), "{extra:?}: {err}");
    }
}
