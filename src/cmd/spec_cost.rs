//! `tokfire spec-cost`: the grid's flags checked (each refused by name with its range), the
//! cells run with progress on stderr, the table on stdout and the record appended.

use crate::bench::spec_cost::{self, SpecCostPlan};
use crate::cli::SpecCostArgs;
use crate::config::run::RunConfig;
use crate::error::ConfigError;
use crate::report;

/// Most sequences, drafted tokens, prompt tokens and steps accepted.
const MAX_JOBS: usize = 64;
const MAX_K: usize = 32;
const MAX_CONTEXT: usize = 1 << 20;
const MAX_STEPS: usize = 10_000;

pub(crate) fn run(args: SpecCostArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    let command: Vec<String> = std::env::args().collect();
    let stop = super::bench::stop_on_signals()?;
    let record = spec_cost::run(&plan, command, Some(&stop), |c, i, n| {
        let median = c
            .median_s()
            .map_or("n/a".into(), |s| format!("{:.1} ms", s * 1e3));
        eprintln!(
            "cell {i}/{n}: {} jobs, k = {}: step median {median}",
            c.jobs, c.k
        );
    })?;
    print!("{}", report::spec_cost::render(&record, args.format));
    let text = report::spec_cost::render(&record, crate::config::run::Format::Text);
    super::record_log::append_and_say(&plan.config.out, &record, &text)
}

fn check(flag: &str, v: usize, range: std::ops::RangeInclusive<usize>) -> Result<(), ConfigError> {
    match range.contains(&v) {
        true => Ok(()),
        false => {
            let why = format!("from {} to {}", range.start(), range.end());
            Err(ConfigError::flag(flag, v.to_string(), why))
        }
    }
}

/// The validated plan.
pub(crate) fn plan(args: &SpecCostArgs) -> anyhow::Result<SpecCostPlan> {
    for (flag, values, range) in [
        ("--jobs", &args.jobs, 1..=MAX_JOBS),
        ("--k", &args.k, 0..=MAX_K),
    ] {
        if values.is_empty() || values.len() > MAX_JOBS {
            let v = format!("{values:?}");
            return Err(ConfigError::flag(flag, v, format!("1 to {MAX_JOBS} values")).into());
        }
        for (i, &v) in values.iter().enumerate() {
            check(flag, v, range.clone())?;
            if values[..i].contains(&v) {
                let why = format!("{v} is given twice");
                return Err(ConfigError::flag(flag, format!("{values:?}"), why).into());
            }
        }
    }
    check("--context", args.context, 1..=MAX_CONTEXT)?;
    check("--steps", args.steps, 1..=MAX_STEPS)?;
    check("--warmup", args.warmup, 0..=MAX_STEPS)?;
    let out = (args.out.clone()).unwrap_or_else(|| args.out_dir.join("spec-cost.json"));
    let config = RunConfig {
        jobs: args.jobs.clone(),
        rounds: args.steps,
        warmup_rounds: args.warmup,
        max_tokens: Some(args.warmup + args.steps + 1),
        ..super::prefill::grid_config("spec-cost", &args.model, &args.runtime, out, args.format)?
    };
    let grid = format!(
        "jobs {:?} k {:?} context {}",
        args.jobs, args.k, args.context
    );
    let workload = super::prefill::generated("spec-cost", &grid, args.seed);
    Ok(SpecCostPlan {
        config,
        workload,
        jobs: args.jobs.clone(),
        ks: args.k.clone(),
        context: args.context,
        steps: args.steps,
        warmup: args.warmup,
        seed: args.seed,
    })
}
