//! The validated, serialisable configuration of a `run` or `sweep`: everything that decides what
//! is measured, embedded whole in every record. Built from clap arguments by `cmd`; levels of a
//! sweep share every field but `jobs`, which is what makes them comparable.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::{ModelConfig, RuntimeConfig, SamplingConfig};
use crate::error::ConfigError;

/// Most jobs in one level.
pub(crate) const MAX_JOBS: usize = 4096;
/// Most measured (or warm-up) rounds per level.
pub(crate) const MAX_ROUNDS: usize = 100_000;

/// Rounds below this need `--allow-few-rounds`.
pub(crate) const MIN_ROUNDS: usize = 3;

/// The KV-cache budget: tokens, or bytes converted with the model's bytes per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvBudget {
    Tokens(usize),
    Bytes(u64),
}

impl KvBudget {
    /// Parses `4096` (tokens) or a byte size with a unit: `64MiB`, `1GiB`, `500MB`, `2048KiB`.
    pub(crate) fn parse(s: &str) -> Result<Self, ConfigError> {
        Self::parse_for("--kv-budget", s)
    }

    /// [`KvBudget::parse`] for the flag named `flag`.
    pub(crate) fn parse_for(flag: &str, s: &str) -> Result<Self, ConfigError> {
        let bad = || ConfigError::Flag {
            flag: flag.into(),
            value: s.into(),
            reason: "expected tokens (e.g. 8192) or bytes with a unit (e.g. 256MiB, 1GB)".into(),
        };
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num.parse().map_err(|_| bad())?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" => return usize::try_from(n).map(Self::Tokens).map_err(|_| bad()),
            "b" => 1,
            "kb" => 1_000,
            "kib" => 1 << 10,
            "mb" => 1_000_000,
            "mib" => 1 << 20,
            "gb" => 1_000_000_000,
            "gib" => 1 << 30,
            _ => return Err(bad()),
        };
        n.checked_mul(mult).map(Self::Bytes).ok_or_else(bad)
    }

    /// The budget in tokens for a model whose KV costs `bytes_per_token`.
    pub(crate) fn tokens(&self, bytes_per_token: u64) -> usize {
        match *self {
            Self::Tokens(t) => t,
            Self::Bytes(b) => (b / bytes_per_token.max(1)) as usize,
        }
    }
}

/// How results are printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Text,
    /// The summary and provenance, without raw samples.
    Json,
    /// The whole record of the run, raw samples included.
    #[serde(rename = "json-full")]
    JsonFull,
    Md,
    Csv,
}

/// A switch given as `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    #[default]
    Off,
    On,
}

impl OnOff {
    pub fn is_on(self) -> bool {
        self == Self::On
    }
}

/// `--max-seqs` when not given.
pub const DEFAULT_MAX_SEQS: usize = 8;
/// `--max-batch-tokens` when not given.
pub const DEFAULT_MAX_BATCH_TOKENS: usize = 512;
/// `--prefill-chunk` when not given.
pub const DEFAULT_PREFILL_CHUNK: usize = 256;
/// `--kv-budget` when not given, in tokens.
pub const DEFAULT_KV_BUDGET_TOKENS: usize = 16384;

/// Engine budgets as the user set them (the KV budget is resolved against the model at load).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// Most sequences in one step.
    pub max_seqs: usize,
    /// Most tokens in one step.
    pub max_batch_tokens: usize,
    /// Longest prefill chunk of one sequence in one step.
    pub prefill_chunk: usize,
    pub kv_budget: KvBudget,
    /// How a step is shared between decodes and prefill (`fifo` in older records).
    #[serde(default)]
    pub schedule: crate::config::schedule::Schedule,
    /// `--prefix-cache`: new sequences copy the KV rows of a cached prompt prefix (off in older
    /// records).
    #[serde(default)]
    pub prefix_cache: OnOff,
    /// `--prefix-cache-budget`: the prefix cache's part of the KV budget (none: a quarter of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_budget: Option<KvBudget>,
}

impl Default for EngineSettings {
    /// The flags' defaults: what `run` uses when no budget is given.
    fn default() -> Self {
        Self {
            max_seqs: DEFAULT_MAX_SEQS,
            max_batch_tokens: DEFAULT_MAX_BATCH_TOKENS,
            prefill_chunk: DEFAULT_PREFILL_CHUNK,
            kv_budget: KvBudget::Tokens(DEFAULT_KV_BUDGET_TOKENS),
            schedule: Default::default(),
            prefix_cache: Default::default(),
            prefix_cache_budget: None,
        }
    }
}

/// A whole `run` / `sweep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// `run` or `sweep`.
    pub verb: String,
    pub model: ModelConfig,
    pub runtime: RuntimeConfig,
    /// Workload name or file, as given.
    pub workload: String,
    /// Concurrency levels, in order.
    pub jobs: Vec<usize>,
    /// Measured rounds per level.
    pub rounds: usize,
    /// Warm-up rounds per level (excluded from statistics).
    pub warmup_rounds: usize,
    pub sampling: SamplingConfig,
    pub engine: EngineSettings,
    /// Caps every task's output limit (none = each task's own).
    pub max_tokens: Option<usize>,
    /// Results file the record is appended to.
    pub out: PathBuf,
    pub format: Format,
    /// Chrome trace of the whole run.
    pub trace: Option<PathBuf>,
    /// Smallest margin (fraction of a target) a comfortable level should keep.
    #[serde(default = "default_headroom")]
    pub headroom: f64,
    /// What the user noted (`--note`, repeatable), stored with the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Speculative decoding (`--spec none` in older records).
    #[serde(default)]
    pub spec: crate::config::spec::SpecConfig,
    /// Think time and stagger of the jobs (`--think`, `--think-jitter`, `--stagger`; lockstep
    /// in older records).
    #[serde(
        default,
        skip_serializing_if = "crate::config::think::ThinkConfig::is_lockstep"
    )]
    pub think: crate::config::think::ThinkConfig,
    /// Before each measured round, wait up to this long for the machine to be quiet
    /// (`--quiet-wait`; 0: do not wait).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub quiet_wait_s: f64,
}

