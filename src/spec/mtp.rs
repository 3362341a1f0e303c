//! `--spec mtp`: drafting with the checkpoint's own multi-token-prediction layers (the `nextn`
//! blocks of DeepSeek-V3 and GLM-4.5 style checkpoints, Qwen3.5's MTP block), counted from the
//! GGUF metadata key `ARCH.nextn_predict_layers` and loaded with the model
//! ([`crate::model::llama`], [`crate::model::qwen35`]). A model without them is refused with
//! an error that names the missing key and the families that carry such layers.
//!
//! Drafting: the nextn block at position i reads the target's hidden state hᵢ (after the final
//! norm) and the token t₍ᵢ₊₁₎ and predicts t₍ᵢ₊₂₎. For a sequence t₀…tₙ (tₙ not yet in the
//! target's cache) the drafter feeds the pairs (hᵢ, t₍ᵢ₊₁₎) it has not fed yet, up to
//! (h₍ₙ₋₁₎, tₙ), whose argmax is the first draft; each further draft feeds the previous draft
//! with the block's own state, k times in all (the first nextn block chained, as vLLM does with
//! one MTP layer). Every sequence of a step drafts in one batched forward per draft position.
//!
//! KV and rollback: the block keeps its own one-layer cache per sequence. Only pairs built on the
//! target's own hidden states are kept; the chained positions are cut off after each proposal,
//! so a rejected draft leaves nothing behind, and the target's hidden states of the tokens it
//! kept ([`Drafter::observe_hidden`]) extend the cache at the next proposal.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;

use super::{DraftInput, Drafter};
use crate::config::WeightDType;
use crate::error::{EngineError, ModelError};
use crate::model::family::Model;
use crate::model::gguf::Gguf;
use crate::model::kv::KvCache;
use crate::model::llama::{Llama, NextnInput};
use crate::model::qwen35::Qwen35;
use crate::model::vmath::argmax;
use crate::model::ModelPath;

/// Model families whose checkpoints carry multi-token-prediction layers.
pub const FAMILIES: &str = "DeepSeek-V3, GLM-4.5, MiMo, Qwen3-Next and Qwen3.5";

/// A model with a multi-token-prediction block the drafter runs.
pub trait NextnModel {
    /// One step of the block: each input's last-row logits and the state a chained step reads.
    fn forward_nextn(
        &self,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError>;
    /// A fresh cache for the block.
    fn new_nextn_cache(&self, capacity: usize) -> Result<KvCache, EngineError>;
}

impl NextnModel for Llama {
    fn forward_nextn(
        &self,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        Llama::forward_nextn(self, inputs, caches)
    }
    fn new_nextn_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        Llama::new_nextn_cache(self, capacity)
    }
}

impl NextnModel for Qwen35 {
    fn forward_nextn(
        &self,
        inputs: &[NextnInput],
        caches: &mut [&mut KvCache],
    ) -> Result<(Tensor, Tensor), EngineError> {
        Qwen35::forward_nextn(self, inputs, caches)
    }
    fn new_nextn_cache(&self, capacity: usize) -> Result<KvCache, EngineError> {
        Qwen35::new_nextn_cache(self, capacity)
    }
}

/// The metadata key of the nextn layer count for architecture `arch`.
pub fn key(arch: &str) -> String {
    format!("{arch}.nextn_predict_layers")
}

/// The number of nextn layers a GGUF file declares (0 when the key is absent).
pub fn nextn_layers(path: &Path) -> Result<(String, u64), ModelError> {
    let g = Gguf::open(path)?;
    let arch = g.architecture()?;
    let n = g
        .get(&key(&arch))
        .and_then(|v| v.to_u32().map(u64::from).or_else(|_| v.to_u64()).ok())
        .unwrap_or(0);
    Ok((arch, n))
}

