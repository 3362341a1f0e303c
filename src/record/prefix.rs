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
mod tests {
    use super::*;
    use crate::workload::Outcome;

    fn task(prompt: usize, reused: usize, first: usize, ttft: f64) -> TaskSample {
        TaskSample {
            job: 0,
            task: "t".into(),
            turns: 1,
            start_s: 0.0,
            queue_wait_s: 0.0,
            ttft_s: Some(ttft),
            completion_s: 1.0,
            prompt_tokens: prompt,
            reused_tokens: reused,
            first_turn_reused: first,
            output_tokens: 3,
            prompt_tok_s: None,
            tpot_s: None,
            gaps_ms: vec![],
            hit_limit: false,
            outcome: Outcome::Pass,
            tool_calls: vec![],
            output: String::new(),
        }
    }

    #[test]
    fn cold_and_cached_prompts_are_kept_apart() {
        let tasks = [
            task(100, 0, 0, 0.9),
            task(100, 96, 96, 0.1),
            task(100, 96, 96, 0.3),
            task(100, 0, 0, 0.7),
        ];
        let f = PrefixFigures::of(&tasks);
        assert_eq!((f.prefix_cold_prompts, f.prefix_cached_prompts), (2, 2));
        assert_eq!(f.prefix_ttft_cold_s, Some(0.8));
        assert_eq!(f.prefix_ttft_cached_s, Some(0.2));
        assert_eq!(
            (f.prefix_tokens_computed, f.prefix_tokens_reused),
            (208, 192)
        );
        assert_eq!(f.prefix_hit_rate, Some(0.48));
    }

    #[test]
    fn no_tasks_no_rates() {
        let f = PrefixFigures::of(&[]);
        assert_eq!(f.prefix_hit_rate, None);
        assert_eq!(f.prefix_ttft_cold_s, None);
    }
}
