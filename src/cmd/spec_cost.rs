//! `tokfire spec-cost`: the grid's flags checked (each refused by name with its range), the
//! cells run with progress on stderr, the table on stdout and the record appended.

use crate::bench::spec_cost::{self, SpecCostPlan};
use crate::cli::SpecCostArgs;
use crate::config::run::{EngineSettings, RunConfig, DEFAULT_HEADROOM};
use crate::error::ConfigError;
use crate::report;
use crate::workload::{Criteria, Workload};

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
    let config = RunConfig {
        verb: "spec-cost".into(),
        model: super::model_config(&args.model)?,
        runtime: super::runtime_config(&args.runtime)?,
        workload: "generated".into(),
        jobs: args.jobs.clone(),
        rounds: args.steps,
        warmup_rounds: args.warmup,
        sampling: Default::default(),
        engine: EngineSettings::default(),
        max_tokens: Some(args.warmup + args.steps + 1),
        out: args
            .out
            .clone()
            .unwrap_or_else(|| args.out_dir.join("spec-cost.json")),
        format: args.format,
        trace: None,
        headroom: DEFAULT_HEADROOM,
        notes: Vec::new(),
        spec: Default::default(),
        think: Default::default(),
        quiet_wait_s: 0.0,
    };
    crate::config::run::check_output("--out", &config.out)?;
    let name = format!(
        "spec-cost jobs {:?} k {:?} context {} seed {}",
        args.jobs, args.k, args.context, args.seed
    );
    let criteria = Criteria {
        label: "none (verify steps are timed, not judged)".into(),
        ttft_max_s: None,
        per_job_tok_s_min: None,
        completion_max_s: None,
        pass_rate_min: None,
    };
    let hash = crate::workload::schema::content_hash(&name, 1, &criteria, &[]);
    let workload = Workload {
        name: "spec-cost".into(),
        version: 1,
        description: name,
        use_case: "token ids drawn from the model's vocabulary".into(),
        source: format!("--seed {}", args.seed),
        hash,
        locked: false,
        criteria,
        tasks: Vec::new(),
    };
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