/// Bytes the first nextn block's weights take as held with `dtype` (the block the drafter runs,
/// loaded with the target): its tensors' bytes in the file for `--dtype q`, its parameters
/// times the element size for a dense dtype.
pub fn block_bytes(path: &Path, dtype: WeightDType) -> Result<u64, ModelError> {
    let g = Gguf::open(path)?;
    let arch = g.architecture()?;
    let blocks = g.opt_u64(&format!("{arch}.block_count")).unwrap_or(0);
    let n = g.opt_u64(&key(&arch)).unwrap_or(0);
    let prefix = format!("blk.{}.", blocks.saturating_sub(n));
    let (mut file, mut params) = (0u64, 0u64);
    for (name, info) in &g.content.tensor_infos {
        if name.starts_with(&prefix) {
            let elems = info.shape.elem_count() as u64;
            let d = info.ggml_dtype;
            file += elems / d.block_size() as u64 * d.type_size() as u64;
            params += elems;
        }
    }
    Ok(super::second_model::weight_bytes(dtype, file, params))
}

fn missing(name: &str, what: &str) -> EngineError {
    EngineError::Refused(format!(
        "--spec mtp: --model {name} has no multi-token-prediction layers ({what}); checkpoints of {FAMILIES} carry them; use --spec layerskip:L, --spec lookup or --spec draft:MODEL"
    ))
}

/// Checks that the target `name` at `path` has nextn layers; the error says what is missing.
pub fn check(name: &str, path: &ModelPath) -> Result<(), EngineError> {
    match path {
        ModelPath::Safetensors(dir) => Err(missing(
            name,
            &format!(
                "{} is a safetensors folder; nextn layers are read from GGUF metadata",
                dir.display()
            ),
        )),
        ModelPath::Gguf(p) => {
            let (arch, n) = nextn_layers(p).map_err(|e| EngineError::Refused(e.to_string()))?;
            if n == 0 {
                return Err(missing(
                    name,
                    &format!("GGUF key {} absent or 0", key(&arch)),
                ));
            }
            Ok(())
        }
    }
}

struct SeqState {
    /// Pairs (hᵢ, t₍ᵢ₊₁₎) for i < its length, all built on the target's hidden states.
    cache: KvCache,
    /// The target's hidden states not fed yet, positions `from..from + rows`.
    hidden: Option<Tensor>,
    from: usize,
}

impl SeqState {
    fn rows(&self) -> usize {
        self.hidden.as_ref().map_or(0, |h| h.dim(0).unwrap_or(0))
    }

    /// Drops the hidden states before position `at`.
    fn consume(&mut self, at: usize) -> Result<(), EngineError> {
        let end = self.from + self.rows();
        self.hidden = match self.hidden.take() {
            Some(h) if end > at && at >= self.from => {
                Some(h.narrow(0, at - self.from, end - at)?)
            }
            Some(h) if at < self.from => Some(h),
            _ => None,
        };
        self.from = self.from.max(at);
        Ok(())
    }
}

/// One sequence's share of a drafting step.
struct Job {
    slot: usize,
    id: u64,
    state: SeqState,
    /// Pairs built on the target's states once the proposal is done (n for t₀…tₙ).
    keep: usize,
}

/// A drafter running the target's first nextn block.
pub struct MtpDrafter<'m> {
    model: &'m dyn NextnModel,
    seqs: HashMap<u64, SeqState>,
    /// The most KV bytes held at once so far.
    peak_kv: usize,
}

impl<'m> MtpDrafter<'m> {
    /// Drafts with `target`'s nextn block; refuses a model without one.
    pub fn new(target: &'m Model) -> Result<Self, EngineError> {
        let model: &dyn NextnModel = match target {
            Model::Llama(m) if m.has_nextn() => m,
            Model::Qwen35(m) if m.has_mtp() => m,
            _ => {
                return Err(missing(
                    target.arch(),
                    &format!("GGUF key {} absent or 0", key(target.arch())),
                ))
            }
        };
        Ok(Self {
            model,
            seqs: HashMap::new(),
            peak_kv: 0,
        })
    }

    /// KV bytes the drafter holds now.
    pub fn kv_bytes(&self) -> usize {
        self.seqs.values().map(|s| s.cache.bytes()).sum()
    }

