//! `tokfire ab`: `--vary KEY=A,B` (or `--aa`) → two validated [`RunConfig`]s that differ in that
//! one variable and nothing else (each arm is the user's command line re-parsed by clap with
//! `--KEY=VALUE` in place of `--vary`; the keys are `cli::vary`'s), the interleaved run, then the
//! verdict screen on stdout.

use clap::{CommandFactory, Parser};

use crate::bench::ab::{self, Plan};
use crate::bench::progress::Progress;
use crate::cli::AbArgs;
use crate::config::run::RunConfig;
use crate::error::ConfigError;
use crate::record::diff::differences;
use crate::report;

fn bad(flag: &str, value: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::flag(flag, value, why)
}

/// The two arms' configs and the plan, or the refusal.
pub fn configs(
    args: &AbArgs,
    argv: &[String],
) -> anyhow::Result<([RunConfig; 2], Plan, Vec<String>)> {
    if let Some(path) = &args.bench.trace {
        return Err(bad(
            "--trace",
            &path.display().to_string(),
            "ab interleaves two arms in one process, so one trace would mix them; trace one arm \
             with `tokfire run --trace FILE` and that arm's flags",
        )
        .into());
    }
    let (base, warnings) = super::bench::config("ab", &args.bench, vec![args.jobs])?;
    if !(0.0..1.0).contains(&args.min_effect) {
        return Err(bad(
            "--min-effect",
            &args.min_effect.to_string(),
            "a fraction from 0 to below 1, e.g. 0.03 for 3 %",
        )
        .into());
    }
    let drift_sampled = (base.sampling.temperature > 0.0)
        .then(|| "sampled decoding (--temperature > 0) varies the text".to_string());
    if args.aa {
        let plan = Plan {
            vary: "aa".into(),
            values: ["same".into(), "same".into()],
            expect: args.expect,
            min_effect: args.min_effect,
            until_decided: args.until_decided,
            reload: false,
            drift_allowed: drift_sampled,
        };
        return Ok(([base.clone(), base], plan, warnings));
    }
    let spec =
        match args.vary.as_slice() {
            [] => return Err(bad(
                "--vary",
                "(none)",
                "name the one variable, e.g. --vary threads=1,2, or pass --aa for the noise check",
            )
            .into()),
            [one] => one,
            [a, b, ..] => {
                return Err(bad(
                    "--vary",
                    &format!("{a} and {b}"),
                    "an A/B changes exactly one variable; run one ab per variable",
                )
                .into())
            }
        };
    let (key, values) = spec
        .split_once('=')
        .ok_or_else(|| bad("--vary", spec, "expected KEY=A,B, e.g. threads=1,2"))?;
    let arg = crate::cli::vary::key(key).map_err(|why| bad("--vary", spec, why))?;
    let vals: Vec<&str> = values.split(',').map(str::trim).collect();
    let [va, vb] = vals.as_slice() else {
        return Err(bad(
            "--vary",
            spec,
            format!("exactly two values are needed (A,B), got {}", vals.len()),
        )
        .into());
    };
    if va == vb {
        return Err(bad(
            "--vary",
            spec,
            "A and B are the same value; pass --aa for two identical arms",
        )
        .into());
    }
    given_twice(argv, &arg, spec)?;
    let a = arm(argv, key, va)?;
    let b = arm(argv, key, vb)?;
    if differences(&a, &b).is_empty() {
        return Err(bad(
            "--vary",
            spec,
            "A and B resolve to the same configuration; pass --aa for two identical arms",
        )
        .into());
    }
    let plan = Plan {
        vary: key.into(),
        values: [va.to_string(), vb.to_string()],
        expect: args.expect,
        min_effect: args.min_effect,
        until_decided: args.until_decided,
        reload: ab::reload(&a, &b),
        drift_allowed: ab::drift(&a, &b).map(String::from).or(drift_sampled),
    };
    Ok(([a, b], plan, warnings))
}

