//! `tokfire ab`: `--vary KEY=A,B` (or `--aa`) → two validated [`RunConfig`]s that differ in that
//! one variable and nothing else, the interleaved run, then the verdict screen on stdout.

use crate::bench::ab::{self, Plan};
use crate::bench::progress::Progress;
use crate::cli::AbArgs;
use crate::config::run::{KvBudget, RunConfig};
use crate::config::WeightDType;
use crate::error::ConfigError;
use crate::record::diff::differences;
use crate::report;

/// A variable `--vary` accepts: its key, what it means, the config paths it may change, whether
/// each arm needs its own model load, and why it may change outputs.
struct Key {
    name: &'static str,
    help: &'static str,
    paths: &'static [&'static str],
    reload: bool,
    drift: Option<&'static str>,
}

const KEYS: &[Key] = &[
    Key {
        name: "threads",
        help: "compute threads (each arm runs on its own pool)",
        paths: &["runtime.threads"],
        reload: false,
        drift: None,
    },
    Key {
        name: "kernels",
        help: "CPU kernel level: auto, scalar, avx2, avx512-vnni",
        paths: &["runtime.kernels"],
        reload: false,
        drift: Some("SIMD levels may round the last bit differently"),
    },
    Key {
        name: "max-batch-tokens",
        help: "most tokens in one engine step",
        paths: &["engine.max_batch_tokens"],
        reload: false,
        drift: None,
    },
    Key {
        name: "prefill-chunk",
        help: "longest prefill chunk of one sequence in one step",
        paths: &["engine.prefill_chunk"],
        reload: false,
        drift: None,
    },
    Key {
        name: "max-seqs",
        help: "most sequences in one step",
        paths: &["engine.max_seqs"],
        reload: false,
        drift: None,
    },
    Key {
        name: "kv-budget",
        help: "KV-cache budget, tokens or bytes (e.g. 4096 or 64MiB)",
        paths: &["engine.kv_budget"],
        reload: false,
        drift: None,
    },
    Key {
        name: "max-tokens",
        help: "cap on every task's output tokens",
        paths: &["max_tokens"],
        reload: false,
        drift: Some("a different cap cuts answers at a different length"),
    },
    Key {
        name: "dtype",
        help: "weight storage: q, f32, f16, bf16 (each arm loads the model)",
        paths: &["model.dtype"],
        reload: true,
        drift: Some("dense storage changes the arithmetic"),
    },
    Key {
        name: "model",
        help: "the model (each arm loads its own)",
        paths: &["model.model"],
        reload: true,
        drift: Some("a different model writes different text"),
    },
];

/// Keys named in the design that this build cannot vary yet.
const NOT_YET: &[&str] = &["spec", "spec-k", "prefix-cache"];

/// `ab --help`: keys, metrics, the verdict's rules, examples.
pub fn help() -> String {
    let keys: String = KEYS
        .iter()
        .map(|k| format!("  {:<17} {}\n", k.name, k.help))
        .collect();
    format!(
        "Keys (--vary KEY=A,B):\n{keys}\nMetrics (--expect): decode (1/TPOT tok/s), prefill (prompt tok/s), ttft, completion,\n  load, memory (peak RSS per round), aggregate (tok/s over the round)\n\n{}\n\nExamples:\n  tokfire ab --vary threads=1,2 --expect decode\n  tokfire ab --vary prefill-chunk=256,32 --expect ttft --jobs 3\n  tokfire ab --aa                                   # the noise check: must not claim a win\n  tokfire ab --vary kernels=avx2,avx512-vnni --until-decided 10\n",
        VERDICT_HELP
    )
}

const VERDICT_HELP: &str =
    "Verdict: the effect is median B / median A of the expected metric over the measured rounds,
with a 95 % bootstrap interval (expanded for few rounds); noise is each arm's MAD / median.
  keep    B better: the interval excludes no change, the change is at least --min-effect and
          twice the noise, outputs unchanged, pass rate not lower
  revert  B worse the same way, or the pass rate dropped, or greedy outputs drifted where the
          variable should not change them
  retest  anything else, with the rounds likely to settle it (--until-decided N adds them)
Rounds the noise sentinel flags (other processes' CPU or steal time) are left out when 3 per arm
remain. Arms run A B B A A B ... after one warm-up each, in one process.";

fn bad(flag: &str, value: &str, why: impl Into<String>) -> ConfigError {
    ConfigError::flag(flag, value, why)
}

/// The two arms' configs and the plan, or the refusal.
pub fn configs(args: &AbArgs) -> anyhow::Result<([RunConfig; 2], Plan, Vec<String>)> {
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
    if NOT_YET.contains(&key) {
        return Err(bad(
            "--vary",
            spec,
            format!("'{key}' is not available in this build yet"),
        )
        .into());
    }
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
            cfg.runtime =
                crate::config::RuntimeConfig::parse(Some(parse(key, v)?), &kernels_name(cfg))?
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
        _ => unreachable!("keys are checked against KEYS first"),
    }
    cfg.validate(true)
        .map(|_| ())
        .map_err(|e| bad("--vary", &format!("{key}={v}"), e.to_string()))
}

fn kernels_name(cfg: &RunConfig) -> String {
    cfg.runtime.kernels.map_or("auto".into(), |l| l.to_string())
}

pub fn run(args: AbArgs) -> anyhow::Result<()> {
    let (cfgs, plan, warnings) = configs(&args)?;
    for w in warnings {
        eprintln!("warning: {w}");
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
    print!("{screen}");
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
    Ok(())
}
