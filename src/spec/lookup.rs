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
mod tests {
    use super::*;

    #[test]
    fn proposes_what_followed_the_longest_most_recent_match() {
        // "1 2 3" occurred before; what followed it was "4 5".
        let t = [1, 2, 3, 4, 5, 9, 1, 2, 3];
        assert_eq!(lookup(&t, 1, 3, 2), vec![4, 5]);
        assert_eq!(lookup(&t, 1, 3, 10), vec![4, 5, 9, 1, 2, 3]);
    }

    #[test]
    fn longer_matches_win_over_more_recent_short_ones() {
        // The bigram "7 8" matches at 0 (followed by 1); the unigram "8" also at 4 (followed by 2).
        let t = [7, 8, 1, 0, 8, 2, 7, 8];
        assert_eq!(lookup(&t, 1, 2, 1), vec![1]);
        assert_eq!(lookup(&t, 1, 1, 1), vec![2]);
    }

    #[test]
    fn nothing_matches_nothing_proposed() {
        assert!(lookup(&[1, 2, 3, 4], 1, 3, 4).is_empty());
        assert!(lookup(&[1], 1, 3, 4).is_empty());
        assert!(lookup(&[1, 1], 2, 3, 4).is_empty());
        assert!(lookup(&[1, 2, 1], 1, 3, 0).is_empty());
    }
}
