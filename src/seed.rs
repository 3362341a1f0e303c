//! Seed mixing: how this crate derives one well-spread 64-bit seed from several values (a
//! run's `--seed`, a cell, a sample index, a position) — SplitMix64's step folded over them,
//! so every combination seeds differently and the same combination always the same.

/// One SplitMix64 step: the golden-ratio increment, then its finaliser.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `seed` with each of `values` mixed in, in order.
pub(crate) fn mix_all(seed: u64, values: &[u64]) -> u64 {
    values.iter().fold(seed, |x, &v| mix(x ^ v))
}
