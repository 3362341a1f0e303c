//! Rollback against a reference: after a rejected draft, the target's KV cache holds exactly
//! what a fresh prefill of the accepted tokens computes (every layer's K/V rows within
//! [`TOL`]; on Qwen3.5 the recurrent state too, restored from its snapshots), and the next
//! step's logits agree too. A drafter that knows the greedy continuation
//! proposes its first `right` tokens and then a wrong one, so the rejection is certain.

use crate::config::SamplingConfig;
use crate::engine::batching::{Engine, EventKind, Request};
use crate::engine::sampler::argmax;
use crate::engine::scheduler::SchedulerConfig;
use crate::error::EngineError;
use crate::model::family::Model;
use crate::model::synthetic::{load_gguf_for_test, max_diff, next_logits, prefilled, Spec, TOL};
use crate::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
use crate::spec::{DraftInput, Drafter};

/// Proposes the reference continuation's next `right` tokens, then one that differs from it.
struct Misleader {
    reference: Vec<u32>,
    right: usize,
}

impl Drafter for Misleader {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        Ok(seqs
            .iter()
            .map(|s| {
                let at = s.tokens.len();
                assert_eq!(s.tokens, &self.reference[..at], "history follows greedy");
                let Some(&truth) = self.reference.get(at + self.right) else {
                    return Vec::new();
                };
                let mut p = self.reference[at..at + self.right].to_vec();
                p.push(if truth == 0 { 1 } else { truth - 1 });
                p.truncate(s.k);
                p
            })
            .collect())
    }
}

fn sched() -> SchedulerConfig {
    SchedulerConfig {
        max_seqs: 4,
        max_batch_tokens: 256,
        prefill_chunk: 64,
        kv_budget_tokens: 10_000,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    }
}

fn request(prompt: &[u32], max_new: usize) -> Request {
    Request {
        id: 0,
        prompt: prompt.to_vec(),
        max_new,
        stop: Vec::new(),
    }
}

/// Steps a speculative engine until its first verify step, checks that the draft was cut at
/// `right` accepted tokens, and compares the rolled-back cache with a fresh prefill.
fn rollback_matches_fresh_prefill(right: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let loaded = load_gguf_for_test(dir.path(), &Spec::default());
    rollback_on(&loaded.model, right);
}

/// [`rollback_matches_fresh_prefill`] on the tiny Qwen3.5 model (recurrent state restored).
fn qwen35_rollback_matches_fresh_prefill(right: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("qwen35.gguf");
    write_qwen35_gguf(&path, &Qwen35Spec::default()).expect("writing qwen35");
    let loaded = crate::model::synthetic::load_file_for_test(dir.path(), &path);
    rollback_on(&loaded.model, right);
}

fn rollback_on(model: &Model, right: usize) {
    let prompt = [40, 71, 3, 200, 17, 9, 120, 64];
    let n = 12;
    let mut plain = Engine::new(model, sched(), SamplingConfig::default());
    plain.submit(request(&prompt, n)).expect("submit");
    plain.run_to_completion().expect("plain run");
    let mut reference = prompt.to_vec();
    reference.extend_from_slice(plain.output(0).expect("finished"));
    assert_eq!(
        reference.len(),
        prompt.len() + n,
        "no stop token configured"
    );

    let mut e = Engine::new(model, sched(), SamplingConfig::default());
    let drafter = Misleader {
        reference: reference.clone(),
        right,
    };
    e.set_speculation(Box::new(drafter), 4).expect("k = 4");
    e.submit(request(&prompt, n)).expect("submit");
    let verified = loop {
        assert!(e.step().expect("step"), "finished before any verify step");
        let last = e.events().iter().rev().find_map(|ev| match ev.kind {
            EventKind::Verified { proposed, accepted } => Some((proposed, accepted)),
            _ => None,
        });
        if let Some(v) = last {
            break v;
        }
    };
    assert_eq!(verified, (right + 1, right), "the wrong token is rejected");

    let s = e.seqs.get_mut(&0).expect("still running");
    assert_eq!(s.tokens, reference[..s.tokens.len()], "output is greedy");
    let mut rolled = s.cache.take().expect("the cache is back after the step");
    // The cache holds every token but the target's own next one, which the next step feeds.
    let accepted = &s.tokens[..s.tokens.len() - 1];
    assert_eq!(
        rolled.len(),
        accepted.len(),
        "truncated to the accepted tokens"
    );
    let mut fresh = prefilled(model, accepted);
    let kv = rolled.max_row_diff(&fresh).expect("same shape");
    assert!(kv <= TOL, "K/V rows differ by {kv} (> {TOL})");
    if let (Some(a), Some(b)) = (rolled.recurrent(), fresh.recurrent()) {
        let d = a.max_diff(b).expect("same state shape");
        assert!(d <= TOL, "recurrent state differs by {d} (> {TOL})");
    }

    let token = *s.tokens.last().expect("tokens");
    let a = next_logits(model, &mut rolled, token);
    let b = next_logits(model, &mut fresh, token);
    let d = max_diff(&a, &b);
    assert!(d <= TOL, "next logits differ by {d} (> {TOL})");
    assert_eq!(
        argmax(&a),
        reference[accepted.len() + 1],
        "next token is greedy"
    );
}

#[test]
fn a_draft_rejected_at_its_first_token_leaves_the_cache_of_a_fresh_prefill() {
    rollback_matches_fresh_prefill(0);
}

#[test]
fn a_draft_rejected_after_two_accepted_tokens_leaves_the_cache_of_a_fresh_prefill() {
    rollback_matches_fresh_prefill(2);
}

#[test]
fn qwen35_state_rejected_at_the_first_draft_token_is_the_state_of_a_fresh_prefill() {
    qwen35_rollback_matches_fresh_prefill(0);
}

#[test]
fn qwen35_state_rejected_after_two_accepted_tokens_is_the_state_of_a_fresh_prefill() {
    qwen35_rollback_matches_fresh_prefill(2);
}
