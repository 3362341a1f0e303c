//! The A/B verdict: keep, revert or retest, from two arms' per-round figures, judged against the
//! noise the arms themselves show. Pure: samples in, verdict out; seeded, so the same samples
//! always give the same verdict.
//!
//! - **Effect**: the ratio of medians, B ÷ A, of the metric named by `--expect`, with a 95 %
//!   percentile bootstrap confidence interval (each arm resampled with replacement on its own,
//!   [`RESAMPLES`] times, from a seeded SplitMix64 stream; Efron & Tibshirani, *An Introduction
//!   to the Bootstrap*, 1993, ch. 13 — the percentile interval), *expanded* for small samples
//!   as in Hesterberg, "What Teachers Should Know About the Bootstrap" (2015, §5.1): the
//!   percentiles are taken at α′/2 and 1 − α′/2 with Φ⁻¹(α′/2) = −√(n/(n−1))·t(α/2, n−1), which
//!   undoes the plain percentile interval's narrowness at 5 rounds (it would call an A/A a win
//!   about one time in ten). The interval says how far the ratio could move if the rounds were
//!   taken again on the same machine.
//! - **Noise**: each arm's within-arm spread, MAD ÷ median (the median absolute deviation, as in
//!   hyperfine's `outlier_detection.rs`), as a fraction.
//! - **keep**: B better, the whole interval on the better side of 1, the change at least
//!   `min_effect` (default 3 %) and at least [`NOISE_GATE`] × the larger arm's noise, outputs
//!   unchanged, quality not lower.
//! - **revert**: B worse beyond its interval, `min_effect` and the noise gate, or quality dropped, or outputs
//!   drifted where the variable should not change them.
//! - **retest**: anything else (inside the noise, too noisy, or faster with changed outputs that
//!   a person must judge). The rounds likely to settle it scale the interval's half-width as
//!   1/√n (the usual standard-error scaling) until it excludes no change, or until it lies inside
//!   ±`min_effect` (then: no effect worth having).
//! - **Disturbed rounds** (the noise sentinel saw other work on the machine) are left out when
//!   each arm keeps at least [`MIN_ROUNDS`] undisturbed rounds; the verdict says how many.
//! - **Also moved**: only `--expect` is declared in advance; every other metric measured is one
//!   hypothesis of a family, Holm-corrected (Holm 1979) on two-sided bootstrap p-values, and a
//!   kept one must also have its interval exclude no change by more than the larger arm's noise.
//! - **Sequential looks**: with `--until-decided N` the data are looked at up to N + 1 times (the
//!   first rounds, then after each added pair) and the run stops at the first look that is not a
//!   retest; each look's interval is taken at 5 % ÷ (N + 1) (Bonferroni alpha spending), so the
//!   chance of a false keep or revert over all looks stays at 5 % — optional stopping at 5 % per
//!   look would not (the seeded A/A simulation in the tests shows both).

use serde::{Deserialize, Serialize};

use crate::measure::stats::{mad, median};

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 4000;
/// Fewest rounds per arm the verdict is computed from (after discounting disturbed ones).
pub const MIN_ROUNDS: usize = 3;
/// Fewest rounds per arm for a keep or a revert on speed: the median of fewer rounds has too
/// few distinct resamples for its interval to mean much, so fewer rounds always say retest.
pub const DECIDE_ROUNDS: usize = 5;
/// Default `--min-effect`: a change smaller than 3 % is not worth keeping.
pub const DEFAULT_MIN_EFFECT: f64 = 0.03;
/// A change must also exceed this many times the larger arm's MAD ÷ median to count.
pub const NOISE_GATE: f64 = 2.0;
/// More rounds than this to settle is reported as "too noisy to settle here".
pub const MAX_SETTLE: usize = 500;

