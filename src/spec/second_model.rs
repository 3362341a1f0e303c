//! `--spec draft:MODEL`: a second, smaller (or more coarsely stored) model drafts for the target.
//! It is anything `--model` accepts, loaded with `--draft-dtype`, and must share the target's
//! vocabulary: both token tables are compared entry by entry and a difference is refused with
//! an error naming both models. It drafts through [`super::model_drafter::ModelDrafter`] with all
//! of its layers, so it keeps its own KV cache per sequence and drafts every sequence of a step
//! in one batched forward, like the target.

use crate::config::spec::SpecConfig;
use crate::config::{ModelConfig, WeightDType};
use crate::error::{EngineError, ModelError};
use crate::model::tokenizer::Tokenizer;
use crate::model::Loaded;

/// The draft model's configuration: the target's cache folders and device, the draft's name
/// and `--draft-dtype`.
pub fn draft_config(target: &ModelConfig, model: &str, dtype: WeightDType) -> ModelConfig {
    ModelConfig {
        model: model.to_string(),
        dtype,
        ..target.clone()
    }
}

/// Loads the draft model `model` of `spec` for a target loaded with `target`, run by the
/// target's `kernels`.
pub fn load(
    spec: &SpecConfig,
    (target, kernels): (&ModelConfig, crate::model::Kernels),
    model: &str,
) -> Result<Loaded, ModelError> {
    crate::model::load(&draft_config(target, model, spec.draft_dtype), kernels)
}

/// Refuses a draft whose token table differs from the target's: token ids would mean different
/// text, so no draft token could be verified.
pub fn same_vocabulary(
    target_name: &str,
    target: &Tokenizer,
    draft_name: &str,
    draft: &Tokenizer,
) -> Result<(), EngineError> {
    let (a, b) = (
        target.inner().get_vocab(true),
        draft.inner().get_vocab(true),
    );
    let differ = |what: String| {
        Err(EngineError::Refused(format!(
            "--spec draft:{draft_name}: its vocabulary differs from the target's (--model {target_name}): {what}; a draft model must share the target's token table (e.g. the same model family in another size or storage), or use --spec lookup or --spec layerskip:L"
        )))
    };
    if a.len() != b.len() {
        return differ(format!(
            "{} tokens against the target's {}",
            b.len(),
            a.len()
        ));
    }
    let mut mismatched: Vec<(&String, u32)> = a
        .iter()
        .filter(|(tok, id)| b.get(*tok) != Some(id))
        .map(|(tok, id)| (tok, *id))
        .collect();
    if mismatched.is_empty() {
        return Ok(());
    }
    mismatched.sort_by_key(|m| m.1);
    let (tok, id) = mismatched[0];
    differ(format!(
        "{} of {} tokens have other ids (first: target id {id} is {tok:?})",
        mismatched.len(),
        a.len()
    ))
}

/// Bytes the draft model's weights take as held: the file's size for `--draft-dtype q`, its
/// parameters times the element size for a dense dtype.
pub fn weight_bytes(dtype: WeightDType, file_bytes: u64, parameters: u64) -> u64 {
    match dtype {
        WeightDType::Q => file_bytes,
        WeightDType::F32 => parameters * 4,
        WeightDType::F16 | WeightDType::Bf16 => parameters * 2,
    }
}
