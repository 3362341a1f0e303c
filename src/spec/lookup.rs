//! Prompt lookup drafting (no model): the sequence's latest n tokens are searched for in its own
//! earlier tokens (prompt and output), longest n first; the tokens that followed the most recent
//! earlier match are proposed. Nothing matches: no proposal, and the step is a plain decode.

use super::{DraftInput, Drafter};
use crate::error::EngineError;

/// The prompt lookup drafter.
pub struct Lookup {
    min: usize,
    max: usize,
}

impl Lookup {
    /// Matches n-grams of `min..=max` tokens.
    pub fn new(min: usize, max: usize) -> Self {
        Self {
            min: min.max(1),
            max: max.max(min.max(1)),
        }
    }
}

impl Drafter for Lookup {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        Ok(seqs
            .iter()
            .map(|s| lookup(s.tokens, self.min, self.max, s.k))
            .collect())
    }
}

/// Up to `k` tokens that followed the most recent earlier occurrence of the longest suffix of
/// `tokens` of `min..=max` tokens.
pub fn lookup(tokens: &[u32], min: usize, max: usize, k: usize) -> Vec<u32> {
    if k == 0 {
        return Vec::new();
    }
    for n in (min..=max.min(tokens.len().saturating_sub(1))).rev() {
        let suffix = &tokens[tokens.len() - n..];
        // Candidate starts end before the suffix itself; most recent first.
        let found = (0..tokens.len() - n)
            .rev()
            .find(|&i| &tokens[i..i + n] == suffix);
        if let Some(i) = found {
            let from = i + n;
            let to = (from + k).min(tokens.len());
            return tokens[from..to].to_vec();
        }
    }
    Vec::new()
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;
