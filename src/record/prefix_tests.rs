//! Unit tests of `crate::record::prefix`.

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
