//! Unit tests of `crate::model::attention`.

use super::*;

#[test]
fn dot_matches_a_plain_sum() {
    let a: Vec<f32> = (0..67).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..67).map(|i| 1.0 - i as f32 * 0.25).collect();
    let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!((dot(&a, &b) - plain).abs() < 1e-3);
}

#[test]
fn a_window_sees_only_its_last_keys() {
    // One head of width 8; key j is j·e0 and value j·e1, so a uniform score would give the
    // mean of the visible j in out[1]. With a zero query every visible key scores the same.
    let dims = Dims {
        heads: 1,
        kv_heads: 1,
        head_dim: 8,
        interleaved: false,
        rot: 8,
    };
    let cap = 6;
    let mut k = vec![0f32; cap * 8];
    let mut v = vec![0f32; cap * 8];
    for j in 0..cap {
        k[j * 8] = j as f32;
        v[j * 8 + 1] = j as f32;
    }
    let kv = KvSlices {
        k: &k,
        v: &v,
        capacity: cap,
    };
    let q = vec![0f32; 8];
    let seg = SegmentRows {
        start: 0,
        len: 1,
        pos: 5,
    };
    let mut out = vec![0f32; 8];
    let windowed = Scoring {
        window: Some(2),
        ..Scoring::causal(8)
    };
    attend_scored(dims, windowed, &q, &[(seg, kv)], &mut out);
    assert!((out[1] - 4.5).abs() < 1e-6, "keys 4 and 5 only: {}", out[1]);
    attend_scored(dims, Scoring::causal(8), &q, &[(seg, kv)], &mut out);
    assert!((out[1] - 2.5).abs() < 1e-6, "keys 0..=5: {}", out[1]);
}

#[test]
fn rope_rotates_pairs_or_halves() {
    let mut x = [1.0, 2.0, 3.0, 4.0];
    rope_head(&mut x, &[0.0, 1.0], &[1.0, 0.0], true);
    assert_eq!(x, [-2.0, 1.0, 3.0, 4.0]);
    let mut y = [1.0, 2.0, 3.0, 4.0];
    rope_head(&mut y, &[0.0, 1.0], &[1.0, 0.0], false);
    assert_eq!(y, [-3.0, 2.0, 1.0, 4.0]);
}