/// A figure the A/B can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Decode speed: 1 ÷ median TPOT of the round, tokens/s (higher is better).
    Decode,
    /// Prefill speed: median first-turn prompt tokens/s of the round (higher is better).
    Prefill,
    /// Median time to first token of the round, seconds (lower is better).
    Ttft,
    /// Median completion time of the round, seconds (lower is better).
    Completion,
    /// Model load time before the round, seconds (lower is better; only when each round loads).
    Load,
    /// Peak resident memory during the round, bytes (lower is better).
    Memory,
    /// All output tokens of the round ÷ its wall window, tokens/s (higher is better).
    Aggregate,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Self::Decode,
        Self::Prefill,
        Self::Ttft,
        Self::Completion,
        Self::Load,
        Self::Memory,
        Self::Aggregate,
    ];

    /// True when a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Self::Decode | Self::Prefill | Self::Aggregate)
    }

    /// Name for people, e.g. `decode tok/s`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Decode => "decode tok/s",
            Self::Prefill => "prefill tok/s",
            Self::Ttft => "TTFT",
            Self::Completion => "completion",
            Self::Load => "load",
            Self::Memory => "peak memory",
            Self::Aggregate => "aggregate tok/s",
        }
    }

    /// This metric's value in `r`.
    pub fn of(self, r: &RoundFigures) -> Option<f64> {
        let v = match self {
            Self::Decode => r.decode_tok_s,
            Self::Prefill => r.prefill_tok_s,
            Self::Ttft => r.ttft_s,
            Self::Completion => r.completion_s,
            Self::Load => r.load_s,
            Self::Memory => r.peak_rss_bytes.map(|b| b as f64),
            Self::Aggregate => r.aggregate_tok_s,
        };
        v.filter(|v| v.is_finite() && *v > 0.0)
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Self::Decode => "decode",
            Self::Prefill => "prefill",
            Self::Ttft => "ttft",
            Self::Completion => "completion",
            Self::Load => "load",
            Self::Memory => "memory",
            Self::Aggregate => "aggregate",
        };
        f.write_str(name)
    }
}

/// One measured round of one arm, as the verdict sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundFigures {
    pub decode_tok_s: Option<f64>,
    pub prefill_tok_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub completion_s: Option<f64>,
    pub load_s: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    pub aggregate_tok_s: Option<f64>,
    /// The noise sentinel saw other work on the machine during this round.
    pub disturbed: bool,
}

/// One task's outcome in both arms (the majority over measured rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskChange {
    pub task: String,
    /// Every measured output of the task was the same text in both arms.
    pub same_output: bool,
    /// `pass`, `fail` or `abstain` in arm A.
    pub outcome_a: String,
    pub outcome_b: String,
}

/// Everything the verdict is computed from.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    pub expect: Metric,
    pub a: &'a [RoundFigures],
    pub b: &'a [RoundFigures],
    /// Smallest relative change worth keeping (0.03 = 3 %).
    pub min_effect: f64,
    /// Why the variable may legitimately change outputs (`None`: it must not).
    pub drift_allowed: Option<String>,
    pub tasks: &'a [TaskChange],
    /// Passed ÷ attempted over measured rounds, per arm.
    pub pass_rate_a: Option<f64>,
    pub pass_rate_b: Option<f64>,
    pub seed: u64,
    /// Looks planned at the data: 1 for a fixed number of rounds; `--until-decided N` plans
    /// N + 1 (the first rounds, then one more pair each). Each look's interval is taken at
    /// 5 % ÷ looks (Bonferroni spending), so stopping at the first decisive look keeps the
    /// error rate at 5 %.
    pub looks: usize,
    /// Which look this is, 1-based.
    pub look: usize,
}

/// The three answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Keep,
    Revert,
    Retest,
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Keep => "keep",
            Self::Revert => "revert",
            Self::Retest => "retest",
        })
    }
}

/// A metric's change from A to B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub metric: Metric,
    /// Medians of the rounds used, in the metric's unit.
    pub median_a: f64,
    pub median_b: f64,
    /// Median B ÷ median A.
    pub ratio: f64,
    /// 95 % bootstrap interval of the ratio.
    pub ci_low: f64,
    pub ci_high: f64,
    /// MAD ÷ median of each arm (fraction).
    pub noise_a: f64,
    pub noise_b: f64,
    /// Rounds used per arm.
    pub n_a: usize,
    pub n_b: usize,
    /// Two-sided bootstrap p-value of no change (the share of resampled ratios on the far
    /// side of 1, doubled); absent in older records.
    #[serde(default)]
    pub p_value: f64,
    /// The two-sided level of the interval (0.05 for 95 %; smaller under a sequential rule).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

fn default_alpha() -> f64 {
    ALPHA
}

/// The family-wise error rate every verdict keeps: 5 %.
pub const ALPHA: f64 = 0.05;

