//! Before the first round of a speculative run: loads the draft model of `--spec draft:MODEL`
//! (refusing one whose vocabulary differs from the target's), checks that `--spec mtp` has the
//! layers it needs, and records the drafter's identity and extra memory, whose KV high-water
//! mark each round then raises.

use super::round::RoundOutput;
use crate::bench::error::BenchError;
use crate::config::run::RunConfig;
use crate::config::spec::SpecMethod;
use crate::model::Loaded;
use crate::record::spec::DrafterInfo;
use crate::record::RunRecord;
use crate::spec::{mtp, second_model};

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
            let draft = second_model::load(spec, &cfg.model, model)?;
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
        SpecMethod::Lookup | SpecMethod::LayerSkip { .. } => None,
    };
    // Builds the drafter once now so that bad settings fail before the first round.
    crate::spec::drafter_with(spec, &target.model, draft.as_ref().map(|d| &d.model), 0)?;
    record.drafter = Some(info);
    Ok(draft)
}

/// Raises the drafter's KV high-water mark with a finished round's.
pub(crate) fn note_round(record: &mut RunRecord, out: &RoundOutput) {
    if let Some(d) = record.drafter.as_mut() {
        d.peak_kv_bytes = d.peak_kv_bytes.max(out.peak_draft_kv_bytes);
    }
}
