//! The validated, serialisable settings a command runs with (the second stage after clap), and the
//! one place the environment is read (`TOKFIRE_CACHE`, `HF_HOME`, through clap or here).

use std::path::PathBuf;

use candle_core::Device;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

pub mod run;
pub mod schedule;
pub mod spec;
pub mod think;
use crate::kernels::{self, Level};

/// How weights are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum WeightDType {
    /// Keep the file's quantization (GGUF blocks); dense files keep their dtype.
    #[default]
    Q,
    /// Dequantize every matrix to dense f32.
    F32,
    /// Dequantize every matrix to dense f16 (activations stay f32).
    F16,
    /// Dequantize every matrix to dense bf16 (activations stay f32).
    Bf16,
}

impl WeightDType {
    /// The flag's spelling: `q`, `f32`, `f16` or `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            WeightDType::Q => "q",
            WeightDType::F32 => "f32",
            WeightDType::F16 => "f16",
            WeightDType::Bf16 => "bf16",
        }
    }
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceSpec {
    Cpu,
    Cuda(usize),
    Metal,
}

impl DeviceSpec {
    /// Parses `cpu`, `cuda`, `cuda:N` or `metal`.
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let bad = |reason: &str| ConfigError::Device {
            spec: spec.to_string(),
            reason: reason.into(),
        };
        match spec.split_once(':') {
            None if spec == "cpu" => Ok(Self::Cpu),
            None if spec == "cuda" => Ok(Self::Cuda(0)),
            None if spec == "metal" => Ok(Self::Metal),
            Some(("cuda", n)) => n
                .parse()
                .map(Self::Cuda)
                .map_err(|_| bad("the ordinal after cuda: must be a number, e.g. cuda:0")),
            _ => Err(bad("expected cpu, cuda, cuda:N or metal")),
        }
    }

    /// Refuses a device this build cannot open at all (its cargo feature is missing), so the
    /// error comes before anything is recorded, evicted or started.
    pub(crate) fn check_built(&self) -> Result<(), ConfigError> {
        let missing = |device: &str, feature: &str| ConfigError::FeatureMissing {
            device: device.into(),
            feature: feature.into(),
        };
        match self {
            Self::Cpu => Ok(()),
            Self::Cuda(_) if !candle_core::utils::cuda_is_available() => {
                Err(missing("cuda", "cuda"))
            }
            Self::Metal if !candle_core::utils::metal_is_available() => {
                Err(missing("metal", "metal"))
            }
            _ => Ok(()),
        }
    }

    /// Opens the device, or says which cargo feature this build lacks.
    pub(crate) fn open(&self) -> Result<Device, ConfigError> {
        let missing = |device: &str, feature: &str| ConfigError::FeatureMissing {
            device: device.into(),
            feature: feature.into(),
        };
        let failed = |e: candle_core::Error| ConfigError::Device {
            spec: self.to_string(),
            reason: e.to_string(),
        };
        match *self {
            Self::Cpu => Ok(Device::Cpu),
            Self::Cuda(n) => {
                if !candle_core::utils::cuda_is_available() {
                    return Err(missing("cuda", "cuda"));
                }
                Device::new_cuda(n).map_err(failed)
            }
            Self::Metal => {
                if !candle_core::utils::metal_is_available() {
                    return Err(missing("metal", "metal"));
                }
                Device::new_metal(0).map_err(failed)
            }
        }
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cpu => write!(f, "cpu"),
            Self::Cuda(n) => write!(f, "cuda:{n}"),
            Self::Metal => write!(f, "metal"),
        }
    }
}

/// `--threads` beyond this many per logical CPU is refused.
const MAX_THREADS_PER_CORE: usize = 8;

/// How the CPU computes: thread count and kernel level (the same for every level of a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RuntimeConfig {
    /// Compute threads (none = candle's default, the physical cores).
    pub threads: Option<usize>,
    /// Kernel level forced with `--kernels` (none = the best this CPU has).
    pub kernels: Option<Level>,
    /// `--kernels candle`: candle's own quantized matmuls and tensor ops instead of ours, the
    /// device-generic path a GPU runs (absent in records before it existed: false).
    #[serde(default)]
    pub candle: bool,
}