impl Effect {
    /// The change as a signed fraction (B − A) ÷ A.
    pub fn change(&self) -> f64 {
        self.ratio - 1.0
    }

    /// True when B is better than A by the point estimate.
    pub fn b_better(&self) -> bool {
        (self.ratio > 1.0) == self.metric.higher_is_better() && self.ratio != 1.0
    }

    /// True when the interval excludes no change (1).
    pub fn significant(&self) -> bool {
        self.ci_low > 1.0 || self.ci_high < 1.0
    }

    /// The larger arm's noise.
    pub fn noise(&self) -> f64 {
        self.noise_a.max(self.noise_b)
    }

    /// `TTFT −12.0 % [−15.1, −8.2]`.
    pub fn label(&self) -> String {
        format!(
            "{} {} [{}, {}]",
            self.metric.label(),
            pct(self.change()),
            pct_bare(self.ci_low - 1.0),
            pct_bare(self.ci_high - 1.0)
        )
    }
}

/// `+12.0 %` or `−3.1 %`.
pub fn pct(x: f64) -> String {
    format!("{} %", pct_bare(x))
}

fn pct_bare(x: f64) -> String {
    let v = x * 100.0;
    if format!("{:.1}", v.abs()) == "0.0" {
        "0.0".into()
    } else if v < 0.0 {
        format!("\u{2212}{:.1}", -v)
    } else {
        format!("+{v:.1}")
    }
}

/// The verdict of an A/B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    /// Why, in one sentence.
    pub reason: String,
    /// The expected metric's effect (none when it was not measured in enough rounds).
    pub effect: Option<Effect>,
    /// Other metrics that moved beyond their noise.
    pub also_moved: Vec<Effect>,
    /// Tasks whose output or outcome differ between the arms.
    pub changed_tasks: Vec<TaskChange>,
    /// Rounds per arm left out because the sentinel flagged them.
    pub discounted_a: usize,
    pub discounted_b: usize,
    /// More rounds per arm likely to settle a retest (none: settled, or cannot tell).
    pub more_rounds: Option<usize>,
    /// Looks planned and the look this verdict was taken at (1 and 1 without
    /// `--until-decided`; absent in older records).
    #[serde(default = "one")]
    pub looks: usize,
    #[serde(default = "one")]
    pub look: usize,
    /// Other metrics judged besides the expected one (the Holm family of "also moved").
    #[serde(default)]
    pub also_judged: usize,
}

fn one() -> usize {
    1
}

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny seeded generator, stable across builds.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn resample_median(v: &[f64], rng: &mut SplitMix, buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    buf.extend((0..v.len()).map(|_| v[rng.below(v.len())]));
    median(buf).expect("resample of a non-empty set; this is a bug")
}

/// The ratio of medians B ÷ A with its 95 % percentile bootstrap interval; `None` with fewer than
/// two samples in an arm or a zero median.
pub fn effect(metric: Metric, a: &[f64], b: &[f64], seed: u64) -> Option<Effect> {
    effect_at(metric, a, b, seed, ALPHA)
}

/// [`effect`] with the interval at two-sided level `alpha`.
pub fn effect_at(metric: Metric, a: &[f64], b: &[f64], seed: u64, alpha: f64) -> Option<Effect> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, mb) = (median(a)?, median(b)?);
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let mut rng = SplitMix(seed ^ (metric as u64).wrapping_mul(0x1000_0001));
    let mut buf = Vec::with_capacity(a.len().max(b.len()));
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let ra = resample_median(a, &mut rng, &mut buf);
            let rb = resample_median(b, &mut rng, &mut buf);
            rb / ra
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let below = ratios.partition_point(|r| *r < 1.0);
    let above = RESAMPLES - ratios.partition_point(|r| *r <= 1.0);
    let p_value = (2.0 * below.min(above).max(1) as f64 / RESAMPLES as f64).min(1.0);
    let tail = expanded_tail_at(a.len().min(b.len()), alpha);
    let at = |q: f64| ratios[((q * RESAMPLES as f64) as usize).min(RESAMPLES - 1)];
    Some(Effect {
        metric,
        median_a: ma,
        median_b: mb,
        ratio: mb / ma,
        ci_low: at(tail),
        ci_high: at(1.0 - tail),
        noise_a: mad(a)? / ma,
        noise_b: mad(b)? / mb,
        n_a: a.len(),
        n_b: b.len(),
        p_value,
        alpha,
    })
}

