//! Command-line arguments (clap), turned into validated configs by [`crate::run`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::run::Format;
use crate::config::{SamplingConfig, WeightDType};

/// Name of the model used when `--model` is not given.
pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct-q4_1";

/// `generate --help`: the clocks and examples.
fn generate_help() -> String {
    format!(
        "Clocks (stderr):\n{}\n\nExamples:\n  tokfire generate --chat 'What is the capital of France?'\n  tokfire generate --prompt 'def fib(n):' -n 128 --threads 2\n  tokfire generate --model my.gguf --chat 'Hi' --temperature 0.7 --seed 1\n",
        crate::measure::clocks::DEFINITIONS
    )
}

const TERMS: &str = "Terms:
  job          an independent client: it submits the workload's tasks one after another (closed
               loop) to the one shared engine; N jobs run concurrently and the engine batches them
  warm-up      rounds run first at every level and kept apart from the statistics
  cold / warm  cold: the first request of the process (load + first TTFT); warm: later requests
  tail         p95 with >= 20 samples, else the slowest sample
  abstain      an answer that declined (or ran out of tokens where the task allows it): neither
               pass nor fail
  KV peak      largest KV-cache bytes held at once
  TPOT         time per output token after the first
  headroom     how far a figure is inside its target, as a fraction of the target
Batching: decode steps by sequences carried (what the scheduler really did); decode-only step =
median forward time of steps without prompt tokens; prefill steps = wall share of steps that
carried prompt tokens (each stalls every running job's next token); harness = wall time outside
forward passes.
Verdict: each level against the workload's declared acceptance criteria (your own targets),
speed (TTFT, slowest job, completion tail) and quality (pass rate) apart, each with its margin;
a comfortable level whose tightest margin is under --headroom is flagged 'no headroom'.";

/// `run`/`sweep --help`: columns, clocks, terms and examples.
fn bench_help(examples: &str) -> String {
    format!(
        "{}\nClocks:\n{}\n\n{TERMS}\n\nExamples:\n{examples}",
        crate::report::columns::help(),
        crate::measure::clocks::DEFINITIONS
    )
}

fn run_help() -> String {
    bench_help(
        "  tokfire run --jobs 2\n  tokfire run --jobs 3 --workload code --format md\n  tokfire run --workload my.toml --rounds 5 --exit-code   # exit 1 unless comfortable\n  tokfire run --workload code --spec lookup --spec-k 4 --lookup-ngram 1..3\n  tokfire run --workload chat --spec layerskip:20 --spec-k 3\n",
    )
}

fn sweep_help() -> String {
    bench_help(
        "  tokfire sweep                                  # chat at 1, 2 and 3 jobs\n  tokfire sweep --workload agent --jobs 1,2,4 --format json\n  tokfire sweep --out-dir ~/bench --trace trace.json\n",
    )
}

const REPORT_HELP: &str = "Examples:
  tokfire report results/sweep-chat.json                 # the last run, as `sweep` printed it
  tokfire report results/sweep-chat.json --all --format csv > all.csv
  tokfire report results/sweep-chat.json --run ID --html report.html";

const INSPECT_HELP: &str = "Examples:
  tokfire inspect
  tokfire inspect my-model.gguf --json
  tokfire inspect --tokenize 'Hello world'";

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
    #[command(after_help = "Examples: tokfire generate --chat 'Hi'   (--help: the clocks)", after_long_help = generate_help())]
    Generate(GenerateArgs),
    /// Describe a model file: architecture, quantization, shape, tokenizer, chat template.
    #[command(after_help = INSPECT_HELP)]
    Inspect(InspectArgs),
    /// One configuration, one workload, N concurrent jobs: warm-up and measured rounds, results sheet.
    #[command(after_help = "Example: tokfire run --jobs 2   (--help: every column, clock and term defined)", after_long_help = run_help())]
    Run(RunArgs),
    /// The same workload at 1, 2 and 3 concurrent jobs (identical settings), sheet and verdict.
    #[command(after_help = "Example: tokfire sweep --workload code   (--help: every column, clock and term defined)", after_long_help = sweep_help())]
    Sweep(SweepArgs),
    /// Two configurations differing in one variable, interleaved (not yet available).
    Ab(Pending),
    /// Cold starts in fresh processes (not yet available).
    Cold(Pending),
    /// A scripted session with idle gaps and model swaps (not yet available).
    Session(Pending),
    /// Compare two saved result files (not yet available).
    Compare(Pending),
    /// Re-render saved runs from a results file: text, Markdown, CSV, JSON or an HTML page.
    #[command(after_help = REPORT_HELP)]
    Report(ReportArgs),
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
    /// Results file the run is appended to [default: OUT_DIR/VERB-WORKLOAD.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder of the default results file (and its .txt log).
    #[arg(long, env = "TOKFIRE_OUT", default_value = "results")]
    pub out_dir: PathBuf,
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
    /// Speculative decoding: none, lookup (prompt lookup drafting) or layerskip:L (the model's
    /// first L layers draft); greedy decoding only.
    #[arg(long, default_value = "none", value_name = "none|lookup|layerskip:L")]
    pub spec: String,
    /// Tokens proposed per sequence per step when speculating.
    #[arg(long, default_value_t = crate::spec::DEFAULT_K, value_name = "K")]
    pub spec_k: usize,
    /// Prompt lookup n-gram lengths, MIN..MAX (longest match first).
    #[arg(long, default_value = "1..3", value_name = "MIN..MAX")]
    pub lookup_ngram: String,
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

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results file written by `run` or `sweep`.
    pub record: PathBuf,
    /// The run with this id (see `--all --format csv`, first column).
    #[arg(long, conflicts_with_all = ["last", "all"])]
    pub run: Option<String>,
    /// The last run of the file (the default).
    #[arg(long)]
    pub last: bool,
    /// Every run of the file, oldest first.
    #[arg(long, conflicts_with = "last")]
    pub all: bool,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write one self-contained HTML page (sheet, request timeline, distributions, plots).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
