//! Synthetic acceptance (`--spec synthetic:RATE[,RATE…]`): a drafter that knows the greedy
//! output from a reference pass (one untimed `--spec none` round at 1 job, before the warm-up)
//! and proposes it, spoiling draft position i (1-based) with probability 1 − rate(i), where
//! rate(i) is the i-th rate given (the last one repeats). A spoiled token and everything after
//! it are rejected by the verify rule, so position i is accepted with probability rate(i) when
//! every position before it was: the acceptance is controlled, the verify forwards are real
//! (always `k` tokens, as a real drafter's), and the greedy output stays the baseline's.
//!
//! The coins are seeded by `(seed, transcript, position, draft index)`, not by the step's
//! batch, so every round and every job count draws the same ones for the same request.

use std::collections::HashMap;

use super::{DraftInput, Drafter};
use crate::error::EngineError;
use crate::seed::{mix, mix_all};

/// What the reference pass generated: for every request, its prompt followed by its greedy
/// output, as token ids.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    pub transcripts: Vec<Vec<u32>>,
}

impl Reference {
    /// The transcript that continues `tokens` (a request's prompt and output so far), if any.
    fn find(&self, tokens: &[u32]) -> Option<usize> {
        self.transcripts
            .iter()
            .position(|t| t.len() > tokens.len() && t.starts_with(tokens))
    }
}

/// The synthetic drafter over one reference.
pub struct Synthetic<'r> {
    rates: Vec<f64>,
    seed: u64,
    reference: &'r Reference,
    /// Request id → its transcript (found on the request's first draft).
    of: HashMap<u64, Option<usize>>,
}

impl<'r> Synthetic<'r> {
    /// Drafts from `reference` with the per-position `rates` (at least one).
    pub fn new(rates: &[f64], seed: u64, reference: &'r Reference) -> Self {
        Self {
            rates: rates.to_vec(),
            seed,
            reference,
            of: HashMap::new(),
        }
    }

    /// The draft for `s`: the reference continuation, spoiled at the first failed coin.
    fn draft(&mut self, s: &DraftInput) -> Vec<u32> {
        let reference = self.reference;
        let found = *self
            .of
            .entry(s.id)
            .or_insert_with(|| reference.find(s.tokens));
        // A request that left its transcript (the output drifted from the reference pass) has
        // nothing to draft from: a plain decode.
        let Some(t) = found.filter(|&t| reference.transcripts[t].starts_with(s.tokens)) else {
            return Vec::new();
        };
        let ahead = &reference.transcripts[t][s.tokens.len()..];
        let mut draft: Vec<u32> = ahead[..s.k.min(ahead.len())].to_vec();
        let at = s.tokens.len() as u64;
        if let Some(i) = (0..draft.len()).find(|&i| !self.coin(t as u64, at, i)) {
            draft[i] = spoiled(draft[i]);
        }
        draft
    }

    /// Whether draft index `i` (0-based) at sequence length `at` of transcript `t` is kept.
    fn coin(&self, t: u64, at: u64, i: usize) -> bool {
        let rate = self.rates[i.min(self.rates.len() - 1)];
        let h = mix_all(mix(self.seed ^ 0x5EED_5EED), &[t, at, i as u64]);
        // 53 random bits → a uniform draw in [0, 1).
        ((h >> 11) as f64 / (1u64 << 53) as f64) < rate
    }
}

impl Drafter for Synthetic<'_> {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        Ok(seqs.iter().map(|s| self.draft(s)).collect())
    }

    fn release(&mut self, id: u64) {
        self.of.remove(&id);
    }
}

/// A token other than `t` (in range for any vocabulary of at least two tokens).
fn spoiled(t: u32) -> u32 {
    if t == 0 {
        1
    } else {
        t - 1
    }
}

/// The token-weighted acceptance to expect when every draft has `k` tokens: position i is
/// accepted with probability rate(1) · … · rate(i); the mean of those over i = 1..k.
pub fn expected_acceptance(rates: &[f64], k: usize) -> Option<f64> {
    if rates.is_empty() || k == 0 {
        return None;
    }
    let mut reach = 1.0;
    let mut sum = 0.0;
    for i in 0..k {
        reach *= rates[i.min(rates.len() - 1)];
        sum += reach;
    }
    Some(sum / k as f64)
}

#[cfg(test)]
#[path = "synthetic_tests.rs"]
mod tests;
