//! `tokfire compare OLD NEW`: two saved runs side by side with ratios and the A/B verdict (new
//! against old), after checking they are comparable: the same workload (content hash), model
//! (sha256) and settings. What differs in build, machine and runtime is listed, not refused.

use std::path::Path;

use crate::cli::CompareArgs;
use crate::fmt::hash_prefix as short;
use crate::record::ab::Metric;
use crate::record::arms::{self, Judging};
use crate::record::diff::{differences, Difference};
use crate::record::{io, RunRecord};
use crate::report;

/// Why two runs cannot be compared (without `--force`).
#[derive(Debug, thiserror::Error)]
#[error("{what} differ: {detail}; compare runs of the same {what}, or pass --force")]
pub struct NotComparable {
    what: String,
    detail: String,
}

/// Config paths that do not change what is measured (where results go, how they print).
const IGNORED: &[&str] = &[
    "out",
    "format",
    "trace",
    "verb",
    "notes",
    "rounds",
    "warmup_rounds",
    "headroom",
    "quiet_wait_s",
    "model.cache_dir",
    "model.hf_cache_dir",
];

/// Refusals (workload, model, settings) and the differences that are the point (build, machine).
pub fn check(old: &RunRecord, new: &RunRecord) -> (Vec<NotComparable>, Vec<Difference>) {
    let mut refuse = Vec::new();
    let (wo, wn) = (&old.workload, &new.workload);
    if wo.hash != wn.hash {
        refuse.push(NotComparable {
            what: "workloads".into(),
            detail: format!(
                "{}@{} hash {} in {} vs {}@{} hash {} in {}",
                wo.name,
                wo.version,
                short(&wo.hash),
                old.id,
                wn.name,
                wn.version,
                short(&wn.hash),
                new.id
            ),
        });
    }
    if old.model.sha256 != new.model.sha256 {
        refuse.push(NotComparable {
            what: "models".into(),
            detail: format!(
                "sha256 {} in {} vs {} in {}",
                short(&old.model.sha256),
                old.id,
                short(&new.model.sha256),
                new.id
            ),
        });
    }
    let (jo, jn) = (job_levels(old), job_levels(new));
    if jo != jn {
        refuse.push(NotComparable {
            what: "job levels".into(),
            detail: format!(
                "{} in {} vs {} in {} (levels are matched by job count)",
                jobs_list(&jo),
                old.id,
                jobs_list(&jn),
                new.id
            ),
        });
    }
    let settings: Vec<String> = differences(&old.config, &new.config)
        .into_iter()
        .filter(|d| {
            !IGNORED
                .iter()
                .chain(&["jobs"])
                .any(|p| d.path == *p || d.path.starts_with(&format!("{p}.")))
        })
        .map(|d| d.to_string())
        .collect();
    if !settings.is_empty() {
        refuse.push(NotComparable {
            what: "settings".into(),
            detail: settings.join("; "),
        });
    }
    let mut point = Vec::new();
    for (name, d) in [
        ("build", differences(&old.build, &new.build)),
        ("machine", differences(&old.machine, &new.machine)),
        ("runtime", differences(&old.runtime, &new.runtime)),
    ] {
        point.extend(d.into_iter().map(|mut x| {
            x.path = format!("{name}.{}", x.path);
            x
        }));
    }
    (refuse, point)
}

/// The job counts a run measured (its levels), ascending.
fn job_levels(run: &RunRecord) -> Vec<usize> {
    let mut jobs: Vec<usize> = run.summary().levels.iter().map(|l| l.jobs).collect();
    jobs.sort_unstable();
    jobs
}

fn jobs_list(jobs: &[usize]) -> String {
    if jobs.is_empty() {
        return "no measured level".into();
    }
    let j: Vec<String> = jobs.iter().map(usize::to_string).collect();
    format!("jobs {}", j.join(","))
}

