//! `tokfire calibrate`: A/A pairs on this machine within a time budget, then each metric's noise
//! floor and the measured false-positive rate of `ab`'s rule, printed and saved as the machine
//! profile (`calibration.json` beside the results) that `ab` reads.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::bench::ab::{self, Plan};
use crate::bench::progress::Progress;
use crate::cli::CalibrateArgs;
use crate::config::run::Format;
use crate::error::ConfigError;
use crate::record::ab::{Metric, DECIDE_ROUNDS};
use crate::record::calibration::{key, Profile};
use crate::record::RunRecord;

/// Where the profile lives: beside the results file.
pub(crate) fn profile_path(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join("calibration.json")
}

/// The saved profile beside `out`, if there is one that parses.
pub(crate) fn load_profile(out: &Path) -> Option<Profile> {
    let text = crate::files::read_text(&profile_path(out), crate::files::MAX_INPUT_BYTES).ok()?;
    serde_json::from_str(&text).ok()
}

fn refuse(flag: &str, why: &str) -> anyhow::Error {
    ConfigError::flag(flag, "(given)", why).into()
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    let b = &args.bench;
    if b.trace.is_some() || b.profile || b.exit_code {
        return Err(refuse(
            "--trace/--profile/--exit-code",
            "calibrate runs A/A pairs and prints the noise floor; use them with run or ab",
        ));
    }
    if b.spec != "none" {
        return Err(refuse(
            "--spec",
            "calibrate measures the runtime's own noise: leave --spec out",
        ));
    }
    if args.pairs < 2
        || !(0.0..1.0).contains(&args.min_effect)
        || args.budget.is_nan()
        || args.budget <= 0.0
    {
        return Err(refuse(
            "--pairs/--min-effect/--budget",
            "at least 2 pairs, --min-effect from 0 to below 1, --budget above 0 seconds",
        ));
    }
    let (mut base, warnings) = super::bench::config("calibrate", b, vec![1])?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    if base.rounds < DECIDE_ROUNDS {
        eprintln!(
            "note: --rounds {} raised to {DECIDE_ROUNDS}: ab's rule decides on 5 or more",
            base.rounds
        );
        base.rounds = DECIDE_ROUNDS;
    }
    let plan = Plan {
        vary: "aa".into(),
        values: ["same".into(), "same".into()],
        expect: Metric::Decode,
        min_effect: args.min_effect,
        until_decided: 0,
        reload: false,
        drift_allowed: (base.sampling.temperature > 0.0)
            .then(|| "sampled decoding (--temperature > 0) varies the text".to_string()),
    };
    let command: Vec<String> = std::env::args().collect();
    let stop = super::bench::stop_on_signals()?;
    let mut progress = Progress::stderr();
    let started = Instant::now();
    let mut pairs: Vec<[RunRecord; 2]> = Vec::new();
    for p in 0..args.pairs {
        if started.elapsed().as_secs_f64() >= args.budget {
            eprintln!("note: --budget {} s spent after {p} pairs", args.budget);
            break;
        }
        let hooks = ab::Hooks {
            progress: &mut progress,
            stop: Some(&stop),
        };
        pairs.push(ab::run(
            [base.clone(), base.clone()],
            &plan,
            command.clone(),
            hooks,
        )?);
    }
    let profile = Profile::of(&pairs, args.min_effect, crate::bench::sweep::now_utc())
        .ok_or_else(|| anyhow::anyhow!("no A/A pair finished; nothing to calibrate from"))?;
    let path = profile_path(&base.out);
    let json = serde_json::to_string_pretty(&profile).expect("profiles serialize; this is a bug");
    std::fs::write(&path, &json).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; pass a writable --out-dir",
            path.display()
        )
    })?;
    match b.format {
        Format::Json | Format::JsonFull => println!("{json}"),
        _ => print!("{}", screen(&profile)),
    }
    eprintln!(
        "profile saved to {} (ab reads it); the A/A arms are in {}",
        path.display(),
        base.out.display()
    );
    Ok(())
}

/// The calibration for people: per metric the A/A movement and within-arm noise, the
/// false-positive rate with its uncertainty, and whether the calibration itself was disturbed.
fn screen(p: &Profile) -> String {
    let mut out = format!(
        "tokfire calibrate · {} · {} · {} threads · workload {} · {} A/A pairs of {} rounds\n\n",
        p.cpu_model, p.kernels, p.threads, p.workload, p.pairs, p.rounds
    );
    out += &format!(
        "{:<16} {:>18} {:>15} {:>17}\n",
        "metric", "A/A |B/A-1| med", "A/A worst", "within-arm noise"
    );
    for m in Metric::ALL {
        if let Some(f) = p.floors.get(&key(m)) {
            out += &format!(
                "{:<16} {:>16.1} % {:>13.1} % {:>15.1} %\n",
                m.label(),
                f.ab_change_median * 100.0,
                f.ab_change_max * 100.0,
                f.within_arm * 100.0
            );
        }
    }
    out += &format!(
        "\nfalse positives: {} of {} A/A pairs called keep or revert at --min-effect {} %\n\
         \x20            (95 % upper bound {:.0} %)\n",
        p.false_positives,
        p.pairs,
        crate::report::fixed(p.min_effect * 100.0, 1),
        p.false_positive_upper() * 100.0
    );
    out += "noise floor: a change below its metric's A/A worst cannot be told from noise here;\n\
             \x20            ab warns when --min-effect is below it\n";
    out += &match p.disturbed_rounds {
        0 => format!(
            "machine: quiet: 0 of {} rounds disturbed\n",
            p.measured_rounds
        ),
        d => format!(
            "machine: {d} of {} rounds disturbed: this calibration overstates the noise; \
             calibrate again on a quiet machine\n",
            p.measured_rounds
        ),
    };
    out
}