/// An output file `flag` names: its folder exists and the path is not a special file, checked
/// before any work (a trace is first written after round 1).
pub(crate) fn check_output(flag: &str, path: &std::path::Path) -> Result<(), ConfigError> {
    let bad = |reason: String| ConfigError::flag(flag, path.display().to_string(), reason);
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = folder.filter(|d| !d.is_dir()) {
        return Err(bad(format!(
            "its folder {} does not exist; create it or pick another path",
            dir.display()
        )));
    }
    crate::files::check_writable(path).map_err(|e| bad(e.to_string()))
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// Longest `--quiet-wait` accepted, seconds.
pub(crate) const MAX_QUIET_WAIT_S: f64 = 3600.0;

/// Default `--headroom`: a comfortable level should stay 20 % inside every target.
pub(crate) const DEFAULT_HEADROOM: f64 = 0.2;

fn default_headroom() -> f64 {
    DEFAULT_HEADROOM
}

impl RunConfig {
    /// Checks ranges; names the flag at fault. Returns warnings the user insisted past.
    pub(crate) fn validate(&self, allow_few_rounds: bool) -> Result<Vec<String>, ConfigError> {
        self.sampling.validate()?;
        self.spec.validate(self.sampling.temperature)?;
        if self.engine.prefix_cache.is_on()
            && self.spec.method == crate::config::spec::SpecMethod::Mtp
        {
            return Err(ConfigError::flag(
                "--prefix-cache",
                "on",
                "--spec mtp drafts from the target's hidden state of every prompt token, which a reused prefix never computes; use --prefix-cache off with --spec mtp, or another --spec",
            ));
        }
        if let Some(t) = &self.trace {
            check_output("--trace", t)?;
        }
        if !(0.0..=MAX_QUIET_WAIT_S).contains(&self.quiet_wait_s) {
            return Err(ConfigError::flag(
                "--quiet-wait",
                self.quiet_wait_s.to_string(),
                format!("seconds from 0 to {MAX_QUIET_WAIT_S}, e.g. 30"),
            ));
        }
        if !(0.0..1.0).contains(&self.headroom) {
            return Err(ConfigError::flag(
                "--headroom",
                self.headroom.to_string(),
                "a fraction of each target from 0 to below 1, e.g. 0.2 for 20 %",
            ));
        }
        let mut warnings = Vec::new();
        if self.jobs.is_empty() || self.jobs.contains(&0) {
            let v = self
                .jobs
                .iter()
                .map(|j| j.to_string())
                .collect::<Vec<_>>()
                .join(",");
            return Err(ConfigError::flag(
                "--jobs",
                v,
                "every level needs at least 1 job, e.g. --jobs 1,2,3",
            ));
        }
        if let Some(&j) = self.jobs.iter().find(|&&j| j > MAX_JOBS) {
            return Err(ConfigError::flag(
                "--jobs",
                j.to_string(),
                format!("at most {MAX_JOBS} jobs per level: each is a client of one engine here"),
            ));
        }
        if self.rounds > MAX_ROUNDS || self.warmup_rounds > MAX_ROUNDS {
            let (flag, n) = match self.rounds > MAX_ROUNDS {
                true => ("--rounds", self.rounds),
                false => ("--warmup", self.warmup_rounds),
            };
            return Err(ConfigError::flag(
                flag,
                n.to_string(),
                format!("at most {MAX_ROUNDS} rounds per level"),
            ));
        }
        if self.rounds == 0 {
            return Err(ConfigError::flag(
                "--rounds",
                "0",
                "at least 1 measured round is needed (3 or more for a median)",
            ));
        }
        if self.rounds < MIN_ROUNDS {
            if !allow_few_rounds {
                return Err(ConfigError::flag(
                    "--rounds",
                    self.rounds.to_string(),
                    "fewer than 3 rounds give no trustworthy median; use 3 or more, or add --allow-few-rounds",
                ));
            }
            warnings.push(format!(
                "only {} measured round(s) per level: medians and spreads are not trustworthy",
                self.rounds
            ));
        }
        let e = &self.engine;
        for (name, v) in [
            ("--max-seqs", e.max_seqs),
            ("--max-batch-tokens", e.max_batch_tokens),
            ("--prefill-chunk", e.prefill_chunk),
        ] {
            if v == 0 {
                return Err(ConfigError::flag(name, "0", "must be at least 1"));
            }
        }
        if self.max_tokens == Some(0) {
            return Err(ConfigError::flag("--max-tokens", "0", "must be at least 1"));
        }
        let most = self.jobs.iter().copied().max().unwrap_or(1);
        if e.max_seqs < most {
            warnings.push(format!(
                "--max-seqs {} is below the {most} jobs of the largest level: jobs will queue",
                e.max_seqs
            ));
        }
        Ok(warnings)
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
