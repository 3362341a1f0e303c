//! Runs a whole `run`/`sweep`: loads the workload and the model (load clock, page-cache state),
//! then for each concurrency level one or more warm-up rounds and the measured rounds, saving the
//! record after every round (a failed run is saved with its error). Every level uses the same
//! model, workload, sampler, output limits and engine budgets; only the job count differs.

use super::progress::{Position, Progress};
use super::round::{render, run_round, RoundOutput, RoundSetup};
use crate::bench::error::BenchError;
use crate::bench::trace::Trace;
use crate::config::run::RunConfig;
use crate::error::ConfigError;
use crate::kernels::Runtime;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::scheduler::SchedulerConfig;
use crate::error::EngineError;
use crate::measure::energy::EnergyMeter;
use crate::measure::gpu::{Gpu, PeakWatch};
use crate::measure::provenance::{Build, Machine};
use crate::measure::{memory, pagecache};
use crate::model::{self, inspect, Loaded, ModelPath};
use crate::record::io::RecordWriter;
use crate::record::kind::RunKind;
use crate::record::{LevelRecord, LoadClock, ModelInfo, RunRecord, RunStatus};
use crate::workload::{self, Workload};

/// What a run reports to its caller while it goes.
pub(crate) struct Hooks<'a> {
    pub progress: &'a mut Progress,
    /// Non-zero (the signal number) once SIGINT or SIGTERM asked the run to stop.
    pub stop: Option<&'a AtomicUsize>,
    /// Called once with the final record: complete, failed or interrupted.
    pub finished: &'a mut dyn FnMut(&RunRecord),
}

/// Runs `cfg`, recording to `cfg.out`. A bad workload or `--out` fails before anything is
/// recorded; any later failure (device, model, engine) and an interruption are saved in the
/// record with the rounds finished, and the error is returned.
pub(crate) fn run(
    cfg: &RunConfig,
    command: Vec<String>,
    hooks: Hooks<'_>,
) -> Result<RunRecord, BenchError> {
    let workload = workload::load(&cfg.workload)?;
    let writer = RecordWriter::open(&cfg.out)?;
    let mut record = new_record(cfg.clone(), workload.clone(), command);
    writer.save(&record)?;
    let result = super::runtime::start(&cfg.runtime)
        .map_err(BenchError::from)
        .and_then(|rt| {
            let (loaded, energy) = prepare(cfg, &rt, &workload, &mut record)?;
            Ok((rt, loaded, energy))
        })
        .and_then(|(rt, loaded, energy)| {
            let draft = super::spec_setup::prepare(cfg, &loaded, &mut record)?;
            writer.save(&record)?;
            let before = RoundSetup {
                runtime: &rt,
                loaded: &loaded,
                workload: &workload,
                scheduler: record.scheduler.config(),
                sampling: cfg.sampling.clone(),
                max_tokens: cfg.max_tokens,
                stop: hooks.stop,
                spec: cfg.spec.clone(),
                draft: draft.as_ref(),
                reference: None,
                think: cfg.think,
            };
            let reference = super::spec_setup::reference(&before, &mut record)?;
            let setup = RoundSetup {
                reference: reference.as_ref(),
                ..before
            };
            levels(
                cfg,
                &setup,
                energy.as_ref(),
                &mut record,
                &writer,
                hooks.progress,
            )
        });
    hooks.progress.finish();
    record.status = match &result {
        Ok(()) => RunStatus::Complete,
        Err(BenchError::Engine(EngineError::Interrupted)) => RunStatus::Interrupted {
            signal: signal_name(hooks.stop.map_or(0, |s| s.load(Ordering::Relaxed))),
        },
        Err(e) => RunStatus::Failed {
            error: e.to_string(),
        },
    };
    super::baseline::finish(&mut record);
    writer.save(&record)?;
    (hooks.finished)(&record);
    match result {
        Ok(()) => Ok(record),
        Err(BenchError::Engine(EngineError::Interrupted)) => Err(BenchError::Interrupted {
            signal: signal_name(hooks.stop.map_or(0, |s| s.load(Ordering::Relaxed))),
            out: cfg.out.clone(),
            rounds: record.levels.iter().map(|l| l.rounds.len()).sum(),
        }),
        Err(e) => Err(BenchError::Saved {
            out: cfg.out.clone(),
            source: Box::new(e),
        }),
    }
}

