//! Exponentials in plain arithmetic that vectorises (no libm call per element): the softmax
//! weights of attention, GELU with the tanh approximation (as `g · sigmoid(2u)`) and SiLU.
//! Also the greedy argmax over a row of logits.

/// `e^x` for `x` in `[-87, 88]` (callers clamp) to within a few units in the last place:
/// `x = n ln 2 + r`, a degree-6 polynomial for `e^r`, `2^n` from the exponent bits.
#[inline(always)]
fn exp_in_range(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4; // 0.693359375: few bits, so n · LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4; // ln 2 - LN2_HI
    const SHIFT: f32 = 12_582_912.0; // 1.5 · 2^23: adding it rounds to an integer
    let shifted = x.mul_add(std::f32::consts::LOG2_E, SHIFT);
    let n = shifted - SHIFT;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let mut p: f32 = 1.0 / 720.0;
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p.mul_add(r, c);
    }
    // `n` as an integer, read off `shifted`'s mantissa (whose unit is 1 there) rather than by
    // `n as i32`, whose saturating conversion keeps the loops that call this from vectorising.
    let n = (shifted.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    p * f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// `e^x` for `x ≤ 0` (a softmax weight). Below -87 (a weight under 1e-38 beside the
/// maximum's 1) it returns `e^-87`.
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f32) -> f32 {
    exp_in_range(x.max(-87.0))
}

/// `1 / (1 + e^-x)`: exact 0 and 1 are never reached, NaN stays NaN.
#[inline(always)]
fn sigmoid(x: f32) -> f32 {
    1.0 / one_plus_exp_neg(x)
}

/// `1 + e^-x`, `-x` clamped to `[-87, 88]` (the sigmoid's and SiLU's denominator).
#[inline(always)]
fn one_plus_exp_neg(x: f32) -> f32 {
    1.0 + exp_in_range((-x).clamp(-87.0, 88.0))
}

/// `x / (1 + e^-x)` (SiLU) on the polynomial exponential (`-x` clamped to `[-87, 88]`: beyond,
/// the quotient is `x` or within 1e-36 of zero), so a gate's loop vectorises; libm's scalar
/// `expf` took 3.7 % of a 39-token prefill and 2.5 % of the sweep at 3 jobs (`perf record`,
/// default model, 2 threads, Zen 3).
#[inline(always)]
pub(crate) fn silu(x: f32) -> f32 {
    x / one_plus_exp_neg(x)
}

/// GELU with the tanh approximation, `0.5 x (1 + tanh(u))` with `u = √(2/π) (x + 0.044715 x³)`,
/// computed as the identical `x · sigmoid(2u)`.
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    const C2: f32 = 2.0 * 0.797_884_6; // 2 sqrt(2 / pi)
    x * sigmoid(C2 * x.mul_add(0.044_715 * x * x, x))
}

/// Index of the largest logit; the lowest index wins ties; NaN never wins. Two passes that
/// vectorise (a vocabulary of 262144 took 3 % of a decode step as one compare chain): the
/// maximum in 16 lanes, then the first chunk of 16 holding it, then its place in the chunk.
pub fn argmax(logits: &[f32]) -> u32 {
    let larger = |m: f32, v: f32| if v > m { v } else { m };
    let mut lanes = [f32::NEG_INFINITY; 16];
    let chunks = logits.chunks_exact(16);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = larger(*m, v);
        }
    }
    let max = tail
        .iter()
        .chain(&lanes)
        .fold(f32::NEG_INFINITY, |m, &v| larger(m, v));
    if max == f32::NEG_INFINITY {
        return 0;
    }
    let hit = |v: &f32| *v == max;
    let chunk = logits
        .chunks(16)
        .position(|c| c.iter().fold(false, |f, v| f | hit(v)))
        .unwrap_or(0);
    let at = logits[chunk * 16..].iter().position(hit).unwrap_or(0);
    (chunk * 16 + at) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exponential_is_within_a_few_ulp() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        let mut worst = 0f64;
        for i in -870_000..=880_000 {
            let x = i as f32 * 1e-4;
            let want = (x as f64).exp();
            worst = worst.max(((exp_in_range(x) as f64 - want) / want).abs());
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
        assert!(exp_nonpositive(-200.0) < 1e-37);
    }

    #[test]
    fn the_exponential_reads_its_exponent_as_the_saturating_conversion_did() {
        // The conversion `n as i32` it replaced, on the same polynomial: the same bits for
        // every input the callers pass (softmax's [-87, 0], the sigmoid's [-87, 88], NaN).
        let before = |x: f32| {
            const SHIFT: f32 = 12_582_912.0;
            let n = x.mul_add(std::f32::consts::LOG2_E, SHIFT) - SHIFT;
            let r = n.mul_add(2.121_944_4e-4, n.mul_add(-0.693_359_4, x));
            let mut p: f32 = 1.0 / 720.0;
            for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
                p = p.mul_add(r, c);
            }
            p * f32::from_bits(((n as i32 + 127) as u32) << 23)
        };
        for i in -87 * 4096..=88 * 4096 {
            let x = i as f32 / 4096.0 + 1e-4;
            assert_eq!(exp_in_range(x).to_bits(), before(x).to_bits(), "{x}");
        }
        for x in [
            -87.0,
            -0.0,
            0.0,
            88.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
        ] {
            assert_eq!(exp_in_range(x).to_bits(), before(x).to_bits(), "{x}");
        }
        assert!(exp_in_range(f32::NAN).is_nan() && sigmoid(f32::NAN).is_nan());
    }

    #[test]
    fn the_activations_match_their_definitions() {
        let mut worst = 0f64;
        for i in -20_000..=20_000 {
            let x = i as f32 * 1e-3;
            let xd = x as f64;
            let silu_want = xd / (1.0 + (-xd).exp());
            let u = 0.797_884_560_802_865_4 * (xd + 0.044_715 * xd * xd * xd);
            let gelu_want = 0.5 * xd * (1.0 + u.tanh());
            for (got, want) in [(silu(x), silu_want), (gelu_tanh(x), gelu_want)] {
                worst = worst.max((got as f64 - want).abs() / want.abs().max(1e-3));
            }
        }
        assert!(worst < 2e-6, "worst error {worst:e}");
        for big in [-1e6f32, -100.0, 100.0, 1e6] {
            assert!(silu(big).is_finite() && gelu_tanh(big).is_finite(), "{big}");
        }
        assert!(silu(f32::NAN).is_nan());
        assert_eq!(gelu_tanh(0.0), 0.0);
    }
}
