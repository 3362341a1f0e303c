//! Unit tests of `crate::model::kv`.

use super::*;

fn shape() -> KvShape {
    KvShape {
        layers: 2,
        kv_heads: 2,
        head_dim: 4,
        max_positions: 64,
    }
}

fn block(n: usize, base: f32) -> Tensor {
    let data: Vec<f32> = (0..2 * n * 4).map(|i| base + i as f32).collect();
    Tensor::from_vec(data, (2, n, 4), &Device::Cpu).unwrap()
}

#[test]
fn writes_in_place_grows_and_keeps_old_tokens() {
    let mut c = KvCache::new(shape(), 2, &Device::Cpu).unwrap();
    let first = block(2, 0.0);
    c.reserve(2).unwrap();
    for l in 0..2 {
        c.write(l, &first, &first).unwrap();
    }
    c.advance(2);
    let bytes_before = c.bytes();
    c.reserve(3).unwrap();
    assert!(c.capacity() >= 5);
    assert!(c.bytes() > bytes_before);
    let second = block(3, 100.0);
    for l in 0..2 {
        c.write(l, &second, &second).unwrap();
    }
    c.advance(3);
    let (k, _) = c.view(1, 5).unwrap();
    let expect = Tensor::cat(&[&first, &second], 1).unwrap();
    let diff = (k - expect)
        .unwrap()
        .abs()
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert_eq!(diff, 0.0);
}

#[test]
fn truncate_rolls_back_and_limit_is_enforced() {
    let mut c = KvCache::new(shape(), 8, &Device::Cpu).unwrap();
    c.reserve(4).unwrap();
    c.advance(4);
    c.truncate(1);
    assert_eq!(c.len(), 1);
    assert!(c.reserve(64).is_err());
    assert!(c.reserve(63).is_ok());
}

/// Every held key's elements, read from the key blocks: `[kv_heads, len, head_dim]`.
fn from_blocks(c: &KvCache, layer: usize) -> Vec<f32> {
    let b = c.key_blocks(layer).unwrap();
    let (s, len) = (shape(), c.len());
    let mut out = Vec::new();
    for g in 0..s.kv_heads {
        for p in 0..len {
            for d in 0..s.head_dim {
                let block = (g * b.blocks + p / b.kb) * s.head_dim * b.kb;
                let at = block + crate::model::attention::key_at(s.head_dim, p % b.kb, d);
                out.push(b.data[at]);
            }
        }
    }
    out
}

#[test]
fn key_blocks_hold_the_keys_through_writes_growth_and_rollback() {
    let mut c = KvCache::new(shape(), 3, &Device::Cpu).unwrap();
    c.keep_key_blocks(32);
    let bytes_plain = 2 * 2 * 2 * 3 * 4 * 4;
    assert_eq!(
        c.bytes(),
        bytes_plain + 2 * 2 * 32 * 4 * 4,
        "blocks round capacity up"
    );
    let check = |c: &KvCache| {
        for l in 0..2 {
            let (k, _) = c.view(l, c.len()).unwrap();
            let want = k.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert_eq!(from_blocks(c, l), want, "layer {l} at {} tokens", c.len());
        }
    };
    // Across groups of 16 and blocks of 32 keys.
    for (n, base) in [(3, 0.0), (1, 50.0), (14, 100.0), (20, 200.0), (21, 300.0)] {
        c.reserve(n).unwrap();
        for l in 0..2 {
            c.write(l, &block(n, base + l as f32), &block(n, 0.0))
                .unwrap();
        }
        c.advance(n);
        check(&c);
    }
    c.truncate(37);
    c.reserve(2).unwrap();
    for l in 0..2 {
        c.write(l, &block(2, -7.0), &block(2, 0.0)).unwrap();
    }
    c.advance(2);
    check(&c);
}
