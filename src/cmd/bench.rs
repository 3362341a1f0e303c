//! `tokfire run` and `tokfire sweep`: arguments → [`RunConfig`], the benchmark, then the sheet on
//! stdout and the record path on stderr.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use crate::bench::progress::Progress;
use crate::bench::sweep::Hooks;
use crate::cli::BenchArgs;
use crate::config::run::{EngineSettings, KvBudget, RunConfig};
use crate::record::RunRecord;
use crate::report;

/// Builds and validates the config of `verb` over `jobs` levels.
pub(crate) fn config(
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
            schedule: args.schedule,
            prefix_cache: args.prefix_cache,
            prefix_cache_budget: args
                .prefix_cache_budget
                .as_deref()
                .map(|b| KvBudget::parse_for("--prefix-cache-budget", b))
                .transpose()?,
        },
        max_tokens: args.max_tokens,
        out: args
            .out
            .clone()
            .unwrap_or_else(|| args.out_dir.join(default_name(verb, &args.workload))),
        format: args.format,
        trace: args.trace.clone(),
        headroom: args.headroom,
        quiet_wait_s: args.quiet_wait,
        notes: args.note.clone(),
        spec: crate::config::spec::SpecConfig {
            method: crate::spec::SpecMethod::parse(&args.spec)?,
            k: args.spec_k,
            ngram: crate::spec::parse_ngram(&args.lookup_ngram)?,
            no_baseline: args.no_baseline,
            draft_dtype: args.draft_dtype,
        },
        think: crate::config::think::ThinkConfig {
            think_s: args.think,
            jitter_s: args.think_jitter,
            stagger_s: args.stagger,
            seed: args.sampling.config().seed,
        },
    };
    cfg.think.validate()?;
    let warnings = cfg.validate(args.allow_few_rounds)?;
    Ok((cfg, warnings))
}

/// `VERB-NAME.json`, NAME being the workload name or file stem.
fn default_name(verb: &str, workload: &str) -> String {
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
    format!("{verb}-{safe}.json")
}

/// Runs the benchmark and prints the sheet; appends the one-screen summary to the `.txt` log
/// beside the record. With `--exit-code`, a verdict that is not comfortable at the highest level
/// is an error (exit status 1).
pub(crate) fn run(verb: &str, args: &BenchArgs, jobs: Vec<usize>) -> anyhow::Result<()> {
    let (cfg, warnings) = config(verb, args, jobs)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let command: Vec<String> = std::env::args().collect();
    let stop = stop_on_signals()?;
    let mut progress = Progress::stderr();
    let log = cfg.out.with_extension("txt");
    let mut finished = |run: &RunRecord| {
        if let Err(e) = append_log(&cfg.out, run) {
            eprintln!("warning: {e}");
        }
    };
    let hooks = Hooks {
        progress: &mut progress,
        stop: Some(&stop),
        finished: &mut finished,
    };
    let record = crate::bench::sweep::run(&cfg, command, hooks)?;
    print!("{}", report::text::render(&record, cfg.format));
    if args.profile {
        print!("\n{}", report::profile::screen(&record));
    }
    super::record_log::say_where(&cfg.out, &log, "");
    let verdict = record.summary().verdict;
    if args.exit_code && !verdict.comfortable_at_highest {
        return Err(crate::error::ConfigError::NotComfortable { line: verdict.line }.into());
    }
    Ok(())
}

/// The plain-text log entry of a finished run: a header line, the one-screen summary.
pub(super) fn append_log(
    out: &std::path::Path,
    run: &RunRecord,
) -> Result<(), crate::record::io::RecordError> {
    let writer = crate::record::io::RecordWriter::at(out);
    let d = run.summary();
    let text = format!(
        "== {} · run {} · {} ==\n{}\n{}\n",
        run.started_utc,
        run.id,
        run.status.label(),
        report::text::header(run),
        report::summary::one_screen(run, &d)
    );
    writer.append_log(&report::wrap(&text)).map(|_| ())
}

/// SIGINT, SIGTERM and SIGHUP (the terminal closed) set the returned flag to the signal number
/// (the run then stops between two engine steps and saves what it has); a second one ends the
/// process at once.
pub(super) fn stop_on_signals() -> anyhow::Result<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    let stop = Arc::new(AtomicUsize::new(0));
    let again = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&again))?;
        flag::register(sig, Arc::clone(&again))?;
        flag::register_usize(sig, Arc::clone(&stop), sig as usize)?;
    }
    Ok(stop)
}