/// The user's command line without its `--vary`.
fn without_vary(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip = false;
    for s in argv {
        if std::mem::take(&mut skip) {
            continue;
        }
        if s == "--vary" {
            skip = true;
        } else if !s.starts_with("--vary=") {
            out.push(s.clone());
        }
    }
    out
}

/// Refuses a key that is also given as its own flag: the two would contradict each other.
fn given_twice(argv: &[String], arg: &clap::Arg, spec: &str) -> Result<(), ConfigError> {
    let m = crate::cli::Cli::command()
        .try_get_matches_from(without_vary(argv))
        .map_err(|e| bad("--vary", spec, clap_reason(&e)))?;
    let given = m.subcommand_matches("ab").is_some_and(|m| {
        m.value_source(arg.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine)
    });
    let flag = arg.get_long().unwrap_or_default();
    match given {
        true => Err(bad(
            "--vary",
            spec,
            format!("--{flag} is given too; drop it, the arms set it"),
        )),
        false => Ok(()),
    }
}

/// One arm's config: the user's command line with `--vary` replaced by `--KEY=VALUE`, parsed
/// and validated exactly as that flag on its own would be.
fn arm(argv: &[String], key: &str, value: &str) -> Result<RunConfig, ConfigError> {
    let spec = format!("{key}={value}");
    let mut line = without_vary(argv);
    line.push(format!("--{spec}"));
    let parsed =
        crate::cli::Cli::try_parse_from(line).map_err(|e| bad("--vary", &spec, clap_reason(&e)))?;
    let crate::cli::Command::Ab(args) = parsed.command else {
        unreachable!("the line is ab's own; this is a bug")
    };
    let (cfg, _) = super::bench::config("ab", &args.bench, vec![args.jobs])
        .map_err(|e| bad("--vary", &spec, e.to_string()))?;
    Ok(cfg)
}

/// clap's own message for a bad value (with its possible values and tips), without its
/// `error: ` prefix and usage lines.
fn clap_reason(e: &clap::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = lines.join("; ");
    joined
        .strip_prefix("error: ")
        .unwrap_or(&joined)
        .to_string()
}

pub fn run(args: AbArgs) -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    let (cfgs, plan, warnings) = configs(&args, &argv)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    // The machine profile `calibrate` saved beside the results, when it is this CPU's.
    let cpu = crate::measure::provenance::Machine::current().cpu_model;
    if let Some(p) = super::calibrate::load_profile(&cfgs[0].out).filter(|p| p.cpu_model == cpu) {
        if let Some(w) = p.warning(plan.expect, plan.min_effect) {
            eprintln!("warning: {w}");
        }
    }
    let command = argv;
    let stop = super::bench::stop_on_signals()?;
    let mut progress = Progress::stderr();
    let out = cfgs[0].out.clone();
    let [a, b] = ab::run(
        cfgs,
        &plan,
        command,
        ab::Hooks {
            progress: &mut progress,
            stop: Some(&stop),
        },
    )?;
    let screen = report::ab::screen(&a, &b);
    print!("{}", report::ab::render(&a, &b, args.bench.format));
    if args.bench.profile {
        for arm in [&a, &b] {
            print!("\n{}", report::profile::screen(arm));
        }
    }
    let writer = crate::record::io::RecordWriter::at(&out);
    let log = format!(
        "== {} · ab {} ==\n{screen}\n",
        b.started_utc,
        b.ab().map_or("", |x| x.pair.as_str())
    );
    if let Err(e) = writer.append_log(&log) {
        eprintln!("warning: {e}");
    }
    super::record_log::say_where(
        &out,
        &out.with_extension("txt"),
        &format!(" (arms {} and {})", a.id, b.id),
    );
    let verdict = b.ab().and_then(|x| x.verdict.as_ref());
    match verdict {
        Some(v) if args.bench.exit_code && v.decision != crate::record::ab::Decision::Keep => {
            Err(ConfigError::NotKept {
                decision: v.decision.to_string(),
                reason: v.reason.clone(),
            }
            .into())
        }
        _ => Ok(()),
    }
}
