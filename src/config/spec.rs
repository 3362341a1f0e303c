//! The speculative decoding settings of a run: `--spec`, `--spec-k`, `--lookup-ngram`, parsed
//! and validated here, embedded in the record; the drafters themselves live in the `spec` module.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Default `--spec-k`: tokens proposed per sequence per step.
pub const DEFAULT_K: usize = 4;

/// Which drafter proposes tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SpecMethod {
    /// No speculation: one token per decode step.
    #[default]
    None,
    /// Prompt lookup: n-gram match of the latest tokens in the sequence's own prompt and output.
    Lookup,
    /// Layer-skip self-speculation: the target's first `layers` layers, final norm and head.
    #[serde(rename = "layerskip")]
    LayerSkip { layers: usize },
    /// A second model with the same vocabulary (anything `--model` accepts), its own KV caches.
    Draft { model: String },
    /// The checkpoint's own multi-token-prediction (`nextn`) layers.
    Mtp,
    /// Synthetic acceptance: proposes the greedy output itself (from a reference pass) and
    /// spoils draft position i with probability 1 − `rates[i]` (the last rate repeats), so the
    /// verify forwards are real and the acceptance is the one asked for.
    Synthetic { rates: Vec<f64> },
}

/// Most per-position rates `--spec synthetic:` takes.
pub const MAX_SYNTHETIC_RATES: usize = 16;

impl SpecMethod {
    /// Parses `--spec`: `none`, `lookup`, `layerskip:L`, `draft:MODEL`, `mtp` or
    /// `synthetic:RATE[,RATE…]`.
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        let t = s.trim();
        let (name, arg) = t.split_once(':').unwrap_or((t, ""));
        match name {
            "none" if !t.contains(':') => Ok(Self::None),
            "lookup" if !t.contains(':') => Ok(Self::Lookup),
            "mtp" if !t.contains(':') => Ok(Self::Mtp),
            "none" | "lookup" | "mtp" => Err(ConfigError::flag(
                "--spec",
                s,
                format!("{name} takes no value after ':'; write --spec {name}"),
            )),
            "layerskip" => match arg.parse::<usize>() {
                Ok(layers) if layers > 0 => Ok(Self::LayerSkip { layers }),
                _ => Err(ConfigError::flag(
                    "--spec",
                    s,
                    "layerskip needs a layer count of at least 1, e.g. --spec layerskip:8",
                )),
            },
            "draft" if !arg.trim().is_empty() => Ok(Self::Draft {
                model: arg.trim().to_string(),
            }),
            "draft" => Err(ConfigError::flag(
                "--spec",
                s,
                "draft needs a model (anything --model accepts), e.g. --spec draft:smollm2-135m-instruct-q4_1",
            )),
            "synthetic" => parse_rates(arg)
                .map(|rates| Self::Synthetic { rates })
                .ok_or_else(|| {
                    ConfigError::flag(
                        "--spec",
                        s,
                        format!(
                            "synthetic needs 1 to {MAX_SYNTHETIC_RATES} acceptance rates in 0..1 \
                             separated by commas, e.g. --spec synthetic:0.8 or synthetic:0.9,0.7"
                        ),
                    )
                }),
            _ => Err(ConfigError::flag(
                "--spec",
                s,
                "unknown drafter; expected none, lookup, layerskip:L, draft:MODEL, mtp or \
                 synthetic:RATE",
            )),
        }
    }

    /// The flag value, as `--spec` takes it.
    pub fn label(&self) -> String {
        match self {
            Self::None => "none".into(),
            Self::Lookup => "lookup".into(),
            Self::LayerSkip { layers } => format!("layerskip:{layers}"),
            Self::Draft { model } => format!("draft:{model}"),
            Self::Mtp => "mtp".into(),
            Self::Synthetic { rates } => {
                let r: Vec<String> = rates.iter().map(|r| r.to_string()).collect();
                format!("synthetic:{}", r.join(","))
            }
        }
    }
}

