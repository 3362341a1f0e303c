//! Rollback of the drafter's own caches against a reference: after the target rejects part of
//! a proposal, the next call rolls the draft model's cache back and catches up, and what it then
//! holds equals a fresh prefill of the same tokens (K/V rows within `TOL`), its next logits
//! agree, and it proposes what a drafter that never saw the rejected tokens proposes.

use super::*;
use crate::model::synthetic::{load_gguf_for_test, max_diff, next_logits, prefilled, Spec, TOL};

const K: usize = 4;

fn propose(d: &mut ModelDrafter, tokens: &[u32]) -> Vec<u32> {
    let input = DraftInput {
        id: 7,
        tokens,
        k: K,
    };
    d.propose(&[input]).expect("propose").remove(0)
}

/// Drafts after `prompt`, then is told that the target kept the first drafted token and put
/// another token in place of the second; returns the history after that rejection.
fn reject_second(d: &mut ModelDrafter, prompt: &[u32]) -> Vec<u32> {
    let first = propose(d, prompt);
    assert_eq!(first.len(), K);
    let held = d.seqs[&7].fed.len();
    assert_eq!(held, prompt.len() + K - 1, "the last proposal is never fed");
    let mut history = prompt.to_vec();
    history.push(first[0]);
    history.push(if first[1] == 0 { 1 } else { first[1] - 1 });
    history
}

#[test]
fn a_draft_models_cache_after_a_rejection_equals_a_fresh_prefill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let draft = load_gguf_for_test(
        dir.path(),
        &Spec {
            seed: 5,
            layers: 1,
            ..Spec::default()
        },
    );
    let prompt = [40, 71, 3, 200, 17, 9, 120, 64];
    let mut d = ModelDrafter::whole(&draft.model);
    let history = reject_second(&mut d, &prompt);
    let after = propose(&mut d, &history);

    // What it holds: the history and all but the last new proposal, nothing rejected.
    let st = d.seqs.get_mut(&7).expect("state kept");
    let mut expect = history.clone();
    expect.extend_from_slice(&after[..K - 1]);
    assert_eq!(st.fed, expect);
    let mut fresh = prefilled(&draft.model, &expect);
    let kv = st.cache.max_row_diff(&fresh).expect("same shape");
    assert!(kv <= TOL, "K/V rows differ by {kv} (> {TOL})");
    let a = next_logits(&draft.model, &mut st.cache, after[K - 1]);
    let b = next_logits(&draft.model, &mut fresh, after[K - 1]);
    let diff = max_diff(&a, &b);
    assert!(diff <= TOL, "next logits differ by {diff} (> {TOL})");

    // A drafter that starts from the history proposes the same.
    let mut clean = ModelDrafter::whole(&draft.model);
    assert_eq!(propose(&mut clean, &history), after);
}

#[test]
fn a_layer_skip_drafters_cache_after_a_rejection_equals_a_fresh_drafters() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = load_gguf_for_test(dir.path(), &Spec::default());
    let llama = target.model.as_llama().expect("synthetic llama");
    let prompt = [12, 250, 33, 33, 98, 7, 150];
    let mut d = ModelDrafter::new(llama, 1);
    let history = reject_second(&mut d, &prompt);
    let after = propose(&mut d, &history);

    let mut clean = ModelDrafter::new(llama, 1);
    assert_eq!(propose(&mut clean, &history), after);
    let (a, b) = (&d.seqs[&7], &clean.seqs[&7]);
    assert_eq!(a.fed, b.fed);
    let kv = a.cache.max_row_diff(&b.cache).expect("same shape");
    assert!(kv <= TOL, "K/V rows differ by {kv} (> {TOL})");
}

#[test]
fn a_drafters_prefix_cache_copies_a_shared_prompt_and_proposes_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = load_gguf_for_test(dir.path(), &Spec::default());
    let llama = target.model.as_llama().expect("synthetic llama");
    let shared: Vec<u32> = (0..40).map(|i| 20 + (i * 7) % 200).collect();
    let ask = |tail: u32| {
        let mut p = shared.clone();
        p.extend([tail, tail + 1, tail + 2]);
        p
    };
    let run = |cached: bool| {
        let mut d = ModelDrafter::new(llama, 1)
            .with_prefix_cache(if cached { 256 } else { 0 })
            .expect("drafter");
        let mut out = Vec::new();
        for (id, tail) in [(1, 3), (2, 90), (3, 160)] {
            let tokens = ask(tail);
            let input = DraftInput {
                id,
                tokens: &tokens,
                k: K,
            };
            out.push(d.propose(&[input]).expect("propose").remove(0));
            // Each sequence's cache holds its history and the fed proposals, nothing else.
            assert_eq!(d.seqs[&id].fed[..tokens.len()], tokens[..]);
        }
        (out, d.prefix_stats())
    };
    let (plain, none) = run(false);
    let (cached, stats) = run(true);
    assert_eq!(
        cached, plain,
        "proposals differ with the drafter's prefix cache"
    );
    assert!(none.is_none());
    let stats = stats.expect("a prefix cache");
    assert_eq!(
        stats.reused_tokens,
        2 * 32,
        "two later prompts reuse two blocks each"
    );
}
