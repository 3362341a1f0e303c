//! Command-line arguments (clap), turned into validated configs by [`crate::run`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::run::Format;
use crate::config::{SamplingConfig, WeightDType};

/// Name of the model used when `--model` is not given.
pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct-q4_1";

const CLOCKS: &str = "Clocks (stderr):
  load     open + read + build weights and tokenizer (fetching a missing model is not counted)
  warm-up  first decode step minus the median of the later steps (first use of a shape)
  prefill  prompt tokens through the model up to the first token (time to first token)
  decode   every later token, one forward + sample each; tok/s = tokens / summed step time";

const SHEET: &str =
    "Each job submits the workload's tasks one after another to the one shared engine.
Per level: warm-up round(s), then measured rounds; statistics use measured rounds only.
  TTFT         submission of a task -> its first output token (queue + prefill)
  completion   submission -> last token of the task (all turns for tool agents)
  TPOT         (completion - TTFT) / (output tokens - 1)
  job tok/s    a job's output tokens / (its last finish - its first submission), per round;
               'slowest job' is the smallest per-job median over rounds
  agg tok/s    all output tokens of a round / the round's wall window (median over rounds)
  done/tried   tasks that answered (pass or fail) / tasks started; fails = validation failures
  tail         p95 with >= 20 samples, else the slowest sample
  peak mem     VmHWM over the level (reset at its start)
Batching: decode steps by sequences carried (what the scheduler really did); decode-only step =
median forward time of steps without prompt tokens; prefill steps = wall share of steps that
carried prompt tokens (each stalls every running job's next token); harness = wall time outside
forward passes.
Clocks: load = open + read + build weights (page-cache state from mincore); kernel warm-up =
first pure-decode step minus the steady median of that shape; prefill = prompt -> first token
(prompt tok/s); decode = every later token (TPOT). The verdict checks each level against the
workload's declared acceptance criteria (your own targets).";

#[derive(Debug, Parser)]
#[command(
    name = "tokfire",
    version,
    about = "TokFire Bench: load a model in-process and measure what a person waits for"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate text from one prompt and show the four clocks of that call.
    #[command(after_long_help = CLOCKS)]
    Generate(GenerateArgs),
    /// Describe a model file: architecture, quantization, shape, tokenizer, chat template.
    Inspect(InspectArgs),
    /// One configuration, one workload, N concurrent jobs: warm-up and measured rounds, results sheet.
    #[command(after_long_help = SHEET)]
    Run(RunArgs),
    /// The same workload at 1, 2 and 3 concurrent jobs (identical settings), sheet and verdict.
    #[command(after_long_help = SHEET)]
    Sweep(SweepArgs),
    /// Two configurations differing in one variable, interleaved (not yet available).
    Ab(Pending),
    /// Cold starts in fresh processes (not yet available).
    Cold(Pending),
    /// A scripted session with idle gaps and model swaps (not yet available).
    Session(Pending),
    /// Compare two saved result files (not yet available).
    Compare(Pending),
    /// Re-render saved results (not yet available).
    Report(Pending),
}

/// Arguments of verbs that are not built yet; accepted so the verb can say so.
#[derive(Debug, Args)]
pub struct Pending {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

/// Which model, on what, stored how.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Manifest name (fetched on first use), a .gguf file, a safetensors directory, or hf:REPO[:FILE].
    #[arg(long, short = 'm', default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Cache of fetched models [default: ~/.cache/tokfire/models].
    #[arg(long, env = "TOKFIRE_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// Weight storage: q keeps the file's quantization; f32/f16/bf16 dequantize to dense.
    #[arg(long, value_enum, default_value_t = WeightDType::Q)]
    pub dtype: WeightDType,
    /// cpu, cuda, cuda:N or metal.
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

/// How the CPU computes.
#[derive(Debug, Clone, Args)]
pub struct RuntimeArgs {
    /// Compute threads, one pool for the whole run [default: the physical cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Quantized-matmul kernels on the CPU: auto (the best this CPU has), scalar, avx2 or
    /// avx512-vnni.
    #[arg(long, default_value = "auto")]
    pub kernels: String,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Raw prompt text, fed as is (no chat template).
    #[arg(long, short = 'p', conflicts_with = "chat")]
    pub prompt: Option<String>,
    /// A user message, wrapped in the model's chat template.
    #[arg(long)]
    pub chat: Option<String>,
    /// System message for --chat.
    #[arg(long, requires = "chat")]
    pub system: Option<String>,
    /// Most tokens to generate.
    #[arg(short = 'n', long = "max-tokens", default_value_t = 64)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Print the generated token ids too.
    #[arg(long)]
    pub ids: bool,
}

/// How tokens are chosen.
#[derive(Debug, Clone, Args)]
pub struct SamplingArgs {
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Keep only the k most likely tokens (0 = off).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Nucleus sampling threshold (1 = off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f64,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

impl SamplingArgs {
    pub fn config(&self) -> SamplingConfig {
        SamplingConfig {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            seed: self.seed,
        }
    }
}

/// What `run` and `sweep` share.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Workload: a built-in name (chat, code, extract, agent) or a workload .toml file.
    #[arg(long, short = 'w', default_value = "chat")]
    pub workload: String,
    /// Measured rounds per level (at least 3 for a median).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Warm-up rounds per level, kept apart from the statistics.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Accept fewer than 3 measured rounds (with a warning).
    #[arg(long)]
    pub allow_few_rounds: bool,
    /// Most sequences the engine runs in one step (slots).
    #[arg(long, default_value_t = 8)]
    pub max_seqs: usize,
    /// Most tokens (prefill + decode) in one engine step.
    #[arg(long, default_value_t = 512)]
    pub max_batch_tokens: usize,
    /// Longest prefill chunk of one sequence in one step.
    #[arg(long, default_value_t = 256)]
    pub prefill_chunk: usize,
    /// KV-cache budget: tokens (e.g. 16384) or bytes with a unit (e.g. 256MiB).
    #[arg(long, default_value = "16384")]
    pub kv_budget: String,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Cap every task's output limit at N tokens.
    #[arg(long, short = 'n')]
    pub max_tokens: Option<usize>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Results file the run is appended to [default: results/VERB-WORKLOAD.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write a Chrome trace (chrome://tracing, Perfetto) of the whole run: rounds, steps, requests.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Smallest margin inside every target (fraction) for a level to count as comfortable with
    /// headroom; tighter levels are flagged "comfortable, no headroom".
    #[arg(long, default_value_t = crate::config::run::DEFAULT_HEADROOM)]
    pub headroom: f64,
    /// Exit with status 1 when the verdict is not comfortable at the highest level run (for CI).
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// Concurrent jobs (independent clients of the one loaded model).
    #[arg(long, short = 'j', default_value_t = 1)]
    pub jobs: usize,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// Concurrency levels, comma-separated.
    #[arg(long, short = 'j', value_delimiter = ',', default_value = "1,2,3")]
    pub jobs: Vec<usize>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Manifest name, .gguf file, safetensors directory or hf:REPO[:FILE].
    #[arg(default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Cache of fetched models [default: ~/.cache/tokfire/models].
    #[arg(long, env = "TOKFIRE_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the token ids of TEXT (like llama.cpp's llama-tokenize).
    #[arg(long, value_name = "TEXT")]
    pub tokenize: Option<String>,
}