/// Two-sided 95 % t quantiles t(0.975, df) for df = 1..=30 (beyond: 1.96).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// The lower tail probability α′/2 of Hesterberg's expanded percentile interval at 95 % for `n`
/// samples per arm: Φ(−√(n/(n−1))·t(0.975, n−1)).
pub fn expanded_tail(n: usize) -> f64 {
    let n = n.max(2);
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    let z = (n as f64 / (n as f64 - 1.0)).sqrt() * t;
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// [`expanded_tail`] at any two-sided level `alpha` (the table at 5 %, else Student's t
/// computed).
pub fn expanded_tail_at(n: usize, alpha: f64) -> f64 {
    if alpha == ALPHA {
        return expanded_tail(n);
    }
    let n = n.max(2);
    let t = crate::measure::stats::t_quantile(1.0 - alpha / 2.0, (n - 1) as f64);
    let z = (n as f64 / (n as f64 - 1.0)).sqrt() * t;
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function (Numerical Recipes' `erfcc`, fractional error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The metric's samples of an arm, undisturbed rounds only when at least [`MIN_ROUNDS`] remain;
/// returns the samples and how many rounds were discounted.
fn samples(metric: Metric, rounds: &[RoundFigures]) -> (Vec<f64>, usize) {
    let all: Vec<(f64, bool)> = rounds
        .iter()
        .filter_map(|r| metric.of(r).map(|v| (v, r.disturbed)))
        .collect();
    let calm: Vec<f64> = all.iter().filter(|x| !x.1).map(|x| x.0).collect();
    if calm.len() >= MIN_ROUNDS && calm.len() < all.len() {
        (calm.clone(), all.len() - calm.len())
    } else {
        (all.iter().map(|x| x.0).collect(), 0)
    }
}

/// More rounds per arm that would likely settle `e`: the interval's half-width (in log ratio)
/// shrinks as 1/√n until it excludes 1 (when the point estimate is at least `min_effect`) or fits
/// inside ±`min_effect` (when it is smaller).
pub fn rounds_to_settle(e: &Effect, min_effect: f64) -> Option<usize> {
    let n = e.n_a.min(e.n_b) as f64;
    let half = (e.ci_high.ln() - e.ci_low.ln()) / 2.0;
    let point = e.ratio.ln().abs();
    let bound = (1.0 + min_effect).ln();
    let target = if e.change().abs() >= min_effect {
        point
    } else {
        bound - point
    };
    if half <= 0.0 {
        return Some(1);
    }
    if target <= 0.0 {
        return None;
    }
    let need = (n * (half / target).powi(2)).ceil();
    let more = (need - n).max(1.0);
    (more <= MAX_SETTLE as f64).then_some(more as usize)
}

/// The verdict (see the module documentation for the rules).
pub fn judge(input: &Input<'_>) -> Verdict {
    let (a, discounted_a) = samples(input.expect, input.a);
    let (b, discounted_b) = samples(input.expect, input.b);
    let alpha = ALPHA / input.looks.max(1) as f64;
    let effect = effect_at(input.expect, &a, &b, input.seed, alpha);
    let (also_moved, also_judged) = also_moved(input, alpha);
    let changed_tasks: Vec<TaskChange> = input
        .tasks
        .iter()
        .filter(|t| !t.same_output || t.outcome_a != t.outcome_b)
        .cloned()
        .collect();
    let drifted = input.tasks.iter().filter(|t| !t.same_output).count();
    let quality_dropped = match (input.pass_rate_a, input.pass_rate_b) {
        (Some(qa), Some(qb)) => qb + 1e-9 < qa,
        _ => false,
    };
    let (decision, reason, more_rounds) = decide(input, effect.as_ref(), drifted, quality_dropped);
    Verdict {
        decision,
        reason,
        effect,
        also_moved,
        changed_tasks,
        discounted_a,
        discounted_b,
        more_rounds,
        looks: input.looks.max(1),
        look: input.look.max(1),
        also_judged,
    }
}

/// The other metrics that moved: each measured one is a hypothesis of the family, Holm-corrected
/// at `alpha` (only `--expect` was declared in advance), and a kept one must also have its
/// interval exclude no change by more than its noise and `min_effect`. Returns them and the
/// family's size.
fn also_moved(input: &Input<'_>, alpha: f64) -> (Vec<Effect>, usize) {
    let all: Vec<Effect> = Metric::ALL
        .iter()
        .filter(|m| **m != input.expect)
        .filter_map(|&m| {
            let (a, _) = samples(m, input.a);
            let (b, _) = samples(m, input.b);
            effect_at(m, &a, &b, input.seed, alpha)
        })
        .collect();
    let p: Vec<f64> = all.iter().map(|e| e.p_value).collect();
    let kept = crate::measure::stats::holm(&p, alpha);
    let n = all.len();
    let moved = all
        .into_iter()
        .zip(kept)
        .filter(|(e, k)| {
            *k && e.significant() && e.change().abs() > e.noise().max(input.min_effect)
        })
        .map(|(e, _)| e)
        .collect();
    (moved, n)
}

fn decide(
    input: &Input<'_>,
    effect: Option<&Effect>,
    drifted: usize,
    quality_dropped: bool,
) -> (Decision, String, Option<usize>) {
    use Decision::*;
    let m = input.expect.label();
    if quality_dropped {
        let (qa, qb) = (
            input.pass_rate_a.unwrap_or(0.0),
            input.pass_rate_b.unwrap_or(0.0),
        );
        let why = format!(
            "quality dropped: pass rate {:.0} % in A, {:.0} % in B",
            qa * 100.0,
            qb * 100.0
        );
        return (Revert, why, None);
    }
    if drifted > 0 && input.drift_allowed.is_none() {
        let why = format!(
            "greedy outputs drifted on {drifted} task(s) where the variable should not change them"
        );
        return (Revert, why, None);
    }
    let Some(e) = effect else {
        let why = format!(
            "{m} was not measured in at least 2 rounds of each arm; run more rounds (--rounds)"
        );
        return (Retest, why, None);
    };
    let n = e.n_a.min(e.n_b);
    if n < DECIDE_ROUNDS {
        let why = format!(
            "{m}: only {n} round(s) per arm; a speed verdict needs at least {DECIDE_ROUNDS} (--rounds {DECIDE_ROUNDS})"
        );
        return (Retest, why, Some(DECIDE_ROUNDS - n));
    }
    let big = e.change().abs() >= input.min_effect.max(NOISE_GATE * e.noise());
    let settle = rounds_to_settle(e, input.min_effect);
    let settle_text = match settle {
        Some(n) => format!("about {n} more round(s) per arm would likely settle it"),
        None => format!("too noisy to settle in {MAX_SETTLE} more rounds here"),
    };
    if e.significant() && big && e.b_better() {
        if drifted > 0 {
            let why = format!(
                "B is better on {m} ({}), but greedy outputs changed on {drifted} task(s) ({}): judge the changed answers before keeping it",
                pct(e.change()),
                input.drift_allowed.as_deref().unwrap_or("allowed")
            );
            return (Retest, why, None);
        }
        let why = format!(
            "B is better on {m} by {} (interval {} to {}), beyond the noise and --min-effect {}",
            pct(e.change()),
            pct(e.ci_low - 1.0),
            pct(e.ci_high - 1.0),
            pct(input.min_effect)
        );
        return (Keep, why, None);
    }
    if e.significant() && big {
        let why = format!(
            "B is worse on {m} by {} (interval {} to {})",
            pct(e.change()),
            pct(e.ci_low - 1.0),
            pct(e.ci_high - 1.0)
        );
        return (Revert, why, None);
    }
    let inside = e.ci_low - 1.0 > -input.min_effect && e.ci_high - 1.0 < input.min_effect;
    if inside {
        let why = format!(
            "no difference on {m} beyond ±{}: the interval {} to {} is inside it",
            pct_bare(input.min_effect).trim_start_matches('+'),
            pct(e.ci_low - 1.0),
            pct(e.ci_high - 1.0)
        );
        return (Retest, why + " (the change does not matter here)", None);
    }
    let why = format!(
        "{m} {} is inside the noise (interval {} to {}, spread A {:.1} %, B {:.1} %); {settle_text}",
        pct(e.change()),
        pct(e.ci_low - 1.0),
        pct(e.ci_high - 1.0),
        e.noise_a * 100.0,
        e.noise_b * 100.0
    );
    (Retest, why, settle)
}

#[cfg(test)]
#[path = "ab_tests.rs"]
mod tests;
