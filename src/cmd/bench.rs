//! `tokfire run` and `tokfire sweep`: arguments → [`RunConfig`], the benchmark, then the sheet on
//! stdout and the record path on stderr.

use std::path::PathBuf;

use crate::bench::progress::Progress;
use crate::cli::BenchArgs;
use crate::config::run::{EngineSettings, KvBudget, RunConfig};
use crate::report;

/// Builds and validates the config of `verb` over `jobs` levels.
pub fn config(
    verb: &str,
    args: &BenchArgs,
    jobs: Vec<usize>,
) -> anyhow::Result<(RunConfig, Vec<String>)> {
    let cfg = RunConfig {
        verb: verb.into(),
        model: super::model_config(&args.model)?,
        runtime: super::runtime_config(&args.runtime)?,
        workload: args.workload.clone(),
        jobs,
        rounds: args.rounds,
        warmup_rounds: args.warmup,
        sampling: args.sampling.config(),
        engine: EngineSettings {
            max_seqs: args.max_seqs,
            max_batch_tokens: args.max_batch_tokens,
            prefill_chunk: args.prefill_chunk,
            kv_budget: KvBudget::parse(&args.kv_budget)?,
        },
        max_tokens: args.max_tokens,
        out: args
            .out
            .clone()
            .unwrap_or_else(|| default_out(verb, &args.workload)),
        format: args.format,
        trace: args.trace.clone(),
        headroom: args.headroom,
    };
    let warnings = cfg.validate(args.allow_few_rounds)?;
    Ok((cfg, warnings))
}

/// `results/VERB-NAME.json`, NAME being the workload name or file stem.
fn default_out(verb: &str, workload: &str) -> PathBuf {
    let stem = std::path::Path::new(workload)
        .file_stem()
        .map_or("workload".into(), |s| s.to_string_lossy().to_string());
    let safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("results").join(format!("{verb}-{safe}.json"))
}

/// Runs the benchmark and prints the sheet.
pub fn run(verb: &str, args: &BenchArgs, jobs: Vec<usize>) -> anyhow::Result<()> {
    let (cfg, warnings) = config(verb, args, jobs)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let command: Vec<String> = std::env::args().collect();
    let mut progress = Progress::stderr();
    let record = crate::bench::sweep::run(&cfg, command, &mut progress)?;
    print!("{}", report::text::render(&record, cfg.format));
    eprintln!("record appended to {}", cfg.out.display());
    Ok(())
}
