//! Speculative decoding: drafters that propose tokens for each decoding sequence of a step,
//! and the pure acceptance rule the engine applies to the target's logits. The engine verifies
//! every drafted sequence in the same batched forward as the other sequences' decode tokens and
//! prefill chunks (`LogitRows::All` for a drafted segment) and rolls the target's KV cache back
//! to the accepted prefix (`KvCache::truncate`).
//!
//! Greedy decoding accepts the longest agreeing prefix ([`verify`]), so the output is exactly
//! the output without speculation. Sampled decoding (`--temperature > 0`) uses the rejection
//! rule ([`rejection`]); every drafter here proposes deterministically, so its distribution is
//! a point mass and each output token follows the target's sampling distribution.

pub mod lookup;
pub mod model_drafter;
pub mod mtp;
pub mod rejection;
pub mod second_model;
pub mod synthetic;
pub mod verify;

pub use crate::config::spec::{parse_ngram, SpecConfig, SpecMethod, DEFAULT_K};
use candle_core::Tensor;

use crate::error::EngineError;
use crate::model::family::Model;

/// One sequence's request for a draft.
#[derive(Debug, Clone, Copy)]
pub struct DraftInput<'a> {
    /// The engine's request id (drafters with state key it on this).
    pub id: u64,
    /// Everything the sequence knows: prompt and output so far (the last token is not yet in
    /// the target's cache).
    pub tokens: &'a [u32],
    /// Most tokens to propose.
    pub k: usize,
}

/// Proposes tokens for the decoding sequences of one step. A drafter with state (a model's KV
/// caches) rolls it back itself: each call passes the sequence's true history, and anything the
/// drafter holds beyond the common prefix with it was rejected.
pub trait Drafter {
    /// Up to `k` proposed tokens per input, in input order (empty: no proposal, a plain decode).
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError>;
    /// The sequence `id` has finished or was preempted: forget its state.
    fn release(&mut self, _id: u64) {}
    /// The most KV-cache bytes the drafter has held at once (0 for a drafter without a model).
    fn peak_kv_bytes(&self) -> usize {
        0
    }
    /// Whether the drafter reads the target's hidden states; only then does the engine ask the
    /// target for them ([`Drafter::observe_hidden`]), so other drafters pay nothing.
    fn wants_hidden(&self) -> bool {
        false
    }
    /// After a forward: the target's hidden states (after its final norm) `[n, hidden]` of
    /// sequence `id` at positions `from..from + n`, the tokens the target kept this step.
    fn observe_hidden(&mut self, _id: u64, _from: usize, _rows: Tensor) -> Result<(), EngineError> {
        Ok(())
    }
}

/// What a drafter may draw on beyond the target model.
#[derive(Default, Clone, Copy)]
pub struct Sources<'m> {
    /// The loaded draft model of `--spec draft:MODEL` (required for it).
    pub draft: Option<&'m Model>,
    /// The reference pass of `--spec synthetic:` (required for it).
    pub reference: Option<&'m synthetic::Reference>,
    /// The run's `--seed` (synthetic acceptance's coins).
    pub seed: u64,
    /// A drafter with KV of its own keeps a prefix cache of this many tokens (0: none, as the
    /// engine's).
    pub prefix_tokens: usize,
}

/// The drafter these settings ask for on `target` (none for `--spec none`); refuses a
/// layer-skip that would keep every layer (that is no speculation, only overhead).
pub fn drafter<'m>(
    cfg: &SpecConfig,
    target: &'m Model,
) -> Result<Option<Box<dyn Drafter + 'm>>, EngineError> {
    drafter_with(cfg, target, Sources::default())
}

/// [`drafter`] with what `from` holds (a draft model, a reference pass, a prefix cache).
pub fn drafter_with<'m>(
    cfg: &SpecConfig,
    target: &'m Model,
    from: Sources<'m>,
) -> Result<Option<Box<dyn Drafter + 'm>>, EngineError> {
    let (draft, prefix_tokens) = (from.draft, from.prefix_tokens);
    Ok(match &cfg.method {
        SpecMethod::None => None,
        SpecMethod::Lookup => Some(Box::new(lookup::Lookup::new(cfg.ngram.0, cfg.ngram.1))),
        SpecMethod::Draft { model } => {
            let draft = draft.ok_or_else(|| {
                EngineError::Bug(format!(
                    "--spec draft:{model}: the draft model was not loaded"
                ))
            })?;
            Some(Box::new(
                model_drafter::ModelDrafter::whole(draft).with_prefix_cache(prefix_tokens)?,
            ))
        }
        SpecMethod::Mtp => Some(Box::new(mtp::MtpDrafter::new(target)?)),
        SpecMethod::Synthetic { rates } => {
            let reference = from.reference.ok_or_else(|| {
                EngineError::Bug("--spec synthetic: no reference pass was run".into())
            })?;
            Some(Box::new(synthetic::Synthetic::new(
                rates, from.seed, reference,
            )))
        }
        &SpecMethod::LayerSkip { layers } => {
            let (total, drafter) = match target {
                Model::Llama(m) => (m.cfg.layers, model_drafter::ModelDrafter::new(m, layers)),
                Model::Qwen35(m) => (
                    m.cfg.base.layers,
                    model_drafter::ModelDrafter::first_qwen35(m, layers),
                ),
                Model::Gemma(_) => {
                    return Err(EngineError::Refused(format!(
                        "--spec layerskip:{layers}: layer-skip drafting runs on the llama family and Qwen3.5; this model is {}: use --spec lookup or --spec none",
                        target.arch()
                    )))
                }
            };
            if layers >= total {
                return Err(EngineError::Refused(format!(
                    "--spec layerskip:{layers}: the model has {total} layers; draft with fewer, e.g. --spec layerskip:{}",
                    (total / 2).max(1)
                )));
            }
            Some(Box::new(drafter.with_prefix_cache(prefix_tokens)?))
        }
    })
}
