//! Verb dispatch: turns clap arguments into validated configs and calls the verb's module.

mod ab;
mod bench;
mod calibrate;
mod cold;
mod compare;
mod generate;
mod inspect;
mod kernels;
mod prefill;
mod record_log;
mod report;
mod rerun;
mod session;
mod spec_cost;

use crate::cli::{Cli, Command, ModelArgs, RuntimeArgs};
use crate::config::{
    default_cache_dir, default_hf_cache_dir, DeviceSpec, ModelConfig, RuntimeConfig,
};
use crate::error::ConfigError;

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    init_logging();
    match cli.command {
        Command::Generate(args) => generate::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Run(args) => bench::run("run", &args.bench, vec![args.jobs]),
        Command::Sweep(args) => bench::run("sweep", &args.bench, args.jobs),
        Command::Ab(args) => ab::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Cold(args) => cold::run(args),
        Command::ColdChild(args) => cold::child(args),
        Command::Session(args) => session::run(args),
        Command::Prefill(args) => prefill::run(args),
        Command::SpecCost(args) => spec_cost::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Rerun(args) => rerun::run(args),
        Command::Report(args) => report::run(args),
        Command::Kernels(args) => kernels::run(args),
    }
}

/// The process exit code for an error: 130 for a run stopped by a signal (as shells report
/// Ctrl-C), else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    use crate::bench::error::BenchError;
    if let Some(
        BenchError::Interrupted { .. }
        | BenchError::StartsInterrupted { .. }
        | BenchError::StepsInterrupted { .. }
        | BenchError::CellsInterrupted { .. },
    ) = err.downcast_ref()
    {
        return 130;
    }
    1
}

/// Validates model arguments into a [`ModelConfig`].
pub(crate) fn model_config(args: &ModelArgs) -> Result<ModelConfig, ConfigError> {
    let mut cfg = base_config(&args.model, args.cache_dir.clone());
    cfg.dtype = args.dtype;
    cfg.device = DeviceSpec::parse(&args.device)?;
    cfg.device.check_built()?;
    cfg.chat_template = args.chat_template.clone();
    cfg.load = args.load;
    cfg.repack = args.repack;
    Ok(cfg)
}

/// Validates `--threads` and `--kernels` into a [`RuntimeConfig`].
pub(crate) fn runtime_config(args: &RuntimeArgs) -> Result<RuntimeConfig, ConfigError> {
    RuntimeConfig::parse(args.threads, &args.kernels)
}

/// A CPU, file-storage config for `model`, caches from flags or their defaults.
pub(crate) fn base_config(model: &str, cache_dir: Option<std::path::PathBuf>) -> ModelConfig {
    ModelConfig {
        model: model.to_string(),
        cache_dir: cache_dir.unwrap_or_else(default_cache_dir),
        hf_cache_dir: default_hf_cache_dir(),
        dtype: Default::default(),
        device: DeviceSpec::Cpu,
        chat_template: None,
        load: Default::default(),
        repack: Default::default(),
    }
}

/// Logs go to stderr, filtered by `RUST_LOG`-style `TOKFIRE_LOG` (default: warnings).
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TOKFIRE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}