/// The rates of `synthetic:R1,R2…`: each finite in 0..=1, 1 to [`MAX_SYNTHETIC_RATES`] of them.
fn parse_rates(arg: &str) -> Option<Vec<f64>> {
    let rates: Vec<f64> = arg
        .split(',')
        .map(|r| r.trim().parse::<f64>().ok())
        .collect::<Option<_>>()?;
    let ok = |r: &f64| r.is_finite() && (0.0..=1.0).contains(r);
    (!rates.is_empty() && rates.len() <= MAX_SYNTHETIC_RATES && rates.iter().all(ok))
        .then_some(rates)
}

/// The speculation settings of a run (`--spec`, `--spec-k`, `--lookup-ngram`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecConfig {
    pub method: SpecMethod,
    /// Most tokens proposed per sequence per step.
    pub k: usize,
    /// Shortest and longest n-gram prompt lookup matches (inclusive).
    pub ngram: (usize, usize),
    /// `--no-baseline`: skip the interleaved `--spec none` rounds (no speedup is measured).
    #[serde(default)]
    pub no_baseline: bool,
    /// `--draft-dtype`: how the `draft:MODEL` drafter's weights are held.
    #[serde(default)]
    pub draft_dtype: crate::config::WeightDType,
}

impl Default for SpecConfig {
    fn default() -> Self {
        Self {
            method: SpecMethod::None,
            k: DEFAULT_K,
            ngram: (1, 3),
            no_baseline: false,
            draft_dtype: Default::default(),
        }
    }
}

impl SpecConfig {
    /// Checks `--spec-k` and `--lookup-ngram` (any temperature: sampled decoding verifies by
    /// rejection sampling), and that synthetic acceptance runs greedy with no more rates than k.
    pub fn validate(&self, temperature: f64) -> Result<(), ConfigError> {
        if self.k == 0 {
            return Err(ConfigError::flag(
                "--spec-k",
                "0",
                "propose at least 1 token per step, e.g. --spec-k 4 (or --spec none)",
            ));
        }
        if let SpecMethod::Synthetic { rates } = &self.method {
            synthetic_fits(rates, self.k, temperature)?;
        }
        let (lo, hi) = self.ngram;
        if lo == 0 || hi < lo {
            return Err(ConfigError::flag(
                "--lookup-ngram",
                format!("{lo}..{hi}"),
                "expected MIN..MAX with 1 <= MIN <= MAX, e.g. 1..3",
            ));
        }
        Ok(())
    }

    /// Whether a run with these settings also runs the `--spec none` baseline.
    pub fn runs_baseline(&self) -> bool {
        self.method != SpecMethod::None && !self.no_baseline
    }
}

/// Synthetic acceptance proposes the greedy output, so it needs greedy decoding; a rate list
/// longer than `--spec-k` names positions that are never drafted.
fn synthetic_fits(rates: &[f64], k: usize, temperature: f64) -> Result<(), ConfigError> {
    let label = SpecMethod::Synthetic {
        rates: rates.to_vec(),
    }
    .label();
    if temperature > 0.0 {
        return Err(ConfigError::flag(
            "--spec",
            label,
            "synthetic acceptance drafts the greedy output, so it needs --temperature 0",
        ));
    }
    if rates.len() > k {
        return Err(ConfigError::flag(
            "--spec",
            label,
            format!(
                "{} per-position rates but --spec-k {k} drafts {k} positions; give at most {k} \
                 rates or raise --spec-k",
                rates.len()
            ),
        ));
    }
    Ok(())
}

/// Parses `--lookup-ngram MIN..MAX` (or a single `N`).
pub fn parse_ngram(s: &str) -> Result<(usize, usize), ConfigError> {
    let bad = || ConfigError::flag("--lookup-ngram", s, "expected MIN..MAX, e.g. 1..3");
    let (lo, hi) = match s.split_once("..") {
        Some((a, b)) => (a.trim().parse(), b.trim().parse()),
        None => (s.trim().parse(), s.trim().parse()),
    };
    let (lo, hi) = (lo.map_err(|_| bad())?, hi.map_err(|_| bad())?);
    if lo == 0 || hi < lo {
        return Err(bad());
    }
    Ok((lo, hi))
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
