//! The speculative decoding settings of a run: `--spec`, `--spec-k`, `--lookup-ngram`, parsed
//! and validated here, embedded in the record; the drafters themselves live in the `spec` module.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Default `--spec-k`: tokens proposed per sequence per step.
pub const DEFAULT_K: usize = 4;

/// Which drafter proposes tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
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
}

impl SpecMethod {
    /// Parses `--spec`: `none` or `lookup`. The other drafters the design names (`draft:MODEL`,
    /// `layerskip:L`, `mtp`) are refused with a message saying they are not available.
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        let t = s.trim();
        let (name, arg) = t.split_once(':').unwrap_or((t, ""));
        match name {
            "none" => Ok(Self::None),
            "lookup" => Ok(Self::Lookup),
            "layerskip" => match arg.parse::<usize>() {
                Ok(layers) if layers > 0 => Ok(Self::LayerSkip { layers }),
                _ => Err(ConfigError::flag(
                    "--spec",
                    s,
                    "layerskip needs a layer count of at least 1, e.g. --spec layerskip:8",
                )),
            },
            "draft" | "mtp" => Err(ConfigError::flag(
                "--spec",
                s,
                "this drafter is not available in this build; use --spec lookup, --spec layerskip:L or --spec none",
            )),
            _ => Err(ConfigError::flag(
                "--spec",
                s,
                "unknown drafter; expected none, lookup or layerskip:L",
            )),
        }
    }

    /// The flag value, as `--spec` takes it.
    pub fn label(&self) -> String {
        match self {
            Self::None => "none".into(),
            Self::Lookup => "lookup".into(),
            Self::LayerSkip { layers } => format!("layerskip:{layers}"),
        }
    }
}

/// The speculation settings of a run (`--spec`, `--spec-k`, `--lookup-ngram`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecConfig {
    pub method: SpecMethod,
    /// Most tokens proposed per sequence per step.
    pub k: usize,
    /// Shortest and longest n-gram prompt lookup matches (inclusive).
    pub ngram: (usize, usize),
}

impl Default for SpecConfig {
    fn default() -> Self {
        Self {
            method: SpecMethod::None,
            k: DEFAULT_K,
            ngram: (1, 3),
        }
    }
}

impl SpecConfig {
    /// Checks `--spec-k` and `--lookup-ngram`; greedy decoding is required for speculation.
    pub fn validate(&self, temperature: f64) -> Result<(), ConfigError> {
        if self.k == 0 {
            return Err(ConfigError::flag(
                "--spec-k",
                "0",
                "propose at least 1 token per step, e.g. --spec-k 4 (or --spec none)",
            ));
        }
        let (lo, hi) = self.ngram;
        if lo == 0 || hi < lo {
            return Err(ConfigError::flag(
                "--lookup-ngram",
                format!("{lo}..{hi}"),
                "expected MIN..MAX with 1 <= MIN <= MAX, e.g. 1..3",
            ));
        }
        if self.method != SpecMethod::None && temperature > 0.0 {
            return Err(ConfigError::flag(
                "--spec",
                self.method.label(),
                "speculation is exact for greedy decoding only; use --temperature 0 or --spec none",
            ));
        }
        Ok(())
    }
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
