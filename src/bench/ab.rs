//! Runs a `tokfire ab`: two arms that differ in one variable, in one process, their rounds
//! interleaved in an ABBA order (A B B A A B …) after one warm-up round per arm so slow drift
//! of the machine does not favour one arm. The model is loaded once when only runtime settings
//! differ (threads, kernels, engine budgets); each arm loads its own when the variable is the
//! model or its storage. Each arm is an ordinary run in the record (both saved after every
//! round), with the noise sentinel's reading and peak memory per round and, on arm B, the
//! verdict. `--until-decided N` adds pairs of rounds while the verdict is `retest`.

use std::sync::atomic::Ordering;

use super::progress::{Position, Progress};
use super::round::RoundSetup;
use super::sweep::{measured_round, prepare, signal_name};
use crate::bench::error::BenchError;
use crate::config::run::RunConfig;
use crate::error::ConfigError;
use crate::error::EngineError;
use crate::kernels::Runtime;
use crate::measure::energy::EnergyMeter;
use crate::measure::memory;
use crate::model::Loaded;
use crate::record::ab::{Decision, Metric};
use crate::record::arms::{self, AbArm, ArmRound, Judging};
use crate::record::io::RecordWriter;
use crate::record::kind::RunKind;
use crate::record::{LevelRecord, RunRecord, RunStatus};
use crate::workload::{self, Workload};

/// Why arms with these config differences may write different text (none: they must not), by
/// the config path that differs, first match wins.
const DRIFT: &[(&str, &str)] = &[
    ("model.model", "a different model writes different text"),
    (
        "model.chat_template",
        "a different chat template gives the model other prompts",
    ),
    (
        "model.",
        "dense storage or another device changes the arithmetic",
    ),
    (
        "runtime.candle",
        "candle's kernels quantize activations and sum in their own way",
    ),
    (
        "runtime.kernels",
        "SIMD levels may round the last bit differently",
    ),
    (
        "model.repack",
        "repacked tiles round each block as the scalar reference does, row layouts as SIMD lanes do",
    ),
    (
        "max_tokens",
        "a different cap cuts answers at a different length",
    ),
    ("sampling.", "sampling settings change the text"),
];

/// Why arms `a` and `b` may write different text, or none when greedy output must not change.
pub fn drift(a: &RunConfig, b: &RunConfig) -> Option<&'static str> {
    let d = crate::record::diff::differences(a, b);
    DRIFT
        .iter()
        .find(|(p, _)| d.iter().any(|d| d.path.starts_with(p)))
        .map(|(_, why)| *why)
}

/// Whether each arm needs its own model load: the arms differ in the model, its storage or
/// whose kernels run it.
pub fn reload(a: &RunConfig, b: &RunConfig) -> bool {
    !crate::record::diff::differences(&a.model, &b.model).is_empty()
        || a.runtime.candle != b.runtime.candle
}

