//! The `--spec none` baseline of a speculative run: an ordinary run of the same levels on the
//! same loaded model, kept whole in the speculative run's record (`baseline`), its rounds
//! interleaved with the speculative ones (base, spec, base, spec …, warm-ups included) so slow
//! drift of the machine reaches both arms alike. `--no-baseline` skips it.

use super::round::RoundSetup;
use super::sweep::measured_round;
use crate::bench::error::BenchError;
use crate::config::spec::{SpecConfig, SpecMethod};
use crate::measure::energy::EnergyMeter;
use crate::record::kind::RunKind;
use crate::record::{LevelRecord, RunRecord, RunStatus};

/// The round settings of the baseline: those of `spec` without speculation.
pub(crate) fn setup<'a>(spec: &RoundSetup<'a>) -> RoundSetup<'a> {
    RoundSetup {
        runtime: spec.runtime,
        loaded: spec.loaded,
        workload: spec.workload,
        scheduler: spec.scheduler,
        sampling: spec.sampling.clone(),
        max_tokens: spec.max_tokens,
        stop: spec.stop,
        spec: without_speculation(&spec.spec),
        draft: None,
        reference: None,
        think: spec.think,
    }
}

fn without_speculation(spec: &SpecConfig) -> SpecConfig {
    SpecConfig {
        method: SpecMethod::None,
        ..spec.clone()
    }
}

/// Adds the baseline arm to `record` when its settings ask for one: a copy of the run's
/// provenance (same model, same load) with `--spec none` and no levels yet.
pub(crate) fn start(record: &mut RunRecord) {
    if !record.config.spec.runs_baseline() {
        return;
    }
    let mut config = record.config.clone();
    config.spec = without_speculation(&config.spec);
    record.baseline = Some(Box::new(RunRecord {
        id: format!("{}-baseline", record.id),
        started_utc: record.started_utc.clone(),
        status: RunStatus::Running,
        command: record.command.clone(),
        config,
        build: record.build.clone(),
        machine: record.machine.clone(),
        runtime: record.runtime.clone(),
        scheduler: record.scheduler,
        model: record.model.clone(),
        workload: record.workload.clone(),
        load: record.load.clone(),
        energy_na: record.energy_na.clone(),
        energy_source: record.energy_source.clone(),
        levels: Vec::new(),
        summary: None,
        kind: RunKind::Baseline,
        baseline: None,
        drafter: None,
    }));
}

/// Starts a level of `jobs` jobs in the baseline arm (if any).
pub(crate) fn push_level(record: &mut RunRecord, jobs: usize) {
    if let Some(b) = record.baseline.as_mut() {
        b.levels.push(LevelRecord {
            jobs,
            peak_rss_bytes: None,
            peak_kv_bytes: 0,
            peak_state_bytes: 0,
            rounds: Vec::new(),
        });
    }
}

/// Where a baseline round goes.
pub(crate) struct At {
    pub jobs: usize,
    /// 0-based, counting warm-ups.
    pub index: usize,
    pub warmup: bool,
}

/// Runs one baseline round (if the run has a baseline) into its current level.
pub(crate) fn round(
    setup: &RoundSetup<'_>,
    record: &mut RunRecord,
    at: &At,
    energy: Option<&EnergyMeter>,
    progress: impl FnMut(usize, usize) + Send,
) -> Result<(), BenchError> {
    let Some(base) = record.baseline.as_mut() else {
        return Ok(());
    };
    let out = measured_round(setup, at.jobs, energy, progress)?;
    let level = base
        .levels
        .last_mut()
        .expect("level pushed before its rounds; this is a bug");
    level.peak_kv_bytes = level.peak_kv_bytes.max(out.peak_kv_bytes);
    level.peak_state_bytes = level.peak_state_bytes.max(out.peak_state_bytes);
    level.peak_rss_bytes = crate::measure::memory::peak_rss_bytes();
    let mut r = out.record;
    r.index = at.index;
    r.warmup = at.warmup;
    level.rounds.push(r);
    base.summary = Some(crate::record::summary::summarize_run(base));
    Ok(())
}

/// Gives the baseline arm the run's final status.
pub(crate) fn finish(record: &mut RunRecord) {
    let status = record.status.clone();
    if let Some(b) = record.baseline.as_mut() {
        b.status = status;
    }
}