impl RuntimeConfig {
    /// From `--threads` and `--kernels auto|scalar|avx2|avx512-vnni|candle`.
    pub(crate) fn parse(threads: Option<usize>, kernels: &str) -> Result<Self, ConfigError> {
        if threads == Some(0) {
            let why = "must be at least 1 (leave it out for all cores)";
            return Err(ConfigError::flag("--threads", "0", why));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some(n) = threads.filter(|n| *n > MAX_THREADS_PER_CORE * cores) {
            let why = format!(
                "at most {MAX_THREADS_PER_CORE} per logical CPU ({} here); more only measures the OS scheduler",
                MAX_THREADS_PER_CORE * cores
            );
            return Err(ConfigError::flag("--threads", n.to_string(), why));
        }
        let candle = kernels == "candle";
        let kernels = match kernels {
            "auto" | "candle" => None,
            s => Some(
                s.parse::<Level>()
                    .map_err(|e| ConfigError::flag("--kernels", s, e))?,
            ),
        };
        if let Some(level) = kernels.filter(|l| !l.available()) {
            let why = format!(
                "this CPU does not support it (best available: {}); pick that or leave --kernels auto",
                kernels::detect()
            );
            return Err(ConfigError::flag("--kernels", level.to_string(), why));
        }
        Ok(Self {
            threads,
            kernels,
            candle,
        })
    }

    /// `--kernels` as typed: `auto`, the forced level or `candle`.
    pub(crate) fn kernels_flag(&self) -> String {
        match self.candle {
            true => "candle".into(),
            false => self.kernels.map_or("auto".into(), |l| l.to_string()),
        }
    }

    /// Which code runs the model's matmuls and attention: ours on the CPU, unless `--kernels
    /// candle` asks for candle's (what a GPU runs).
    pub(crate) fn matmuls(&self) -> Kernels {
        match self.candle {
            true => Kernels::Candle,
            false => Kernels::Ours,
        }
    }
}

/// Whose code runs a model's matmuls and attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// Ours on the CPU (quantized matmuls, attention on slices); candle's on other devices.
    Ours,
    /// Candle's quantized matmuls and tensor ops on every device: the device-generic path a
    /// GPU runs, on the CPU too (`--kernels candle`).
    Candle,
}

impl Kernels {
    /// Whether ours run on `device`.
    pub(crate) fn ours(self, device: &candle_core::Device) -> bool {
        self == Kernels::Ours && device.is_cpu()
    }
}

/// What the engine ran with, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// `cpu`, `cuda:N` or `metal`.
    pub device: String,
    /// Quantized-matmul kernels: ours with their SIMD level on the CPU, else candle's.
    pub kernels: String,
    /// Compute threads of the pool.
    pub threads: usize,
    /// How the kernel level was chosen: measured on this CPU (the probe's times), or the
    /// `--kernels` flag; empty for candle's kernels and in records before it existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub level_by: String,
}

impl std::fmt::Display for RuntimeInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} · {} · {}",
            self.device,
            self.kernels,
            crate::fmt::plural(self.threads, "thread")
        )
    }
}

/// Which model to load and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// What the user passed to `--model`: manifest name, path or `hf:REPO[:FILE]`.
    pub model: String,
    /// Cache of fetched manifest models.
    pub cache_dir: PathBuf,
    /// Hugging Face hub cache used for `hf:` models.
    pub hf_cache_dir: PathBuf,
    pub dtype: WeightDType,
    pub device: DeviceSpec,
    /// A Jinja chat template file used instead of the model's own (`--chat-template`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<PathBuf>,
    /// How a GGUF's weight bytes are brought in (records without it loaded by copying).
    #[serde(default = "LoadMode::recorded_default")]
    pub load: LoadMode,
    /// Whether our kernels' quantized matrices are repacked into 8-row tiles at load (records
    /// without it ran GGUF rows).
    #[serde(default = "Repack::recorded_default")]
    pub repack: Repack,
}

