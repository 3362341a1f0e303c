//! One start of `tokfire cold`, inside the fresh child process: load the model, one warm-up
//! forward (a single token, as llama.cpp's warm-up run does), then the task's prompt to its last
//! token, each phase stamped on the system-wide monotonic clock so the parent can put them on the
//! time line that began when it started this process. The report goes to stdout as JSON.

use serde::{Deserialize, Serialize};

use crate::bench::error::BenchError;
use crate::config::{ModelConfig, RuntimeConfig, SamplingConfig};
use crate::engine::batching::Engine;
use crate::engine::generate::{generate_on, one_request, GenerateParams};
use crate::error::EngineError;
use crate::measure::{memory, monotonic};
use crate::model::llama::{LogitRows, SeqInput};
use crate::record::cold::ChildReport;
use crate::workload::Prompt;

/// What the parent asks one child to do (passed as JSON on its command line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildSpec {
    pub model: ModelConfig,
    pub runtime: RuntimeConfig,
    pub prompt: Prompt,
    /// Output limit, tokens.
    pub max_tokens: usize,
    pub sampling: SamplingConfig,
    /// Token ids to submit instead of the rendered `prompt` (`prefill --cold-start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<u32>>,
    /// `--prefill-chunk` of the one-request engine (default: `run`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_chunk: Option<usize>,
}

/// Runs one start; `main_ns` is the moment `main` began (taken by the caller, first thing).
pub fn run(spec: &ChildSpec, main_ns: u64) -> Result<ChildReport, BenchError> {
    let rt = super::runtime::start(&spec.runtime)?;
    let _in = rt.enter();
    start(spec, main_ns)
}

/// Load, warm-up and the prompt (model steps on the entered runtime's workers).
fn start(spec: &ChildSpec, main_ns: u64) -> Result<ChildReport, BenchError> {
    let loaded = crate::model::load(&spec.model, spec.runtime.matmuls())?;
    let loaded_ns = monotonic::now_ns();
    let ids = match &spec.ids {
        Some(ids) => checked_ids(ids, loaded.tokenizer.info.vocab_size)?,
        None => loaded
            .tokenizer
            .encode(&super::round::render(&loaded, &spec.prompt)?)?,
    };
    let first = *ids.first().ok_or_else(|| {
        EngineError::Refused("the prompt encodes to no tokens; give a non-empty prompt".into())
    })?;
    warm_up(&loaded.model, first)?;
    let warm_ns = monotonic::now_ns();
    let params = GenerateParams {
        max_new: spec.max_tokens,
        sampling: spec.sampling.clone(),
        stop: loaded.tokenizer.info.eos_id.into_iter().collect(),
    };
    let mut first_token_ns = None;
    let mut last_token_ns = 0;
    let mut cfg = one_request(ids.len(), params.max_new, 0);
    if let Some(chunk) = spec.prefill_chunk.filter(|&c| c > 0) {
        (cfg.prefill_chunk, cfg.max_batch_tokens) = (chunk, chunk);
    }
    let mut engine = Engine::new(&loaded.model, cfg, params.sampling.clone());
    let g = generate_on(&mut engine, 0, &ids, &params, |_, at| {
        // The engine's stamp of the token, on the system-wide clock.
        let ns = monotonic::now_ns().saturating_sub(at.elapsed().as_nanos() as u64);
        first_token_ns.get_or_insert(ns);
        last_token_ns = ns;
    })?;
    // A start that stopped at once (stop token first) has its first token at the end.
    let end = monotonic::now_ns();
    let first_token_ns = first_token_ns.unwrap_or(end);
    let last_token_ns = if last_token_ns == 0 {
        end
    } else {
        last_token_ns
    };
    Ok(ChildReport {
        main_ns,
        loaded_ns,
        warm_ns,
        first_token_ns,
        last_token_ns,
        read_bytes: memory::disk_read_bytes(),
        peak_rss_bytes: memory::peak_rss_bytes(),
        prompt_tokens: ids.len(),
        output_tokens: g.tokens.len(),
        output: loaded.tokenizer.decode(&g.tokens)?,
        load_split: loaded.split.as_ref().map(Into::into),
    })
}

/// Token ids given on the command line, each inside the model's vocabulary.
fn checked_ids(ids: &[u32], vocab: usize) -> Result<Vec<u32>, EngineError> {
    match ids.iter().find(|&&id| id as usize >= vocab) {
        Some(id) => Err(EngineError::Refused(format!(
            "token id {id} is outside the model's vocabulary of {vocab}"
        ))),
        None => Ok(ids.to_vec()),
    }
}

/// One forward of one token on a scratch cache, waited for (its logits copied to the host).
fn warm_up(model: &crate::model::family::Model, token: u32) -> Result<(), EngineError> {
    let mut cache = model.new_cache(1)?;
    let logits = model.forward(
        &[SeqInput {
            tokens: &[token],
            logits: LogitRows::Last,
        }],
        &mut [&mut cache],
    )?;
    logits.flatten_all()?.to_vec1::<f32>()?;
    Ok(())
}
