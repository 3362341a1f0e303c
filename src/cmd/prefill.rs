//! `tokfire prefill`: the grid's flags checked (each refused by name with its range), the
//! cells run with progress on stderr, the table on stdout and the record appended.

use crate::bench::prefill::{self, Grid, PrefillPlan};
use crate::cli::PrefillArgs;
use crate::config::run::{EngineSettings, RunConfig, DEFAULT_HEADROOM};
use crate::error::ConfigError;
use crate::record::prefill::CellRecord;
use crate::report;
use crate::workload::{Criteria, Workload};

/// Most tokens of a prompt or a depth (the largest context a model file may declare).
const MAX_TOKENS: usize = 1 << 20;
/// Most values in one list flag, and most samples or warm-up samples per cell.
const MAX_LIST: usize = 64;
const MAX_SAMPLES: usize = 1000;

pub(crate) fn run(args: PrefillArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    let command: Vec<String> = std::env::args().collect();
    let stop = super::bench::stop_on_signals()?;
    let record = prefill::run(&plan, command, Some(&stop), |c, i, n| {
        eprintln!(
            "{}",
            report::wrap(&format!("cell {i}/{n}: {}", progress_line(c)))
        );
    })?;
    print!("{}", report::prefill::render(&record, args.format));
    let text = report::prefill::render(&record, crate::config::run::Format::Text);
    super::record_log::append_and_say(&plan.config.out, &record, &text)
}

fn progress_line(c: &CellRecord) -> String {
    let what = format!(
        "{} tokens at depth {}, {} % cached, chunk {}",
        c.length, c.depth, c.cached_pct, c.chunk
    );
    match (&c.skipped, c.ttft_median()) {
        (Some(why), _) => format!("{what}: n/a ({why})"),
        (None, Some(t)) => format!("{what}: TTFT median {t:.3} s"),
        (None, None) => format!("{what}: no sample"),
    }
}

/// A list flag: 1 to [`MAX_LIST`] values, each in `range`, no value twice.
fn list<T: Copy + PartialOrd + PartialEq + std::fmt::Display>(
    flag: &str,
    values: &[T],
    range: std::ops::RangeInclusive<T>,
) -> Result<Vec<T>, ConfigError> {
    let shown = || {
        values
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if values.is_empty() || values.len() > MAX_LIST {
        return Err(ConfigError::flag(
            flag,
            shown(),
            format!("1 to {MAX_LIST} values"),
        ));
    }
    if let Some(v) = values.iter().find(|v| !range.contains(v)) {
        let why = format!("each value from {} to {}", range.start(), range.end());
        return Err(ConfigError::flag(flag, v.to_string(), why));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(ConfigError::flag(
                flag,
                shown(),
                format!("{v} is given twice"),
            ));
        }
    }
    Ok(values.to_vec())
}