/// `ab --help` after the keys: metrics, the verdict's rules, examples.
pub fn help() -> String {
    format!(
        "Metrics (--expect), each the median over measured rounds of the round's own figure (so not\nthe run sheet's median over all tasks): decode (1 / the round's median TPOT, tok/s), prefill\n(prompt tok/s), ttft and completion (the round's medians), load (a warm load of the arm's model\nbefore each round), memory (peak RSS per round), aggregate (tok/s over the round)\n\n{}\n\nExamples:\n  tokfire ab --vary threads=1,2 --expect decode\n  tokfire ab --vary prefill-chunk=256,32 --expect ttft --jobs 3\n  tokfire ab --aa                                   # the noise check: must not claim a win\n  tokfire ab --vary schedule=fifo,decode-first --format json --exit-code   # CI: 1 unless keep\n  tokfire ab --vary kernels=avx2,avx512-vnni --until-decided 10\n  tokfire ab --vary kernels=auto,candle --expect decode         # our kernels vs candle's\n  tokfire ab --vary load=copy,mmap --expect load\n  tokfire ab --vary repack=off,on --expect prefill\n  tokfire ab --vary spec=none,lookup --workload code --expect decode\n  tokfire ab --vary prefix-cache=off,on --workload shared-prefix --expect ttft\n",
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
  retest  anything else, with the rounds likely to settle it (--until-decided N adds them)\n          --until-decided N looks up to N + 1 times, each at 5 % / (N + 1) (Bonferroni), so\n          stopping at the first decisive look keeps 5 %; other metrics are Holm-corrected
Rounds the noise sentinel flags (other processes' CPU or steal time) are left out when 3 per arm
remain. Arms run A B B A A B ... after one warm-up each, in one process.";

/// How the A/B is run and judged.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The varied key, or `aa`.
    pub vary: String,
    /// Arm A's and B's value of it.
    pub values: [String; 2],
    pub expect: Metric,
    pub min_effect: f64,
    /// Most extra pairs of rounds to add while the verdict is `retest`.
    pub until_decided: usize,
    /// Each arm loads its own model (the variable is the model or its storage).
    pub reload: bool,
    /// Why the variable may change outputs (none: it must not).
    pub drift_allowed: Option<String>,
}

/// What the caller sees while the A/B runs.
pub struct Hooks<'a> {
    pub progress: &'a mut Progress,
    pub stop: Option<&'a std::sync::atomic::AtomicUsize>,
}

/// Each arm's target model and drafter (the same target twice unless the arms reload).
struct Models<'a> {
    target: [&'a Loaded; 2],
    draft: [Option<&'a Loaded>; 2],
    /// The reference pass of an arm with `--spec synthetic:`.
    reference: [Option<&'a crate::spec::synthetic::Reference>; 2],
}

/// Arm `arm`'s round settings.
fn arm_setup<'a>(
    arm: usize,
    cfgs: &'a [RunConfig; 2],
    models: &Models<'a>,
    runtimes: &'a [Runtime; 2],
    scheduler: crate::engine::scheduler::SchedulerConfig,
    workload: &'a Workload,
    stop: Option<&'a std::sync::atomic::AtomicUsize>,
) -> RoundSetup<'a> {
    RoundSetup {
        runtime: &runtimes[arm],
        loaded: models.target[arm],
        workload,
        scheduler,
        sampling: cfgs[arm].sampling.clone(),
        max_tokens: cfgs[arm].max_tokens,
        stop,
        spec: cfgs[arm].spec.clone(),
        draft: models.draft[arm],
        reference: models.reference[arm],
        think: cfgs[arm].think,
    }
}

struct ArmState {
    record: RunRecord,
}

/// Runs both arms and returns their records (arm B carrying the verdict).
pub fn run(
    arms_cfg: [RunConfig; 2],
    plan: &Plan,
    command: Vec<String>,
    hooks: Hooks<'_>,
) -> Result<[RunRecord; 2], BenchError> {
    let workload = workload::load(&arms_cfg[0].workload)?;
    let writer = RecordWriter::open(&arms_cfg[0].out)?;
    let pair = super::sweep::unique_id();
    let mut records: Vec<RunRecord> = arms_cfg
        .iter()
        .zip(["A", "B"])
        .enumerate()
        .map(|(i, (cfg, arm))| {
            skeleton(cfg, &workload, &pair, arm, &plan.values[i], plan, &command)
        })
        .collect();
    for r in &records {
        writer.save(r)?;
    }
    let result = run_arms(
        &arms_cfg,
        plan,
        &workload,
        &mut records,
        &writer,
        hooks.progress,
        hooks.stop,
    );
    hooks.progress.finish();
    let status = match &result {
        Ok(()) => RunStatus::Complete,
        Err(BenchError::Engine(EngineError::Interrupted)) => RunStatus::Interrupted {
            signal: signal_name(hooks.stop.map_or(0, |s| s.load(Ordering::Relaxed))),
        },
        Err(e) => RunStatus::Failed {
            error: e.to_string(),
        },
    };
    for r in &mut records {
        r.status = status.clone();
    }
    set_verdict(&mut records, plan);
    for r in &records {
        writer.save(r)?;
    }
    let out = arms_cfg[0].out.clone();
    match result {
        Ok(()) => {
            let b = records.pop().expect("two arms");
            let a = records.pop().expect("two arms");
            Ok([a, b])
        }
        Err(BenchError::Engine(EngineError::Interrupted)) => Err(BenchError::Interrupted {
            signal: signal_name(hooks.stop.map_or(0, |s| s.load(Ordering::Relaxed))),
            out,
            rounds: records
                .iter()
                .map(|r| r.levels.iter().map(|l| l.rounds.len()).sum::<usize>())
                .sum(),
        }),
        Err(e) => Err(BenchError::Saved {
            out,
            source: Box::new(e),
        }),
    }
}

fn skeleton(
    cfg: &RunConfig,
    workload: &Workload,
    pair: &str,
    arm: &str,
    value: &str,
    plan: &Plan,
    command: &[String],
) -> RunRecord {
    RunRecord {
        id: format!("{pair}-{arm}"),
        kind: RunKind::AbArm(Box::new(AbArm {
            arm: arm.into(),
            pair: pair.into(),
            vary: plan.vary.clone(),
            value: value.into(),
            expect: plan.expect,
            min_effect: plan.min_effect,
            drift_allowed: plan.drift_allowed.clone(),
            rounds: Vec::new(),
            verdict: None,
        })),
        ..super::sweep::new_record(cfg.clone(), workload.clone(), command.to_vec())
    }
}

/// Judges arm B against arm A and stores the verdict on B.
fn set_verdict(records: &mut [RunRecord], plan: &Plan) -> Option<Decision> {
    // Each pair of rounds added by --until-decided is one more look at the data.
    let measured = arms::round_figures(&records[0]).len();
    let look = measured.saturating_sub(records[0].config.rounds) + 1;
    let v = arms::verdict(
        &records[0],
        &records[1],
        &Judging {
            expect: plan.expect,
            min_effect: plan.min_effect,
            drift_allowed: plan.drift_allowed.clone(),
            seed: records[0].config.sampling.seed,
            looks: plan.until_decided + 1,
            look,
        },
    );
    let d = v.decision;
    records[1].ab_mut().expect("arms carry ab").verdict = Some(v);
    Some(d)
}

/// The order of measured rounds: 0 = A, 1 = B, as A B B A A B B A …
pub fn abba(pairs: usize) -> Vec<usize> {
    (0..pairs)
        .flat_map(|p| if p % 2 == 0 { [0, 1] } else { [1, 0] })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn run_arms(
    cfgs: &[RunConfig; 2],
    plan: &Plan,
    workload: &Workload,
    records: &mut Vec<RunRecord>,
    writer: &RecordWriter,
    progress: &mut Progress,
    stop: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<(), BenchError> {
    // Each arm runs on its own runtime (threads, kernel level), built side by side.
    let runtimes = [
        super::runtime::start(&cfgs[0].runtime)?,
        super::runtime::start(&cfgs[1].runtime)?,
    ];
    // Arm A loads the model; B shares it unless it reloads.
    let (loaded_a, energy) = prepare(&cfgs[0], &runtimes[0], workload, &mut records[0])?;
    let loaded_b = if plan.reload {
        Some(prepare(&cfgs[1], &runtimes[1], workload, &mut records[1])?.0)
    } else {
        let (a, b) = records.split_at_mut(1);
        share(&a[0], &mut b[0], &cfgs[1])?;
        None
    };
    for r in records.iter() {
        writer.save(r)?;
    }
    let loaded: [&Loaded; 2] = [&loaded_a, loaded_b.as_ref().unwrap_or(&loaded_a)];
    // Each arm's drafter (a `spec` or `spec-k` A/B), checked before the first round.
    let drafts = [
        super::spec_setup::prepare(&cfgs[0], loaded[0], &mut records[0])?,
        super::spec_setup::prepare(&cfgs[1], loaded[1], &mut records[1])?,
    ];
    let before = Models {
        target: loaded,
        draft: [drafts[0].as_ref(), drafts[1].as_ref()],
        reference: [None, None],
    };
    let mut references = [None, None];
    for (arm, reference) in references.iter_mut().enumerate() {
        let scheduler = records[arm].scheduler.config();
        let setup = arm_setup(arm, cfgs, &before, &runtimes, scheduler, workload, stop);
        *reference = super::spec_setup::reference(&setup, &mut records[arm])?;
    }
    let models = Models {
        reference: [references[0].as_ref(), references[1].as_ref()],
        ..before
    };
    let mut states: Vec<ArmState> = records
        .drain(..)
        .map(|record| ArmState { record })
        .collect();
    let result = rounds(
        cfgs,
        plan,
        workload,
        &models,
        &runtimes,
        energy.as_ref(),
        &mut states,
        writer,
        progress,
        stop,
    );
    records.extend(states.into_iter().map(|s| s.record));
    result
}

/// Arm B's provenance when it shares arm A's model: its own threads, kernels and budgets.
fn share(a: &RunRecord, b: &mut RunRecord, cfg: &RunConfig) -> Result<(), ConfigError> {
    b.model = a.model.clone();
    b.load = a.load.clone();
    b.energy_na = a.energy_na.clone();
    b.energy_source = a.energy_source.clone();
    b.runtime = super::runtime::info(&cfg.runtime, cfg.model.device);
    b.scheduler = (&super::sweep::scheduler_config(cfg, a.model.kv_bytes_per_token)?).into();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn rounds(
    cfgs: &[RunConfig; 2],
    plan: &Plan,
    workload: &Workload,
    models: &Models<'_>,
    runtimes: &[Runtime; 2],
    energy: Option<&EnergyMeter>,
    states: &mut [ArmState],
    writer: &RecordWriter,
    progress: &mut Progress,
    stop: Option<&std::sync::atomic::AtomicUsize>,
) -> Result<(), BenchError> {
    let jobs = cfgs[0].jobs[0];
    for s in states.iter_mut() {
        s.record.levels.push(LevelRecord {
            jobs,
            peak_rss_bytes: None,
            peak_kv_bytes: 0,
            peak_state_bytes: 0,
            rounds: Vec::new(),
        });
    }
    let warm = cfgs[0].warmup_rounds;
    let mut order: Vec<usize> = (0..warm).flat_map(|_| [0, 1]).collect();
    order.extend(abba(cfgs[0].rounds));
    let mut extra = 0;
    let mut seq = 0;
    loop {
        while seq < order.len() {
            let arm = order[seq];
            let warmup = seq < 2 * warm;
            let scheduler = states[arm].record.scheduler.config();
            let setup = arm_setup(arm, cfgs, models, runtimes, scheduler, workload, stop);
            let done_here = states[arm].record.levels[0]
                .rounds
                .iter()
                .filter(|r| !r.warmup)
                .count();
            let at = Position {
                level: arm + 1,
                levels: 2,
                jobs,
                round: done_here + 1,
                rounds: cfgs[0].rounds + extra,
                warmup,
            };
            let load_s = match plan.expect == Metric::Load && !warmup {
                true => Some(load_sample(&cfgs[arm], &runtimes[arm])?),
                false => None,
            };
            one_round(&setup, &mut states[arm], energy, seq, warmup, |d, t| {
                progress.update(at, d, t)
            })?;
            if let Some(r) = states[arm]
                .record
                .ab_mut()
                .and_then(|a| a.rounds.last_mut())
            {
                r.load_s = r.load_s.or(load_s);
            }
            writer.save(&states[arm].record)?;
            seq += 1;
        }
        if extra >= plan.until_decided {
            return Ok(());
        }
        let mut recs: Vec<RunRecord> = states.iter().map(|s| s.record.clone()).collect();
        if set_verdict(&mut recs, plan) != Some(Decision::Retest) {
            return Ok(());
        }
        let next = (order.len() - 2 * warm) / 2;
        order.extend(if next.is_multiple_of(2) {
            [0, 1]
        } else {
            [1, 0]
        });
        extra += 1;
    }
}

/// Loads the arm's model once more and drops it: one sample of the warm load clock, taken before
/// the round so its memory and time stay out of the round's figures.
fn load_sample(cfg: &RunConfig, rt: &Runtime) -> Result<f64, BenchError> {
    let _in = rt.enter();
    let loaded = crate::model::load(&cfg.model, cfg.runtime.matmuls())?;
    Ok(loaded.load_time.as_secs_f64())
}

fn one_round(
    setup: &RoundSetup<'_>,
    state: &mut ArmState,
    energy: Option<&EnergyMeter>,
    seq: usize,
    warmup: bool,
    progress: impl FnMut(usize, usize) + Send,
) -> Result<(), BenchError> {
    memory::reset_peak();
    let wait = state.record.config.quiet_wait_s;
    let waited =
        (!warmup && wait > 0.0).then(|| crate::measure::sentinel::wait_quiet(wait, setup.stop));
    let mut out = measured_round(setup, setup_jobs(state), energy, progress)?;
    out.record.quiet_wait = waited;
    // One reading per round, the one the round record carries.
    let seen = out.record.sentinel.clone();
    super::spec_setup::note_round(&mut state.record, &out);
    let level = &mut state.record.levels[0];
    level.peak_kv_bytes = level.peak_kv_bytes.max(out.peak_kv_bytes);
    level.peak_state_bytes = level.peak_state_bytes.max(out.peak_state_bytes);
    let peak = memory::peak_rss_bytes();
    level.peak_rss_bytes = level.peak_rss_bytes.max(peak);
    let mut round = out.record;
    round.index = seq;
    round.warmup = warmup;
    level.rounds.push(round);
    if !warmup {
        state
            .record
            .ab_mut()
            .expect("arms carry ab")
            .rounds
            .push(ArmRound {
                peak_rss_bytes: peak,
                sentinel: seen,
                load_s: None,
            });
    }
    Ok(())
}

fn setup_jobs(state: &ArmState) -> usize {
    state.record.config.jobs[0]
}

#[cfg(test)]
#[path = "ab_tests.rs"]
mod tests;
