//! `tokfire ab`: `--vary KEY=A,B` (or `--aa`) → two validated [`RunConfig`]s that differ in that
//! one variable and nothing else, the interleaved run, then the verdict screen on stdout.

use crate::bench::ab::{self, Key, Plan, KEYS};
use crate::bench::progress::Progress;
use crate::cli::AbArgs;
use crate::config::run::{KvBudget, RunConfig};
use crate::config::WeightDType;
use crate::error::ConfigError;
use crate::record::diff::differences;
use crate::report;

fn bad(flag: &str, value: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::flag(flag, value, why)
}

/// The two arms' configs and the plan, or the refusal.
pub fn configs(args: &AbArgs) -> anyhow::Result<([RunConfig; 2], Plan, Vec<String>)> {
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
    let k = KEYS.iter().find(|k| k.name == key).ok_or_else(|| {
        let known: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        bad(
            "--vary",
            spec,
            format!("unknown key '{key}'; keys: {}", known.join(", ")),
        )
    })?;
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
    let (mut a, mut b) = (base.clone(), base);
    set(&mut a, k.name, va)?;
    set(&mut b, k.name, vb)?;
    check_one_difference(&a, &b, k, spec)?;
    let drift = k.drift.map(String::from).or(drift_sampled);
    let plan = Plan {
        vary: k.name.into(),
        values: [va.to_string(), vb.to_string()],
        expect: args.expect,
        min_effect: args.min_effect,
        until_decided: args.until_decided,
        reload: k.reload,
        drift_allowed: drift,
    };
    Ok(([a, b], plan, warnings))
}

/// Refuses arms whose resolved configs differ in anything but `k`'s paths, or in nothing.
fn check_one_difference(
    a: &RunConfig,
    b: &RunConfig,
    k: &Key,
    spec: &str,
) -> Result<(), ConfigError> {
    let d = differences(a, b);
    if d.is_empty() {
        return Err(bad(
            "--vary",
            spec,
            "A and B resolve to the same configuration; pass --aa for two identical arms",
        ));
    }
    let other: Vec<String> = d
        .iter()
        .filter(|d| {
            !k.paths
                .iter()
                .any(|p| d.path == *p || d.path.starts_with(&format!("{p}.")))
        })
        .map(|d| d.to_string())
        .collect();
    if !other.is_empty() {
        return Err(bad(
            "--vary",
            spec,
            format!(
                "the arms would also differ in {}; an A/B changes exactly one variable",
                other.join("; ")
            ),
        ));
    }
    Ok(())
}

fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, ConfigError> {
    v.parse()
        .map_err(|_| bad("--vary", &format!("{key}={v}"), "not a number"))
}

/// Sets `key` to `v` in `cfg`, validated as the flag of the same name would be.
fn set(cfg: &mut RunConfig, key: &str, v: &str) -> Result<(), ConfigError> {
    match key {
        "threads" => {
            cfg.runtime = crate::config::RuntimeConfig::parse(
                Some(parse(key, v)?),
                &cfg.runtime.kernels_flag(),
            )?
        }
        "kernels" => cfg.runtime = crate::config::RuntimeConfig::parse(cfg.runtime.threads, v)?,
        "max-batch-tokens" => cfg.engine.max_batch_tokens = parse(key, v)?,
        "prefill-chunk" => cfg.engine.prefill_chunk = parse(key, v)?,
        "max-seqs" => cfg.engine.max_seqs = parse(key, v)?,
        "kv-budget" => cfg.engine.kv_budget = KvBudget::parse(v)?,
        "max-tokens" => cfg.max_tokens = Some(parse(key, v)?),
        "dtype" => {
            cfg.model.dtype = <WeightDType as clap::ValueEnum>::from_str(v, true).map_err(|_| {
                bad(
                    "--vary",
                    &format!("dtype={v}"),
                    "expected q, f32, f16 or bf16",
                )
            })?
        }
        "model" => cfg.model.model = v.to_string(),
        "spec" => cfg.spec.method = crate::spec::SpecMethod::parse(v)?,
        "spec-k" => cfg.spec.k = parse(key, v)?,
        "prefix-cache" => {
            cfg.engine.prefix_cache =
                <crate::config::run::OnOff as clap::ValueEnum>::from_str(v, true).map_err(|_| {
                    bad("--vary", &format!("prefix-cache={v}"), "expected on or off")
                })?
        }
        "load" => {
            cfg.model.load = <crate::config::LoadMode as clap::ValueEnum>::from_str(v, true)
                .map_err(|_| bad("--vary", &format!("load={v}"), "expected mmap or copy"))?
        }
        "schedule" => {
            use crate::config::schedule::Schedule;
            cfg.engine.schedule =
                <Schedule as clap::ValueEnum>::from_str(v, true).map_err(|_| {
                    bad(
                        "--vary",
                        &format!("schedule={v}"),
                        "expected fifo, decode-first or prefill-first",
                    )
                })?
        }
        _ => unreachable!("keys are checked against KEYS first"),
    }
    cfg.validate(true)
        .map(|_| ())
        .map_err(|e| bad("--vary", &format!("{key}={v}"), e.to_string()))
}

pub fn run(args: AbArgs) -> anyhow::Result<()> {
    let (cfgs, plan, warnings) = configs(&args)?;
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
    let command: Vec<String> = std::env::args().collect();
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
        b.ab.as_ref().map_or("", |x| x.pair.as_str())
    );
    if let Err(e) = writer.append_log(&log) {
        eprintln!("warning: {e}");
    }
    eprintln!(
        "record appended to {} (arms {} and {}), summary to {}",
        out.display(),
        a.id,
        b.id,
        out.with_extension("txt").display()
    );
    let verdict = b.ab.as_ref().and_then(|x| x.verdict.as_ref());
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
