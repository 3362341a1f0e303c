//! The prefix cache's figures per level (`--prefix-cache on`): cold prompts (nothing reused, the
//! whole prompt prefilled) and cached prompts (a prefix copied from the cache) kept apart, since
//! their TTFTs measure different things; prompt tokens computed vs reused; the hit rate. A task
//! is cold or cached by its first turn, the one its TTFT measures. Pure: task samples in.

use serde::{Deserialize, Serialize};

use super::TaskSample;
use crate::measure::stats::median;

/// A level's prefix-cache figures over its measured tasks (every prompt is cold without
/// `--prefix-cache on`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrefixFigures {
    /// Tasks whose first prompt reused nothing.
    #[serde(default)]
    pub prefix_cold_prompts: u64,
    /// Tasks whose first prompt reused a cached prefix.
    #[serde(default)]
    pub prefix_cached_prompts: u64,
    /// Median TTFT of cold prompts, seconds.
    #[serde(default)]
    pub prefix_ttft_cold_s: Option<f64>,
    /// Median TTFT of cached prompts, seconds.
    #[serde(default)]
    pub prefix_ttft_cached_s: Option<f64>,
    /// Prompt tokens prefilled, all turns.
    #[serde(default)]
    pub prefix_tokens_computed: u64,
    /// Prompt tokens copied from the cache, all turns.
    #[serde(default)]
    pub prefix_tokens_reused: u64,
    /// Reused ÷ all prompt tokens (none without prompt tokens).
    #[serde(default)]
    pub prefix_hit_rate: Option<f64>,
}

impl PrefixFigures {
    /// The figures of `tasks`.
    pub fn of<'a>(tasks: impl IntoIterator<Item = &'a TaskSample>) -> Self {
        let (mut cold, mut cached) = (Vec::new(), Vec::new());
        let mut f = Self::default();
        for t in tasks {
            let reused = t.reused_tokens.min(t.prompt_tokens);
            f.prefix_tokens_reused += reused as u64;
            f.prefix_tokens_computed += (t.prompt_tokens - reused) as u64;
            let (ttfts, count) = match t.first_turn_reused {
                0 => (&mut cold, &mut f.prefix_cold_prompts),
                _ => (&mut cached, &mut f.prefix_cached_prompts),
            };
            ttfts.extend(t.ttft_s);
            *count += 1;
        }
        f.prefix_ttft_cold_s = median(&cold);
        f.prefix_ttft_cached_s = median(&cached);
        let all = f.prefix_tokens_computed + f.prefix_tokens_reused;
        f.prefix_hit_rate = (all > 0).then(|| f.prefix_tokens_reused as f64 / all as f64);
        f
    }
}

#[cfg(test)]
#[path = "prefix_tests.rs"]
mod tests;