impl ModelConfig {
    /// What `--model` named, with the dtype when the weights were converted (`MODEL (dtype
    /// f16)`): reports name the weights that ran, not only the file.
    pub fn label(&self) -> String {
        match self.dtype {
            WeightDType::Q => self.model.clone(),
            d => format!("{} (dtype {})", self.model, d.name()),
        }
    }
}

/// The default cache for manifest models: `~/.cache/tokfire/models`.
pub fn default_cache_dir() -> PathBuf {
    home_dir().join(".cache").join("tokfire").join("models")
}

/// Where the measured kernel choice is kept: `kernel-choice.json` in `$TOKFIRE_CACHE` when it is
/// set, else in `~/.cache/tokfire` (one machine, one file; see `bench::kernel_choice`).
pub fn kernel_choice_path() -> PathBuf {
    let dir = match std::env::var_os("TOKFIRE_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => home_dir().join(".cache").join("tokfire"),
    };
    dir.join("kernel-choice.json")
}

/// The hub cache hf-hub uses: `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
pub(crate) fn default_hf_cache_dir() -> PathBuf {
    match std::env::var_os("HF_HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home).join("hub"),
        _ => home_dir().join(".cache").join("huggingface").join("hub"),
    }
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Sampling settings; greedy when `temperature` is 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingConfig {
    /// 0 means greedy (argmax); benchmarks default to it so runs are reproducible.
    pub temperature: f64,
    /// Keep only the k most likely tokens (0 = off).
    pub top_k: usize,
    /// Keep the smallest set of tokens whose probability reaches p (1.0 = off).
    pub top_p: f64,
    /// Seed of the sampler's RNG.
    pub seed: u64,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 42,
        }
    }
}

impl SamplingConfig {
    /// Checks ranges; names the flag at fault.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(ConfigError::flag(
                "--temperature",
                self.temperature.to_string(),
                "must be 0 (greedy) or a positive number",
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(ConfigError::flag(
                "--top-p",
                self.top_p.to_string(),
                "must be in (0, 1]",
            ));
        }
        Ok(())
    }
}

/// How a GGUF's quantized weights get into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum LoadMode {
    /// Map the file; quantized matrices our kernels run borrow its pages (no copy).
    #[default]
    Mmap,
    /// Read every tensor into our own memory.
    Copy,
}

impl LoadMode {
    /// What a record written before this setting existed used.
    fn recorded_default() -> Self {
        Self::Copy
    }
}

/// Whether quantized matrices are repacked into row-interleaved tiles at load
/// ([`crate::kernels::QMatrix::repacked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum Repack {
    /// Repack every matrix our CPU kernels run whose block type has a tile kernel; nothing
    /// under candle's kernels or on a GPU.
    #[default]
    Auto,
    /// As auto, and refuse a run where our CPU kernels do not run the model.
    On,
    /// Keep every matrix in the file's row layout.
    Off,
}

impl Repack {
    /// What a record written before this setting existed used.
    fn recorded_default() -> Self {
        Self::Off
    }

    /// Whether to repack when our kernels run the model (`ours`); `on` without them is an
    /// error naming the flag.
    pub(crate) fn wanted(self, ours: bool) -> Result<bool, ConfigError> {
        match (self, ours) {
            (Self::Off, _) => Ok(false),
            (_, true) => Ok(true),
            (Self::Auto, false) => Ok(false),
            (Self::On, false) => Err(ConfigError::flag(
                "--repack",
                "on",
                "tiles are for our CPU kernels; candle's (--kernels candle, a GPU) keep the \
                 file's layout: use auto or off",
            )),
        }
    }
}

impl std::fmt::Display for Repack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        })
    }
}

impl std::fmt::Display for LoadMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Mmap => "mmap",
            Self::Copy => "copy",
        })
    }
}
