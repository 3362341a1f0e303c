//! One request on the batching engine: `generate`, each `cold` start and every `session` request
//! run through [`Engine`] with one sequence, so their prefill is the engine's chunked prefill and
//! their clocks come from the same events `run` measures (a TTFT means the same in every verb).
//! `on_token` sees each token as it is sampled, with the moment the engine stamped it.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::batching::{Engine, EventKind, FinishReason, Request};
use super::scheduler::{RequestId, SchedulerConfig};
use crate::config::run::EngineSettings;
use crate::config::SamplingConfig;
use crate::error::EngineError;
use crate::model::family::Model;

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
    /// Prompt tokens copied from the prefix cache instead of prefilled (0 without one).
    pub reused_tokens: usize,
    /// Generated tokens (stop token excluded).
    pub tokens: Vec<u32>,
    /// Submission to the first token: the prompt's prefill steps and the first sample, i.e.
    /// time to first token.
    pub prefill: Duration,
    /// One entry per later token: the time since the token before it (decode step, sampling
    /// and bookkeeping), in order.
    pub steps: Vec<Duration>,
    /// Ended on a stop token rather than the limit.
    pub stopped: bool,
}

/// The budgets of a one-request engine: `run`'s defaults for the step and the prefill chunk,
/// one sequence, KV room for the prompt and its output plus `prefix_tokens` for a prefix cache.
pub fn one_request(prompt_tokens: usize, max_new: usize, prefix_tokens: usize) -> SchedulerConfig {
    let d = EngineSettings::default();
    SchedulerConfig {
        max_seqs: 1,
        max_batch_tokens: d.max_batch_tokens,
        prefill_chunk: d.prefill_chunk,
        kv_budget_tokens: prompt_tokens + max_new + prefix_tokens,
        schedule: d.schedule,
        prefix_cache_tokens: prefix_tokens,
    }
}

/// Runs `prompt` through `model` on a one-request engine of its own.
pub fn generate(
    model: &Model,
    prompt: &[u32],
    p: &GenerateParams,
    on_token: impl FnMut(u32, Instant),
) -> Result<Generation, EngineError> {
    let cfg = one_request(prompt.len(), p.max_new, 0);
    let mut engine = Engine::new(model, cfg, p.sampling.clone());
    generate_on(&mut engine, 0, prompt, p, on_token)
}

/// Runs `prompt` as request `id` on `engine` (which has nothing else to do) to its last token.
/// The request's sampler is seeded from the engine's seed and `id`, as in `run`.
pub fn generate_on(
    engine: &mut Engine<'_>,
    id: RequestId,
    prompt: &[u32],
    p: &GenerateParams,
    mut on_token: impl FnMut(u32, Instant),
) -> Result<Generation, EngineError> {
    if prompt.is_empty() {
        return Err(EngineError::Refused(
            "the prompt encodes to no tokens; give a non-empty prompt".into(),
        ));
    }
    let mut out = Generation {
        prompt_tokens: prompt.len(),
        reused_tokens: 0,
        tokens: Vec::new(),
        prefill: Duration::ZERO,
        steps: Vec::new(),
        stopped: false,
    };
    if p.max_new == 0 {
        return Ok(out);
    }
    let mut seen = engine.events().len();
    engine.submit(Request {
        id,
        prompt: prompt.to_vec(),
        max_new: p.max_new,
        stop: p.stop.clone(),
    })?;
    let mut last: Option<Instant> = None;
    while engine.step()? {
        for ev in &engine.events()[seen..] {
            if ev.id != Some(id) {
                continue;
            }
            match ev.kind {
                EventKind::Submitted { .. } => last = Some(ev.at),
                EventKind::PrefixReused { tokens } => out.reused_tokens = tokens,
                EventKind::Token { token } => {
                    let before = last.unwrap_or(ev.at);
                    match out.tokens.is_empty() {
                        true => out.prefill = ev.at.duration_since(before),
                        false => out.steps.push(ev.at.duration_since(before)),
                    }
                    last = Some(ev.at);
                    out.tokens.push(token);
                    on_token(token, ev.at);
                }
                EventKind::Finished { reason, .. } => {
                    out.stopped = reason == FinishReason::Stop;
                    // Stopped at once (a stop token first): the prefill ran to the finish.
                    if out.tokens.is_empty() {
                        out.prefill = ev.at.duration_since(last.unwrap_or(ev.at));
                    }
                }
                _ => {}
            }
        }
        seen = engine.events().len();
    }
    Ok(out)
}