/// The comparison screen of `new` against `old`; errors when not comparable and not forced.
pub fn render(
    old: &RunRecord,
    new: &RunRecord,
    expect: Metric,
    min_effect: f64,
    force: bool,
) -> anyhow::Result<String> {
    let (refuse, point) = check(old, new);
    let mut out = String::new();
    if let Some(first) = refuse.first() {
        if !force {
            let all: Vec<String> = refuse.iter().map(|r| r.to_string()).collect();
            let _ = first;
            anyhow::bail!(
                "{} and {} are not comparable: {}",
                old.id,
                new.id,
                all.join("; ")
            );
        }
        for r in &refuse {
            out += &format!("warning (--force): {r}\n");
        }
    }
    out += &format!(
        "old: {} · {} · {}\nnew: {} · {} · {}\n",
        old.id,
        old.started_utc,
        report::text::header(old),
        new.id,
        new.started_utc,
        report::text::header(new)
    );
    if point.is_empty() {
        out += "differs: nothing in build, machine or runtime\n";
    } else {
        out += "differs:\n";
        for d in &point {
            out += &format!("  {d}\n");
        }
    }
    match (old.prefill(), new.prefill()) {
        (Some(a), Some(b)) => {
            out += &format!("old machine: {}\n", report::prefill::machine_line(a));
            out += &format!("new machine: {}\n", report::prefill::machine_line(b));
            out += &report::prefill::compare(a, b, min_effect);
            return Ok(report::wrap(&out));
        }
        (None, None) => {}
        _ => anyhow::bail!(
            "{} and {} are not comparable: a prefill grid compares with another prefill grid \
             only",
            old.id,
            new.id
        ),
    }
    match (old.spec_cost(), new.spec_cost()) {
        (Some(a), Some(b)) => {
            out += &report::spec_cost::compare(a, b, min_effect);
            return Ok(report::wrap(&out));
        }
        (None, None) => {}
        _ => anyhow::bail!(
            "{} and {} are not comparable: a spec-cost grid compares with another spec-cost \
             grid only",
            old.id,
            new.id
        ),
    }
    for (side, run) in [("old", old), ("new", new)] {
        let line = report::summary::machine_line(&run.summary())
            .unwrap_or_else(|| "n/a (no sentinel readings in this record)".into());
        out += &format!("{side} machine: {line}\n");
    }
    out += &report::ab::side_by_side(&old.summary().levels, &new.summary().levels);
    for c in report::baseline::collapse_between(old, new, "the old run") {
        out += &c;
    }
    let judging = Judging {
        expect,
        min_effect,
        drift_allowed: None,
        seed: old.config.sampling.seed,
        looks: 1,
        look: 1,
    };
    let new_jobs = job_levels(new);
    let common: Vec<usize> = job_levels(old)
        .into_iter()
        .filter(|j| new_jobs.contains(j))
        .collect();
    if common.is_empty() {
        out += "verdict: none — the two runs share no measured job level\n";
    }
    for jobs in common {
        let v = arms::verdict_at(old, new, &judging, jobs);
        out += &format!("at {}:\n", report::plural(jobs, "job"));
        out += &report::ab::verdict_block(old, new, &v);
    }
    Ok(report::wrap(&out))
}

fn pick<'a>(
    path: &Path,
    file: &'a crate::record::ResultsFile,
    id: Option<&str>,
    before_last: bool,
) -> anyhow::Result<&'a RunRecord> {
    if id.is_none() && before_last {
        let n = file.runs.len();
        anyhow::ensure!(
            n >= 2,
            "{}: one run only; compare needs two (pass a second file, or --old-run/--new-run)",
            path.display()
        );
        return Ok(&file.runs[n - 2]);
    }
    Ok(io::select(path, file, id, false)?[0])
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    if !(0.0..1.0).contains(&args.min_effect) {
        return Err(crate::error::ConfigError::flag(
            "--min-effect",
            args.min_effect.to_string(),
            "a fraction from 0 to below 1, e.g. 0.03 for 3 %",
        )
        .into());
    }
    let old_file = io::read(&args.old)?;
    let new_file = io::read(&args.new)?;
    let same = args.old == args.new;
    let old = pick(
        &args.old,
        &old_file,
        args.old_run.as_deref(),
        same && args.new_run.is_none(),
    )?;
    let new = pick(&args.new, &new_file, args.new_run.as_deref(), false)?;
    let out = render(old, new, args.expect, args.min_effect, args.force)?;
    print!("{}", crate::report::terminal_safe(&out));
    Ok(())
}
