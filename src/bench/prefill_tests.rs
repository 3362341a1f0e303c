//! Unit tests of `crate::bench::prefill`: the grid, the prompts, and that depth and the cached
//! share really sit in the KV cache before the first prefilled token.

use super::*;
use crate::model::synthetic::{load_gguf_for_test, Spec};

fn grid() -> Grid {
    Grid {
        lengths: vec![16, 64],
        depths: vec![0, 32],
        cached_pct: vec![0, 50],
        chunks: vec![8, 256],
        samples: 3,
        warmup: 1,
        seed: 7,
        cold_start: false,
    }
}

#[test]
fn the_grid_has_every_combination_with_lengths_innermost() {
    let cells = grid().cells();
    assert_eq!(cells.len(), 16);
    assert_eq!(&cells[..3], &[(16, 0, 0, 8), (64, 0, 0, 8), (16, 0, 50, 8)]);
    assert_eq!(cells[15], (64, 32, 50, 256));
    let mut unique = cells.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), cells.len());
}

#[test]
fn every_sample_of_every_cell_has_a_seed_of_its_own() {
    let mut seeds: Vec<u64> = grid()
        .cells()
        .iter()
        .flat_map(|&c| (0..4).map(move |i| sample_seed(7, c, i)))
        .collect();
    let n = seeds.len();
    seeds.sort();
    seeds.dedup();
    assert_eq!(seeds.len(), n);
    assert_eq!(
        sample_seed(7, (16, 0, 0, 8), 0),
        sample_seed(7, (16, 0, 0, 8), 0)
    );
    assert_ne!(
        sample_seed(7, (16, 0, 0, 8), 0),
        sample_seed(8, (16, 0, 0, 8), 0)
    );
}

#[test]
fn prompts_have_the_asked_length_and_no_special_token() {
    let dir = tempfile::tempdir().unwrap();
    let l = load_gguf_for_test(dir.path(), &Spec::default());
    let vocab = Vocab::of(&l);
    let added = l.tokenizer.inner().get_added_tokens_decoder();
    assert!(
        !added.is_empty(),
        "the synthetic vocabulary has special tokens"
    );
    let mut rng = StdRng::seed_from_u64(3);
    let p = vocab.draw(&mut rng, 500);
    assert_eq!(p.len(), 500);
    assert!(p.iter().all(|id| !added.contains_key(id)));
    let mut again = StdRng::seed_from_u64(3);
    assert_eq!(
        vocab.draw(&mut again, 500),
        p,
        "seeded: the same prompt again"
    );
}

#[test]
fn depth_and_the_cached_share_are_in_the_cache_before_the_first_prefilled_token() {
    let dir = tempfile::tempdir().unwrap();
    let l = load_gguf_for_test(dir.path(), &Spec::default());
    let vocab = Vocab::of(&l);
    let mut rng = StdRng::seed_from_u64(5);
    // depth 64 + half of a 40-token prompt: 84 tokens asked, 80 (five whole blocks) copied.
    let prompt = vocab.draw(&mut rng, 64 + 40);
    let s = sample(&l.model, &prompt, 64 + 20, 8).unwrap();
    assert_eq!(s.reused_tokens, 80);
    assert_eq!(s.prefilled_tokens, 24);
    // 24 tokens in chunks of 8: three forwards, the first sample in the last.
    assert_eq!(s.steps, 3);
    assert!(s.ttft_s > 0.0 && s.forward_s > 0.0 && s.forward_s <= s.ttft_s);
    // Cold: nothing copied, everything computed.
    let cold = sample(&l.model, &prompt, 0, 256).unwrap();
    assert_eq!(
        (cold.reused_tokens, cold.prefilled_tokens, cold.steps),
        (0, 104, 1)
    );
}

#[test]
fn workload_prompts_are_cut_to_the_exact_length_from_a_seeded_offset() {
    let text: Vec<u32> = (100..110).collect();
    let source = Source::Text(text.clone());
    let cell = (25, 7, 0, 256);
    let p = source.prompt(3, cell, 0);
    assert_eq!(p.len(), 32, "depth + length tokens");
    // Consecutive tokens of the joined prompts, wrapping around at the end.
    for w in p.windows(2) {
        let next = if w[0] == 109 { 100 } else { w[0] + 1 };
        assert_eq!(w[1], next, "{p:?}");
    }
    assert_eq!(
        p,
        source.prompt(3, cell, 0),
        "the same seed cuts the same prompt"
    );
    let starts: std::collections::HashSet<u32> =
        (0..20).map(|i| source.prompt(3, cell, i)[0]).collect();
    assert!(
        starts.len() > 3,
        "samples start at different offsets: {starts:?}"
    );
}