/// `SIGINT`, `SIGTERM` or `signal N`.
pub(crate) fn signal_name(n: usize) -> String {
    match n as i32 {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}

/// The engine budgets of `cfg` as applied to a model whose KV costs `bytes_per_token`: the KV
/// budget in tokens and, with `--prefix-cache on`, the prefix cache's part of it in whole blocks.
pub(crate) fn scheduler_config(
    cfg: &RunConfig,
    bytes_per_token: u64,
) -> Result<SchedulerConfig, ConfigError> {
    use crate::model::prefix::BLOCK_TOKENS;
    let e = &cfg.engine;
    let kv = e.kv_budget.tokens(bytes_per_token);
    let prefix = match e.prefix_cache.is_on() {
        false => 0,
        true => {
            let asked = e
                .prefix_cache_budget
                .map_or(kv / 4, |b| b.tokens(bytes_per_token));
            let tokens = asked / BLOCK_TOKENS * BLOCK_TOKENS;
            if tokens == 0 || tokens >= kv {
                return Err(ConfigError::flag(
                    "--prefix-cache-budget",
                    format!("{asked} tokens"),
                    format!("the prefix cache needs at least one {BLOCK_TOKENS}-token block and must leave the sequences part of the KV budget ({kv} tokens); raise --kv-budget or give a smaller --prefix-cache-budget"),
                ));
            }
            tokens
        }
    };
    Ok(SchedulerConfig {
        max_seqs: e.max_seqs,
        max_batch_tokens: e.max_batch_tokens,
        prefill_chunk: e.prefill_chunk,
        kv_budget_tokens: kv,
        schedule: e.schedule,
        prefix_cache_tokens: prefix,
    })
}

/// Everything before the first round: model (load clock, page-cache state), prompts rendered
/// once, energy meter; fills the record's provenance as it goes (`rt`: what the rounds run on).
pub(crate) fn prepare(
    cfg: &RunConfig,
    rt: &Runtime,
    workload: &Workload,
    record: &mut RunRecord,
) -> Result<(Loaded, Option<EnergyMeter>), BenchError> {
    record.runtime = super::runtime::info(&cfg.runtime, cfg.model.device);
    let path = model::resolve(&cfg.model)?;
    let files = weight_files(&path);
    let file_refs: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
    let page_cache = pagecache::residency(&file_refs);
    let disk_before = memory::disk_read_bytes();
    let _in = rt.enter();
    let loaded = model::load(&cfg.model, cfg.runtime.matmuls())?;
    record.load = LoadClock {
        seconds: loaded.load_time.as_secs_f64(),
        page_cache,
        disk_read_bytes: disk_before
            .zip(memory::disk_read_bytes())
            .map(|(a, b)| b.saturating_sub(a)),
        split: loaded.split.as_ref().map(Into::into),
    };
    record.model = model_info(&loaded, &path)?;
    record.scheduler = (&scheduler_config(cfg, record.model.kv_bytes_per_token)?).into();
    for task in &workload.tasks {
        render(&loaded, workload::TaskRun::new(task).prompt())?;
    }
    let energy = EnergyMeter::for_device(cfg.model.device);
    record.energy_na = energy.as_ref().err().cloned();
    record.energy_source = energy.as_ref().ok().map(EnergyMeter::source);
    Ok((loaded, energy.ok()))
}

fn levels(
    cfg: &RunConfig,
    setup: &RoundSetup<'_>,
    energy: Option<&EnergyMeter>,
    record: &mut RunRecord,
    writer: &RecordWriter,
    progress: &mut Progress,
) -> Result<(), BenchError> {
    let per_level = cfg.warmup_rounds + cfg.rounds;
    let mut trace = cfg.trace.as_ref().map(|_| Trace::new());
    super::baseline::start(record);
    let base_setup = super::baseline::setup(setup);
    for (li, &jobs) in cfg.jobs.iter().enumerate() {
        memory::reset_peak();
        if let Some(t) = trace.as_mut() {
            t.level(li + 1, jobs);
        }
        record.levels.push(LevelRecord {
            jobs,
            peak_rss_bytes: None,
            peak_kv_bytes: 0,
            peak_state_bytes: 0,
            rounds: Vec::new(),
        });
        super::baseline::push_level(record, jobs);
        for r in 0..per_level {
            let warmup = r < cfg.warmup_rounds;
            let at = Position {
                level: li + 1,
                levels: cfg.jobs.len(),
                jobs,
                round: r + 1 - cfg.warmup_rounds.min(r + 1),
                rounds: cfg.rounds,
                warmup,
            };
            let base_at = super::baseline::At {
                jobs,
                index: r,
                warmup,
            };
            super::baseline::round(&base_setup, record, &base_at, energy, |d, t| {
                progress.update(at, d, t)
            })?;
            let waited = (!warmup && cfg.quiet_wait_s > 0.0)
                .then(|| crate::measure::sentinel::wait_quiet(cfg.quiet_wait_s, setup.stop));
            let mut out = measured_round(setup, jobs, energy, |d, t| progress.update(at, d, t))?;
            out.record.quiet_wait = waited;
            super::spec_setup::note_round(record, &out);
            let level = record.levels.last_mut().expect("level pushed above");
            level.peak_kv_bytes = level.peak_kv_bytes.max(out.peak_kv_bytes);
            level.peak_state_bytes = level.peak_state_bytes.max(out.peak_state_bytes);
            level.peak_rss_bytes = memory::peak_rss_bytes();
            let mut round = out.record.clone();
            round.index = r;
            round.warmup = warmup;
            level.rounds.push(round);
            writer.save(record)?;
            if let (Some(t), Some(path)) = (trace.as_mut(), &cfg.trace) {
                let label = if warmup {
                    format!("warm-up {}", r + 1)
                } else {
                    format!("round {}", at.round)
                };
                t.round(li + 1, &label, &out.events, &out.job_of);
                write_trace(path, t)?;
            }
        }
    }
    Ok(())
}

/// One round on the setup's runtime, with the disk, energy and sentinel readings around it.
pub(crate) fn measured_round(
    setup: &RoundSetup<'_>,
    jobs: usize,
    energy: Option<&EnergyMeter>,
    progress: impl FnMut(usize, usize) + Send,
) -> Result<RoundOutput, BenchError> {
    let disk = memory::disk_read_bytes();
    let e0 = energy.and_then(EnergyMeter::read_uj);
    let seen = crate::measure::sentinel::Snapshot::take();
    let _in = setup.runtime.enter();
    let watch = setup.loaded.gpu.as_ref().map(Gpu::watch_peak);
    let mut out = run_round(setup, jobs, progress)?;
    out.record.peak_device_bytes = watch.and_then(PeakWatch::stop);
    out.record.sentinel = Some(seen.until(&crate::measure::sentinel::Snapshot::take()));
    out.record.disk_read_bytes = disk.zip(memory::disk_read_bytes()).map(|(a, b)| b - a);
    out.record.energy_j = match (energy, e0, energy.and_then(EnergyMeter::read_uj)) {
        (Some(m), Some(a), Some(b)) => Some(m.joules(a, b)),
        _ => None,
    };
    Ok(out)
}

/// Rewrites the trace file (after every round, like the record).
fn write_trace(path: &std::path::Path, trace: &Trace) -> Result<(), BenchError> {
    let text = serde_json::to_string(&trace.to_json()).expect("trace serializes; this is a bug");
    std::fs::write(path, text).map_err(|source| BenchError::Trace {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn weight_files(path: &ModelPath) -> Vec<std::path::PathBuf> {
    match path {
        ModelPath::Gguf(p) => vec![p.clone()],
        ModelPath::Safetensors(dir) => {
            let mut v: Vec<_> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
                .collect();
            v.sort();
            v
        }
    }
}

pub(crate) fn model_info(loaded: &Loaded, path: &ModelPath) -> Result<ModelInfo, BenchError> {
    let report = match path {
        ModelPath::Gguf(p) => inspect::inspect_gguf(p)?,
        ModelPath::Safetensors(p) => inspect::inspect_dir(p)?,
    };
    let sha256 = match &report.sha256 {
        Some(s) => s.clone(),
        None => {
            let parts: Result<Vec<String>, _> = weight_files(path)
                .iter()
                .map(|f| inspect::sha256_file(f))
                .collect();
            parts?.join("+")
        }
    };
    let kv = loaded.model.kv_shape();
    Ok(ModelInfo {
        path: path.path().to_path_buf(),
        sha256,
        file_bytes: loaded.file_bytes,
        arch: report.architecture,
        parameters: report.parameters,
        kv_bytes_per_token: kv.bytes_per_token() as u64,
    })
}

/// Now, UTC, RFC 3339 (seconds).
/// A running record of `config` on this build and machine, id `UTC-PID`, nothing measured yet.
pub(crate) fn new_record(config: RunConfig, workload: Workload, command: Vec<String>) -> RunRecord {
    RunRecord {
        id: unique_id(),
        started_utc: now_utc(),
        status: RunStatus::Running,
        command,
        config,
        build: Build::current(),
        machine: Machine::current(),
        runtime: Default::default(),
        scheduler: Default::default(),
        model: Default::default(),
        workload,
        load: Default::default(),
        energy_na: None,
        energy_source: None,
        levels: Vec::new(),
        summary: None,
        kind: RunKind::Run,
        baseline: None,
        drafter: None,
    }
}

/// `START-PID`, unique within the process too: a process that starts several runs in one second
/// (`calibrate`'s A/A pairs) numbers the later ones `START-PID-2`, `-3`, …
pub(crate) fn unique_id() -> String {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let base = format!(
        "{}-{}",
        now_utc().replace([':', '-'], ""),
        std::process::id()
    );
    match SEQ.fetch_add(1, Ordering::Relaxed) {
        0 => base,
        n => format!("{base}-{}", n + 1),
    }
}

pub(crate) fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
