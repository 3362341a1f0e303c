//! Single-request generation: one prefill forward, then one decode forward per token, each timed
//! with `Instant` once its logits are on the host (which waits for the device). `tokfire generate` uses it.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::sampler::Sampler;
use crate::config::SamplingConfig;
use crate::error::EngineError;
use crate::model::family::Model;
use crate::model::llama::{LogitRows, SeqInput};

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenerateParams {
    /// Most new tokens.
    pub max_new: usize,
    pub sampling: SamplingConfig,
    /// Tokens that end the generation (not emitted).
    pub stop: Vec<u32>,
}

/// What one generation produced and how long each part took.
#[derive(Debug, Clone, Serialize)]
pub struct Generation {
    /// Prompt length, in tokens.
    pub prompt_tokens: usize,
    /// Generated tokens (stop token excluded).
    pub tokens: Vec<u32>,
    /// Prompt forward + first sample, i.e. time to first token.
    pub prefill: Duration,
    /// One entry per decode step (forward + sample), in order.
    pub steps: Vec<Duration>,
    /// Ended on a stop token rather than the limit.
    pub stopped: bool,
}

/// Runs `prompt` through `model`, calling `on_token` with each new token as it is sampled.
pub fn generate(
    model: &Model,
    prompt: &[u32],
    p: &GenerateParams,
    mut on_token: impl FnMut(u32),
) -> Result<Generation, EngineError> {
    if prompt.is_empty() {
        return Err(EngineError::Invalid(
            "the prompt encodes to no tokens; give a non-empty prompt".into(),
        ));
    }
    let mut cache = model.new_cache(prompt.len() + p.max_new)?;
    let mut sampler = Sampler::new(&p.sampling);
    let mut out = Generation {
        prompt_tokens: prompt.len(),
        tokens: Vec::new(),
        prefill: Duration::ZERO,
        steps: Vec::new(),
        stopped: false,
    };
    if p.max_new == 0 {
        return Ok(out);
    }
    let start = Instant::now();
    let mut next = step(model, prompt, &mut cache, &mut sampler)?;
    out.prefill = start.elapsed();
    loop {
        if p.stop.contains(&next) {
            out.stopped = true;
            break;
        }
        out.tokens.push(next);
        on_token(next);
        if out.tokens.len() >= p.max_new {
            break;
        }
        let t = Instant::now();
        next = step(model, &[next], &mut cache, &mut sampler)?;
        out.steps.push(t.elapsed());
    }
    Ok(out)
}

fn step(
    model: &Model,
    tokens: &[u32],
    cache: &mut crate::model::kv::KvCache,
    sampler: &mut Sampler,
) -> Result<u32, EngineError> {
    let logits = model.forward(
        &[SeqInput {
            tokens,
            logits: LogitRows::Last,
        }],
        &mut [cache],
    )?;
    // Copying the logits to the host waits for the device, so the caller's clock is honest.
    let row = logits.squeeze(0)?.to_vec1::<f32>()?;
    Ok(sampler.sample(&row))
}
