use candle_core::{Device, Tensor};

use super::super::kv::KvShape;
use super::*;

fn toks(from: u32, n: usize) -> Vec<u32> {
    (from..from + n as u32).collect()
}

#[test]
fn the_longest_chain_of_whole_blocks_matches() {
    let mut ix = PrefixIndex::new(4, 100);
    let a = toks(0, 10); // two whole blocks and 2 tokens
    let s = ix.store(&a);
    assert_eq!(s.added.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(ix.matched(&a).len(), 2);
    // Same first block, different second: one block matches.
    let mut b = a.clone();
    b[5] = 99;
    assert_eq!(ix.matched(&b).len(), 1);
    // The same tokens at another depth do not match (the parent is part of the key).
    assert_eq!(ix.matched(&a[4..]).len(), 0);
    // Storing again adds nothing.
    assert!(ix.store(&a).added.is_empty());
    assert_eq!(ix.len(), 2);
}

#[test]
fn eviction_stays_within_the_budget_least_recently_used_leaves_first() {
    let mut ix = PrefixIndex::new(2, 5);
    let old = toks(0, 4); // 2 blocks
    let mid = toks(100, 4); // 2 blocks
    ix.store(&old);
    ix.store(&mid);
    // Use `old` again: `mid` is now the least recently used chain.
    let used = ix.matched(&old);
    ix.touch(&used);
    let new = toks(200, 4);
    let s = ix.store(&new);
    assert_eq!(ix.len(), 5, "never above the capacity");
    assert_eq!(s.evicted.len(), 1);
    assert_eq!(ix.matched(&mid).len(), 1, "mid lost its leaf, not its root");
    assert_eq!(ix.matched(&old).len(), 2);
    assert_eq!(ix.matched(&new).len(), 2);
    for i in 0..50 {
        ix.store(&toks(1000 + 10 * i, 6));
        assert!(ix.len() <= 5);
    }
}

#[test]
fn a_chain_longer_than_the_budget_keeps_its_first_blocks() {
    let mut ix = PrefixIndex::new(2, 3);
    let s = ix.store(&toks(0, 10));
    assert_eq!(s.added.len(), 3);
    assert!(s.evicted.is_empty(), "it does not evict its own blocks");
    assert_eq!(ix.matched(&toks(0, 10)).len(), 3);
}

fn shape() -> KvShape {
    KvShape {
        layers: 3,
        kv_heads: 2,
        head_dim: 4,
        max_positions: 256,
    }
}

/// A cache of `n` tokens whose rows are distinct numbers.
fn filled(shape: KvShape, n: usize, seed: f32) -> KvCache {
    let mut c = KvCache::new(shape, n, &Device::Cpu).unwrap();
    c.reserve(n).unwrap();
    for layer in 0..shape.layers {
        let len = shape.kv_heads * n * shape.head_dim;
        let data: Vec<f32> = (0..len)
            .map(|i| seed + (layer * 10_000 + i) as f32)
            .collect();
        let t = Tensor::from_vec(data, (shape.kv_heads, n, shape.head_dim), &Device::Cpu).unwrap();
        let neg = t.neg().unwrap();
        c.write(layer, &t, &neg).unwrap();
    }
    c.advance(n);
    c
}

#[test]
fn filled_rows_equal_the_stored_rows_exactly() {
    for kv_heads in [1, 2] {
        let shape = KvShape {
            kv_heads,
            ..shape()
        };
        let tokens = toks(7, 40);
        let mut src = filled(shape, 40, 0.5);
        let mut pc = PrefixCache::new(1024, 1, 0);
        pc.store(&tokens, &mut src).unwrap();
        assert_eq!(
            pc.stats().stored_blocks,
            2,
            "40 tokens hold two whole blocks"
        );
        assert_eq!(pc.reusable(&tokens), 32);
        // A prompt that is exactly the cached blocks keeps its last token to compute.
        assert_eq!(pc.reusable(&tokens[..32]), 16);
        let mut dst = KvCache::new(shape, 8, &Device::Cpu).unwrap();
        pc.fill(&tokens, 32, &mut dst).unwrap();
        // Writing over the source after the store must not change what the cache holds.
        src.truncate(0);
        let junk = Tensor::full(7e7f32, (kv_heads, 40, 4), &Device::Cpu).unwrap();
        for layer in 0..shape.layers {
            src.write(layer, &junk, &junk).unwrap();
        }
        src.advance(40);
        let mut again = KvCache::new(shape, 8, &Device::Cpu).unwrap();
        pc.fill(&tokens, 32, &mut again).unwrap();
        let mut reference = filled(shape, 40, 0.5);
        reference.truncate(32);
        assert_eq!(dst.max_row_diff(&reference).unwrap(), 0.0);
        assert_eq!(again.max_row_diff(&reference).unwrap(), 0.0);
    }
}

#[test]
fn the_budget_counts_bytes_of_whole_blocks() {
    let shape = shape();
    let per_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * 4;
    let mut pc = PrefixCache::new(3 * BLOCK_TOKENS + 5, per_token, 0);
    for i in 0..6 {
        let tokens = toks(1000 * i, 2 * BLOCK_TOKENS);
        pc.store(&tokens, &mut filled(shape, 2 * BLOCK_TOKENS, i as f32))
            .unwrap();
        assert!(pc.kv_bytes() <= 3 * BLOCK_TOKENS * per_token);
    }
    assert_eq!(pc.stats().peak_blocks, 3);
    assert!(pc.stats().evicted_blocks >= 8);
}

#[test]
fn fill_refuses_more_than_is_cached() {
    let mut pc = PrefixCache::new(1024, 1, 0);
    let mut dst = KvCache::new(shape(), 8, &Device::Cpu).unwrap();
    assert!(pc.fill(&toks(0, 40), 16, &mut dst).is_err());
}

#[test]
fn extra_weight_counts_in_the_capacity_and_leaves_with_its_block() {
    let mut ix = PrefixIndex::new(2, 6);
    let a = toks(0, 4); // 2 blocks
    ix.store(&a);
    let b = toks(100, 4);
    ix.store(&b);
    let ids = ix.matched(&b);
    let mut evicted = Vec::new();
    // Room for 3 more: `a` (older) loses its leaf, then its root.
    assert!(ix.add_weight(ids[1], 3, &mut evicted));
    assert_eq!(evicted.len(), 1, "one of a's blocks made room");
    assert_eq!(ix.matched(&a).len(), 1);
    // Nothing else may go: the weight of 7 cannot fit beside b's chain.
    let mut more = Vec::new();
    assert!(!ix.add_weight(ids[0], 4, &mut more));
    assert_eq!(ix.matched(&b).len(), 2, "the chain asking keeps its blocks");
    // Newer chains evict the weighted leaf in turn, and its weight with it.
    for i in 0..3 {
        ix.store(&toks(1000 + 10 * i, 4));
    }
    assert!(
        ix.matched(&b).len() < 2,
        "the weighted leaf was evicted in turn"
    );
    assert!(ix.len() <= 6);
}
