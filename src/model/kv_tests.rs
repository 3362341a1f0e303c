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