/// The validated plan: the grid, the configuration the record keeps, the record's workload.
pub(crate) fn plan(args: &PrefillArgs) -> anyhow::Result<PrefillPlan> {
    let grid = Grid {
        lengths: list("--lengths", &args.lengths, 1..=MAX_TOKENS)?,
        depths: list("--depths", &args.depths, 0..=MAX_TOKENS)?,
        cached_pct: list("--cached", &args.cached, 0..=100)?,
        chunks: list("--chunks", &args.chunks, 1..=MAX_TOKENS)?,
        samples: args.samples,
        warmup: args.warmup,
        seed: args.seed,
        cold_start: args.cold_start,
    };
    if !(1..=MAX_SAMPLES).contains(&args.samples) {
        let why = format!("1 to {MAX_SAMPLES} (3 or more for a median)");
        return Err(ConfigError::flag("--samples", args.samples.to_string(), why).into());
    }
    if args.warmup > MAX_SAMPLES {
        let why = format!("0 to {MAX_SAMPLES}");
        return Err(ConfigError::flag("--warmup", args.warmup.to_string(), why).into());
    }
    if args.samples < 3 {
        eprintln!(
            "warning: --samples {}: a median needs 3 or more",
            args.samples
        );
    }
    let out = (args.out.clone()).unwrap_or_else(|| args.out_dir.join("prefill.json"));
    let config = RunConfig {
        rounds: args.samples,
        warmup_rounds: args.warmup,
        engine: EngineSettings {
            max_seqs: 1,
            prefill_chunk: grid.chunks[0],
            ..Default::default()
        },
        max_tokens: Some(1),
        ..grid_config("prefill", &args.model, &args.runtime, out, args.format)?
    };
    let (workload, config) = match &args.prompts {
        None => (generated_workload(&grid), config),
        Some(name) => {
            let w = crate::workload::load(name)
                .map_err(|e| anyhow::anyhow!("--prompts {name}: {e}"))?;
            if w.tasks.is_empty() {
                let why = "a workload with at least one task";
                return Err(ConfigError::flag("--prompts", name.clone(), why).into());
            }
            let config = RunConfig {
                workload: name.clone(),
                ..config
            };
            (w, config)
        }
    };
    let exe = std::env::current_exe().map_err(|e| {
        anyhow::anyhow!("--cold-start: cannot find this program's own file to start it ({e})")
    })?;
    Ok(PrefillPlan {
        config,
        workload,
        grid,
        exe,
        from_workload: args.prompts.is_some(),
    })
}

/// The record's workload: the generated prompts, named by their seed and grid.
fn generated_workload(g: &Grid) -> Workload {
    let join = |v: Vec<String>| v.join(",");
    let grid = format!(
        "lengths {} depths {} cached {} chunks {}",
        join(g.lengths.iter().map(|x| x.to_string()).collect()),
        join(g.depths.iter().map(|x| x.to_string()).collect()),
        join(g.cached_pct.iter().map(|x| x.to_string()).collect()),
        join(g.chunks.iter().map(|x| x.to_string()).collect()),
    );
    generated("prefill", &grid, g.seed)
}

/// The workload a grid of generated prompts is recorded under: `verb`, described by its grid
/// and seed, whose hash changes with either (so runs of different grids never pass for the
/// same workload), with no tasks and no criteria.
pub(super) fn generated(verb: &str, grid: &str, seed: u64) -> Workload {
    let description = format!("{verb} {grid} seed {seed}");
    let criteria = Criteria {
        label: format!("none ({verb} cells are timed, not judged)"),
        ttft_max_s: None,
        per_job_tok_s_min: None,
        completion_max_s: None,
        pass_rate_min: None,
    };
    let hash = crate::workload::schema::content_hash(&description, 1, &criteria, &[]);
    Workload {
        name: verb.into(),
        version: 1,
        description,
        use_case: "token ids drawn from the model's vocabulary".into(),
        source: format!("--seed {seed}"),
        hash,
        locked: false,
        criteria,
        tasks: Vec::new(),
    }
}

/// The configuration a grid verb records: its model and runtime flags, one job, greedy
/// sampling, `run`'s engine defaults; the caller sets what the grid decides.
pub(super) fn grid_config(
    verb: &str,
    model: &crate::cli::ModelArgs,
    runtime: &crate::cli::RuntimeArgs,
    out: std::path::PathBuf,
    format: crate::config::run::Format,
) -> anyhow::Result<RunConfig> {
    crate::config::run::check_output("--out", &out)?;
    Ok(RunConfig {
        verb: verb.into(),
        model: super::model_config(model)?,
        runtime: super::runtime_config(runtime)?,
        workload: "generated".into(),
        jobs: vec![1],
        rounds: 1,
        warmup_rounds: 0,
        sampling: Default::default(),
        engine: EngineSettings::default(),
        max_tokens: Some(1),
        out,
        format,
        trace: None,
        headroom: DEFAULT_HEADROOM,
        notes: Vec::new(),
        spec: Default::default(),
        think: Default::default(),
        quiet_wait_s: 0.0,
    })
}
