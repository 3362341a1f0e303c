//! `tokfire rerun RECORD`: runs the exact configuration stored in a run again on this build and
//! machine, appends the new run to the same record and compares it with the stored one.

use crate::bench::progress::Progress;
use crate::bench::sweep::Hooks;
use crate::cli::RerunArgs;
use crate::record::io;
use crate::record::RunRecord;

pub fn run(args: RerunArgs) -> anyhow::Result<()> {
    let file = io::read(&args.record)?;
    let old = io::select(&args.record, &file, args.run.as_deref(), false)?[0].clone();
    anyhow::ensure!(
        old.ab.is_none(),
        "{}: run {} is one arm of an A/B; rerun the A/B with its command: {}",
        args.record.display(),
        old.id,
        old.command.join(" ")
    );
    let mut cfg = old.config.clone();
    cfg.out = args.record.clone();
    if !args.note.is_empty() {
        cfg.notes = args.note.clone();
    }
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
    print!(
        "{}",
        crate::report::text::render(&new, crate::config::run::Format::Text)
    );
    println!();
    print!(
        "{}",
        super::compare::render(
            &old,
            &new,
            args.expect,
            crate::record::ab::DEFAULT_MIN_EFFECT,
            true
        )?
    );
    eprintln!(
        "rerun of {} appended to {} as {}",
        old.id,
        cfg.out.display(),
        new.id
    );
    Ok(())
}