    /// The job of `input`, with the pairs it still has to feed; none when the target's hidden
    /// states do not reach back to what the cache holds (then the sequence gets no draft).
    fn job(
        &mut self,
        slot: usize,
        input: &DraftInput,
    ) -> Result<Option<(Job, Vec<u32>, Tensor)>, EngineError> {
        let n = input.tokens.len().saturating_sub(1);
        let Some(mut state) = self.seqs.remove(&input.id) else {
            return Ok(None);
        };
        let c = state.cache.len().min(n.saturating_sub(1));
        if n == 0 || state.from > c || state.from + state.rows() < n {
            self.seqs.insert(input.id, state);
            return Ok(None);
        }
        state.cache.truncate(c);
        let h =
            state
                .hidden
                .as_ref()
                .expect("rows reach n > 0")
                .narrow(0, c - state.from, n - c)?;
        let tokens = input.tokens[c + 1..=n].to_vec();
        let job = Job {
            slot,
            id: input.id,
            state,
            keep: n,
        };
        Ok(Some((job, tokens, h)))
    }

    /// One batched nextn forward; returns each job's argmax and the states that chain on.
    fn step(
        &self,
        jobs: &mut [Job],
        fed: &[(Vec<u32>, Tensor)],
    ) -> Result<(Vec<u32>, Tensor), EngineError> {
        let inputs: Vec<NextnInput> = fed
            .iter()
            .map(|(tokens, hidden)| NextnInput { tokens, hidden })
            .collect();
        let mut caches: Vec<&mut KvCache> = jobs.iter_mut().map(|j| &mut j.state.cache).collect();
        let (logits, states) = self.model.forward_nextn(&inputs, &mut caches)?;
        let rows = logits.to_vec2::<f32>()?;
        Ok((rows.iter().map(|r| argmax(r)).collect(), states))
    }
}

impl Drafter for MtpDrafter<'_> {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        let mut out = vec![Vec::new(); seqs.len()];
        let (mut jobs, mut fed) = (Vec::new(), Vec::new());
        for (slot, s) in seqs.iter().enumerate().filter(|(_, s)| s.k > 0) {
            if let Some((job, tokens, h)) = self.job(slot, s)? {
                jobs.push(job);
                fed.push((tokens, h));
            }
        }
        let mut done = Vec::with_capacity(jobs.len());
        while !jobs.is_empty() {
            let (next, states) = self.step(&mut jobs, &fed)?;
            let mut more = (Vec::new(), Vec::new());
            for (j, (job, t)) in jobs.drain(..).zip(next).enumerate() {
                out[job.slot].push(t);
                if out[job.slot].len() < seqs[job.slot].k {
                    more.0.push(job);
                    more.1.push((vec![t], states.narrow(0, j, 1)?));
                } else {
                    done.push(job);
                }
            }
            (jobs, fed) = more;
        }
        self.peak_kv = self
            .peak_kv
            .max(self.kv_bytes() + done.iter().map(|j| j.state.cache.bytes()).sum::<usize>());
        for mut job in done {
            // Keep only the pairs built on the target's own states.
            job.state.cache.truncate(job.keep);
            job.state.consume(job.keep)?;
            self.seqs.insert(job.id, job.state);
        }
        Ok(out)
    }

    fn release(&mut self, id: u64) {
        self.seqs.remove(&id);
    }

    fn peak_kv_bytes(&self) -> usize {
        self.peak_kv
    }

    fn wants_hidden(&self) -> bool {
        true
    }

    fn observe_hidden(&mut self, id: u64, from: usize, rows: Tensor) -> Result<(), EngineError> {
        let mut state = match self.seqs.remove(&id) {
            Some(s) => s,
            None => SeqState {
                cache: self.model.new_nextn_cache(from + rows.dim(0)? + 1)?,
                hidden: None,
                from,
            },
        };
        // A position fed again (after a rollback of the target) replaces what followed it.
        if state.cache.len() > from {
            state.cache.truncate(from);
        }
        let end = state.from + state.rows();
        state.hidden = match state.hidden.take() {
            Some(h) if from > state.from && from <= end => {
                let kept = h.narrow(0, 0, from - state.from)?;
                Some(Tensor::cat(&[&kept, &rows], 0)?)
            }
            _ => {
                state.from = from;
                Some(rows)
            }
        };
        self.seqs.insert(id, state);
        Ok(())
    }
}
