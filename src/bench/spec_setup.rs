//! Before the first round of a speculative run: loads the draft model of `--spec draft:MODEL`
//! (refusing one whose vocabulary differs from the target's), checks that `--spec mtp` has the
//! layers it needs, and records the drafter's identity and extra memory, whose KV high-water
//! mark each round then raises. For `--spec synthetic:` it runs the reference pass.

use std::time::Instant;

use super::round::{run_round, RoundOutput, RoundSetup};
use crate::bench::error::BenchError;
use crate::config::run::RunConfig;
use crate::config::spec::SpecMethod;
use crate::model::Loaded;
use crate::record::spec::DrafterInfo;
use crate::record::RunRecord;
use crate::spec::synthetic::Reference;
use crate::spec::{mtp, second_model, Sources};

/// The loaded draft model, if the run drafts with one; fills `record.drafter`.
pub(crate) fn prepare(
    cfg: &RunConfig,
    target: &Loaded,
    record: &mut RunRecord,
) -> Result<Option<Loaded>, BenchError> {
    let spec = &cfg.spec;
    let mut info = DrafterInfo {
        spec: spec.method.label(),
        ..Default::default()
    };
    let draft = match &spec.method {
        SpecMethod::None => return Ok(None),
        SpecMethod::Draft { model } => {
            let draft = second_model::load(spec, (&cfg.model, cfg.runtime.matmuls()), model)?;
            second_model::same_vocabulary(
                &cfg.model.model,
                &target.tokenizer,
                model,
                &draft.tokenizer,
            )?;
            let about = super::sweep::model_info(&draft, &draft.path)?;
            info.weight_bytes =
                second_model::weight_bytes(spec.draft_dtype, draft.file_bytes, about.parameters);
            info.load_s = draft.load_time.as_secs_f64();
            info.model = Some(about);
            info.dtype = Some(spec.draft_dtype);
            Some(draft)
        }
        SpecMethod::Mtp => {
            mtp::check(&cfg.model.model, &target.path)?;
            info.weight_bytes = mtp::block_bytes(target.path.path(), cfg.model.dtype)?;
            None
        }
        SpecMethod::Lookup | SpecMethod::LayerSkip { .. } | SpecMethod::Synthetic { .. } => None,
    };
    // Builds the drafter once now so that bad settings fail before the first round.
    let empty = Reference::default();
    let sources = Sources {
        draft: draft.as_ref().map(|d| &d.model),
        reference: Some(&empty),
        ..Default::default()
    };
    crate::spec::drafter_with(spec, &target.model, sources)?;
    record.drafter = Some(info);
    Ok(draft)
}

/// Raises the drafter's KV high-water mark with a finished round's.
pub(crate) fn note_round(record: &mut RunRecord, out: &RoundOutput) {
    if let Some(d) = record.drafter.as_mut() {
        d.peak_kv_bytes = d.peak_kv_bytes.max(out.peak_draft_kv_bytes);
    }
}

/// For `--spec synthetic:`: the reference pass, one `--spec none` round at 1 job on `setup`'s
/// model and workload (untimed, before any warm-up), whose greedy transcripts the synthetic
/// drafter proposes from; its duration and size go into `record.drafter`. None for any other
/// drafter.
pub(crate) fn reference(
    setup: &RoundSetup<'_>,
    record: &mut RunRecord,
) -> Result<Option<Reference>, BenchError> {
    if !matches!(setup.spec.method, SpecMethod::Synthetic { .. }) {
        return Ok(None);
    }
    let started = Instant::now();
    let out = run_round(&super::baseline::setup(setup), 1, |_, _| {})?;
    if let Some(d) = record.drafter.as_mut() {
        d.reference_s = Some(started.elapsed().as_secs_f64());
        d.reference_requests = Some(out.transcripts.len());
    }
    Ok(Some(Reference {
        transcripts: out.transcripts,
    }))
}
