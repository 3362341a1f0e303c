//! `tokfire rerun RECORD`: runs the configuration stored in a `run`/`sweep` record again on this
//! build and machine, appends the new run to the same record and compares it with the stored one.
//! A record is data, not authority: the stored configuration is validated like a command line,
//! the only file written is the record itself (a stored `--trace` path is dropped), and record
//! kinds that are not a `run`/`sweep` (an A/B arm, cold starts, a session) are refused with the
//! command that repeats them as their own verb.

use crate::bench::progress::Progress;
use crate::bench::sweep::Hooks;
use crate::cli::RerunArgs;
use crate::config::run::RunConfig;
use crate::record::io;
use crate::record::kind::KindTag;
use crate::record::RunRecord;
use crate::report::summary::command_line;

pub fn run(args: RerunArgs) -> anyhow::Result<()> {
    let file = io::read(&args.record)?;
    let old = io::select(&args.record, &file, args.run.as_deref(), false)?[0].clone();
    let cfg = config(&args, &old)?;
    // What will run, said before it runs: the record is someone's data, not an instruction.
    let plan = crate::report::wrap(&what_runs(&old, &cfg));
    eprintln!("{}", crate::report::terminal_safe(&plan));
    let command: Vec<String> = std::env::args().collect();
    let stop = super::bench::stop_on_signals()?;
    let mut progress = Progress::stderr();
    let mut finished = |run: &RunRecord| {
        if let Err(e) = super::bench::append_log(&cfg.out, run) {
            eprintln!("warning: {e}");
        }
    };
    let hooks = Hooks {
        progress: &mut progress,
        stop: Some(&stop),
        finished: &mut finished,
    };
    let new = crate::bench::sweep::run(&cfg, command, hooks)?;
    let out = crate::report::text::render(&new, crate::config::run::Format::Text)
        + "\n"
        + &super::compare::render(
            &old,
            &new,
            args.expect,
            crate::record::ab::DEFAULT_MIN_EFFECT,
            true,
        )?;
    print!("{}", crate::report::terminal_safe(&out));
    eprintln!(
        "rerun of {} appended to {} as {}",
        old.id,
        cfg.out.display(),
        new.id
    );
    Ok(())
}

/// One paragraph: the run repeated and the settings it runs with, then where it came from.
fn what_runs(old: &RunRecord, cfg: &RunConfig) -> String {
    let jobs: Vec<String> = cfg.jobs.iter().map(|j| j.to_string()).collect();
    format!(
        "rerun of {}: tokfire {} · workload {} · model {} · jobs {} · {} + {} warm-up · \
         --threads {} · --kernels {} · --spec {} · out {}\n(stored command: {})",
        old.id,
        cfg.verb,
        cfg.workload,
        cfg.model.model,
        jobs.join(","),
        crate::fmt::plural(cfg.rounds, "measured round"),
        cfg.warmup_rounds,
        cfg.runtime
            .threads
            .map_or("default".into(), |t| t.to_string()),
        cfg.runtime.kernels_flag(),
        cfg.spec.method.label(),
        cfg.out.display(),
        command_line(&old.command)
    )
}

/// The stored run's configuration, checked as if typed again: refused for record kinds `rerun`
/// cannot repeat, validated, writing only to the record given.
fn config(args: &RerunArgs, old: &RunRecord) -> anyhow::Result<RunConfig> {
    let path = args.record.display();
    let as_own_verb = |kind: &str| {
        anyhow::anyhow!(
            "{path}: run {} is {kind}; rerun repeats `run` and `sweep` records only. Repeat it \
             with its own command: {}",
            old.id,
            command_line(&old.command)
        )
    };
    match (old.kind.tag(), old.config.verb.as_str()) {
        (KindTag::AbArm, _) => return Err(as_own_verb("one arm of an A/B")),
        (KindTag::Cold, _) | (_, "cold") => {
            return Err(as_own_verb("a set of cold starts (`tokfire cold`)"))
        }
        (KindTag::Session, _) | (_, "session") => {
            return Err(as_own_verb("a session (`tokfire session`)"))
        }
        (KindTag::Prefill, _) | (_, "prefill") => {
            return Err(as_own_verb("a prefill grid (`tokfire prefill`)"))
        }
        (KindTag::SpecCost, _) | (_, "spec-cost") => {
            return Err(as_own_verb("a verify-cost grid (`tokfire spec-cost`)"))
        }
        (KindTag::Baseline, _) => return Err(as_own_verb("the baseline of a speculative run")),
        (KindTag::Run, _) => {}
    }
    anyhow::ensure!(
        matches!(old.config.verb.as_str(), "run" | "sweep"),
        "{path}: run {} was written by `tokfire {}`, which rerun cannot repeat",
        old.id,
        old.config.verb
    );
    let mut cfg = old.config.clone();
    cfg.out = args.record.clone();
    // Only `--out` is written: a stored trace path would let a shared record write anywhere.
    cfg.trace = None;
    // Models are fetched into this machine's caches, never into a path the record names.
    cfg.model.cache_dir = std::env::var_os("TOKFIRE_CACHE")
        .filter(|v| !v.is_empty())
        .map_or_else(crate::config::default_cache_dir, Into::into);
    cfg.model.hf_cache_dir = crate::config::default_hf_cache_dir();
    if let Some(n) = args.rounds {
        cfg.rounds = n;
    }
    if !args.note.is_empty() {
        cfg.notes = args.note.clone();
    }
    cfg.model.device.check_built()?;
    crate::config::RuntimeConfig::parse(cfg.runtime.threads, &cfg.runtime.kernels_flag())?;
    cfg.think.validate()?;
    let now = crate::workload::load(&cfg.workload)?;
    anyhow::ensure!(
        now.hash == old.workload.hash,
        "{path}: workload {} has changed since run {} (hash {} then, {} now): a rerun would \
         blame the build for the edit; restore the workload, or run `tokfire sweep` afresh",
        cfg.workload,
        old.id,
        crate::fmt::hash_prefix(&old.workload.hash),
        crate::fmt::hash_prefix(&now.hash)
    );
    let warnings = cfg.validate(true).map_err(|e| {
        anyhow::anyhow!(
            "{path}: the stored configuration of run {} is refused: {e}",
            old.id
        )
    })?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok(cfg)
}
