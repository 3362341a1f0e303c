//! What `prefill` and `spec-cost` share: a grid of cells measured on one loaded model, the
//! record saved before the load and after every cell, and the ending — complete, failed (the
//! cells finished kept, marked failed) or stopped by a signal (kept, marked interrupted).

use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::BenchError;
use crate::config::run::RunConfig;
use crate::error::EngineError;
use crate::model::Loaded;
use crate::record::io::RecordWriter;
use crate::record::{RunRecord, RunStatus};
use crate::workload::Workload;

/// Saves `record` (its kind's payload set by the caller), loads the model of `config` on its
/// runtime, then calls `cells` with the model, the record, a saver and the signal reader (0:
/// none) on the runtime's workers. `kept` counts the cells a stopped run kept.
pub(crate) fn run(
    config: &RunConfig,
    workload: &Workload,
    mut record: RunRecord,
    stop: Option<&AtomicUsize>,
    kept: fn(&RunRecord) -> usize,
    cells: impl FnOnce(
        &Loaded,
        &mut RunRecord,
        &RecordWriter,
        &dyn Fn() -> usize,
    ) -> Result<(), BenchError>,
) -> Result<RunRecord, BenchError> {
    let writer = RecordWriter::open(&config.out)?;
    writer.save(&record)?;
    let signal = || stop.map_or(0, |s| s.load(Ordering::Relaxed));
    let result = super::runtime::start(&config.runtime)
        .map_err(BenchError::from)
        .and_then(|rt| {
            let (loaded, _) = super::sweep::prepare(config, &rt, workload, &mut record)?;
            writer.save(&record)?;
            let _in = rt.enter();
            cells(&loaded, &mut record, &writer, &signal)
        });
    record.status = match &result {
        Ok(()) => RunStatus::Complete,
        Err(BenchError::Engine(EngineError::Interrupted)) => RunStatus::Interrupted {
            signal: super::sweep::signal_name(signal()),
        },
        Err(e) => RunStatus::Failed {
            error: e.to_string(),
        },
    };
    writer.save(&record)?;
    let out = config.out.clone();
    match result {
        Ok(()) => Ok(record),
        Err(BenchError::Engine(EngineError::Interrupted)) => Err(BenchError::CellsInterrupted {
            signal: super::sweep::signal_name(signal()),
            out,
            cells: kept(&record),
        }),
        Err(e) => Err(BenchError::Saved {
            out,
            source: Box::new(e),
        }),
    }
}
