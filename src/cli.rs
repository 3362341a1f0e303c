//! Command-line arguments (clap), turned into validated configs by [`crate::run`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub mod vary;

use crate::config::run::Format;
use crate::config::{LoadMode, Repack, SamplingConfig, WeightDType};

/// Name of the model used when `--model` is not given.
pub(crate) const DEFAULT_MODEL: &str = env!("TOKFIRE_DEFAULT_MODEL");

/// `generate --help`: the clocks and examples.
fn generate_help() -> String {
    format!(
        "Clocks (stderr):\n{}\n\nExamples:\n  tokfire generate --chat 'What is the capital of France?'\n  tokfire generate --prompt 'def fib(n):' -n 128 --threads 2\n  tokfire generate --model my.gguf --chat 'Hi' --temperature 0.7 --seed 1\n  tokfire generate --model gemma3-270m-q4_k_m --prompt 'The capital of France is' -n 32\n  tokfire generate --model gemma3-270m-q4_k_m --chat 'Hi' --chat-template gemma.jinja\n",
        crate::measure::clocks::DEFINITIONS
    )
}

const TERMS: &str = "Terms:
  job          an independent client: it submits the workload's tasks one after another (closed
               loop) to the one shared engine; N jobs run concurrently and the engine batches them
  warm-up      rounds run first at every level and kept apart from the statistics
  1st request  the process's first request: load + its TTFT, page cache as it was (not a cold
               start: that is `tokfire cold`), beside the same prompt's TTFT in later rounds
  warm         every later request of the process
  cold start   `tokfire cold`: a fresh process with the model's files evicted from the page
               cache (at most 5 % resident; warm is at least 95 %, between is partly cached)
  cold prompt  with --prefix-cache on: a prompt that reused nothing (cached: reused a prefix)
  tail         p95 with >= 20 samples, else the slowest sample
  abstain      an answer that declined (or ran out of tokens where the task allows it): neither
               pass nor fail
  KV peak      largest KV-cache bytes held at once
  TPOT         time per output token after the first
  medians      the sheet's and the summary's are over every measured task of the level (decode
               tok/s per sequence = 1 / median TPOT over those tasks); ab, compare and rerun
               judge the median over rounds of each round's own figure, a second figure named
               so where it is shown (`median of rounds`)
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

/// `ab --help`: the keys `--vary` takes (derived from the flags), then metrics and verdict.
fn ab_help() -> String {
    format!("{}\n{}", vary::help(), crate::bench::ab::help())
}

fn run_help() -> String {
    bench_help(
        "  tokfire run --jobs 2\n  tokfire run --jobs 3 --workload code --format md\n  tokfire run --workload my.toml --rounds 5 --exit-code   # exit 1 unless comfortable\n  tokfire run --workload code --spec lookup --spec-k 4 --lookup-ngram 1..3\n  tokfire run --workload chat --spec layerskip:20 --spec-k 3\n  tokfire run --spec synthetic:0.8 --spec-k 3   # speedup at a controlled acceptance\n  tokfire run --jobs 3 --schedule decode-first --profile\n  tokfire run --dtype f32 --spec draft:smollm2-135m-instruct-q4_1 --jobs 3\n  tokfire run --workload shared-prefix --prefix-cache on   # cold and cached prompts apart\n",
    )
}

fn sweep_help() -> String {
    bench_help(
        "  tokfire sweep                                  # chat at 1, 2 and 3 jobs\n  tokfire sweep --workload agent --jobs 1,2,4 --format json\n  tokfire sweep --out-dir ~/bench --trace trace.json\n  tokfire sweep --schedule prefill-first --profile  # what the scheduler did, per level\n  tokfire sweep --model gemma3-270m-q4_k_m --workload code\n  tokfire sweep --model gemma3-270m-q4_k_m --chat-template gemma.jinja   # chat on a model without a template\n  tokfire sweep --workload shared-prefix --prefix-cache on --prefix-cache-budget 64MiB\n",
    )
}

const REPORT_HELP: &str = "Examples:
  tokfire report results/sweep-chat.json                 # the last run, as `sweep` printed it
  tokfire report results/sweep-chat.json --all --format csv > all.csv
  tokfire report results/sweep-chat.json --run ID --html report.html
  tokfire report results/sweep-chat.json --profile       # the scheduler profile per level";

const INSPECT_HELP: &str = "Examples:
  tokfire inspect
  tokfire inspect my-model.gguf --json
  tokfire inspect --tokenize 'Hello world'
  tokfire inspect --families        (what loads: families, their tensors and pre-tokenizers)";

const KERNELS_HELP: &str = "Examples:
  tokfire kernels                   (the levels, their probe times, what --kernels auto runs)
  tokfire kernels --recalibrate     (measure again, e.g. after a BIOS or VM change)
  tokfire kernels --json

The choice is measured the first time a run needs it (about 0.2 s) and kept per CPU model and
tokfire version in kernel-choice.json ($TOKFIRE_CACHE, else ~/.cache/tokfire); every record
says how its level was chosen (runtime.level_by).";

#[derive(Debug, Parser)]
#[command(
    name = "tokfire",
    version,
    about = "TokFire Bench: load a model in-process and measure what a person waits for",
    max_term_width = 100
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
    /// Two configurations differing in one variable, rounds interleaved in one process; verdict
    /// keep / revert / retest against the noise, output drift checked.
    #[command(mut_arg("rounds", |a| a.default_value("5").help("Measured rounds per arm (at least 3 for a median)")))]
    #[command(mut_arg("warmup", |a| a.help("Warm-up rounds per arm, kept apart from the statistics")))]
    #[command(after_help = "Example: tokfire ab --vary threads=1,2 --expect decode   (--help: keys, metrics, verdict)", after_long_help = ab_help())]
    Ab(AbArgs),
    /// This machine's noise: A/A pairs give each metric's noise floor and the false-positive
    /// rate of ab's rule; saved as the profile ab reads.
    #[command(after_help = CALIBRATE_HELP)]
    Calibrate(CalibrateArgs),
    /// Cold starts in fresh processes: page cache evicted, clocks from exec to the last token.
    #[command(after_help = "Example: tokfire cold --repeat 5   (--help: every clock defined)", after_long_help = crate::report::cold::help())]
    Cold(ColdArgs),
    /// Prefill measured precisely: TTFT and prefill tok/s over prompt lengths, depths, cached
    /// shares and chunk sizes (llama-bench's pp and d), with a fitted cost model.
    #[command(after_help = "Example: tokfire prefill --lengths 128,512,2048 --depths 0,1024   (--help: every figure defined)", after_long_help = crate::report::prefill::help())]
    Prefill(PrefillArgs),
    /// What verifying k drafted tokens costs a decode step of N sequences, against the plain
    /// step, and the acceptance rate at which speculation starts to pay.
    #[command(name = "spec-cost", after_help = "Example: tokfire spec-cost --jobs 1,2,3 --k 0,1,2,3,4   (--help: every figure defined)", after_long_help = crate::report::spec_cost::help())]
    SpecCost(SpecCostArgs),
    /// A scripted session a person lives through: loads, requests, idle gaps, model swaps.
    #[command(after_help = SESSION_HELP)]
    Session(SessionArgs),
    /// Compare two saved runs (before/after an upgrade): the sheet side by side, ratios, verdict.
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// Re-run the exact configuration stored in a record on this build and machine, append the
    /// new run to the same record and compare it with the stored one.
    #[command(after_help = RERUN_HELP)]
    Rerun(RerunArgs),
    /// Our CPU kernel levels timed against each other on this CPU, and the one `--kernels auto`
    /// runs (measured once per CPU model and version, then kept).
    #[command(after_help = KERNELS_HELP)]
    Kernels(KernelsArgs),
    /// Re-render saved runs from a results file: text, Markdown, CSV, JSON or an HTML page.
    #[command(after_help = REPORT_HELP)]
    Report(ReportArgs),
    /// One start of `cold`, run by `cold` itself in a fresh process (prints its clocks as JSON).
    #[command(name = "cold-child", hide = true)]
    ColdChild(ColdChildArgs),
}

impl Cli {
    /// Verbs that only read files and print (no record or result is written after printing):
    /// these end quietly, as Unix tools do, when their reader closes the pipe (`| head`).
    pub fn only_prints(&self) -> bool {
        matches!(
            self.command,
            Command::Generate(_)
                | Command::Inspect(_)
                | Command::Compare(_)
                | Command::Report(_)
                | Command::Kernels(_)
        )
    }

    /// The command's `--threads`, where it has one and the user gave it.
    pub fn threads(&self) -> Option<usize> {
        match &self.command {
            Command::Generate(a) => a.runtime.threads,
            Command::Run(RunArgs { bench, .. })
            | Command::Sweep(SweepArgs { bench, .. })
            | Command::Ab(AbArgs { bench, .. })
            | Command::Calibrate(CalibrateArgs { bench, .. }) => bench.runtime.threads,
            Command::Cold(a) => a.runtime.threads,
            Command::Session(a) => a.runtime.threads,
            Command::Prefill(a) => a.runtime.threads,
            Command::SpecCost(a) => a.runtime.threads,
            _ => None,
        }
    }
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
    /// A Jinja chat template file used instead of the model's own, for chat prompts and chat
    /// workloads on models without one (such as gemma3-270m-q4_k_m).
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
    /// GGUF weights: mmap maps the file and lets quantized matrices borrow its pages; copy
    /// reads every tensor into memory.
    #[arg(long, value_enum, default_value_t = LoadMode::Mmap)]
    pub load: LoadMode,
    /// Quantized matrices our CPU kernels run (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K) repacked
    /// into 8-row tiles at load: faster prefill and decode, each result its scalar reference's bits,
    /// at the cost of the load's repack time and of owning the bytes (not borrowing the mapped
    /// file). auto repacks where our kernels run; on also refuses candle's kernels and GPUs.
    #[arg(long, value_enum, default_value_t = Repack::Auto)]
    pub repack: Repack,
}

/// How the CPU computes.
#[derive(Debug, Clone, Args)]
pub struct RuntimeArgs {
    /// Compute threads, one pool for the whole run [default: the physical cores].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Matmul kernels on the CPU (quantized blocks and dense f16/bf16): auto (the level
    /// measured fastest on this CPU; see `tokfire kernels`), scalar, avx2 or avx512-vnni; or
    /// candle: candle's own matmuls and tensor ops, the device-generic path a GPU runs, on the
    /// CPU.
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
    pub(crate) fn config(&self) -> SamplingConfig {
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
    /// Workload: a built-in name (chat, code, extract, agent, edit, shared-prefix) or a workload .toml file.
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
    #[arg(long, default_value_t = crate::config::run::DEFAULT_MAX_SEQS)]
    pub max_seqs: usize,
    /// Most tokens (prefill + decode) in one engine step.
    #[arg(long, default_value_t = crate::config::run::DEFAULT_MAX_BATCH_TOKENS)]
    pub max_batch_tokens: usize,
    /// Longest prefill chunk of one sequence in one step.
    #[arg(long, default_value_t = crate::config::run::DEFAULT_PREFILL_CHUNK)]
    pub prefill_chunk: usize,
    /// KV-cache budget: tokens (e.g. 16384) or bytes with a unit (e.g. 256MiB).
    #[arg(long, default_value_t = crate::config::run::DEFAULT_KV_BUDGET_TOKENS.to_string())]
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
    /// Before each measured round, wait up to SECONDS for other processes to leave the CPU
    /// (under a quarter of a core for half a second); what was waited is recorded per round.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub quiet_wait: f64,
    /// Exit with status 1 when the verdict is not comfortable at the highest level run (run,
    /// sweep), or is not keep (ab): for CI.
    #[arg(long)]
    pub exit_code: bool,
    /// A note stored with the run and printed in its summary (repeatable): what no counter
    /// measures, e.g. --note 'fan loud' --note 'laptop on battery'.
    #[arg(long, value_name = "TEXT")]
    pub note: Vec<String>,
    /// Speculative decoding: none, lookup (prompt lookup drafting), layerskip:L (the model's
    /// first L layers draft), draft:MODEL (a second model with the same vocabulary), mtp (the
    /// checkpoint's own nextn layers) or synthetic:RATE[,RATE…] (drafts the greedy output of an
    /// untimed reference pass, keeping draft position i with the i-th rate given the ones
    /// before it: real verify forwards at a controlled acceptance; greedy only). Greedy output
    /// is exactly the output without speculation; with --temperature > 0 drafts are verified by
    /// rejection sampling. A --spec run also runs --spec none on the same model, rounds
    /// interleaved, unless --no-baseline.
    #[arg(
        long,
        default_value = "none",
        value_name = "none|lookup|layerskip:L|draft:MODEL|mtp|synthetic:RATE"
    )]
    pub spec: String,
    /// Tokens proposed per sequence per step when speculating.
    #[arg(long, default_value_t = crate::spec::DEFAULT_K, value_name = "K")]
    pub spec_k: usize,
    /// Prompt lookup n-gram lengths, MIN..MAX (longest match first).
    #[arg(long, default_value = "1..3", value_name = "MIN..MAX")]
    pub lookup_ngram: String,
    /// Batching policy: fifo (decodes and prefill chunks in admission order), decode-first
    /// (stall-free: every decode first, prefill within one chunk per step) or prefill-first
    /// (prefill-only steps while prompts wait).
    #[arg(long, value_enum, default_value_t = crate::config::schedule::Schedule::Fifo)]
    pub schedule: crate::config::schedule::Schedule,
    /// Prefix cache: on lets a new prompt copy the KV rows of the longest cached prefix (whole
    /// 16-token blocks of earlier prompts and answers in the same round) and prefill only the
    /// rest; the sheet then shows cold and cached prompts apart. Off by default, so latency
    /// runs stay cold. Greedy output is the same either way.
    #[arg(long, value_enum, default_value_t = crate::config::run::OnOff::Off)]
    pub prefix_cache: crate::config::run::OnOff,
    /// The prefix cache's part of --kv-budget: tokens or bytes (e.g. 2048 or 64MiB) [default: a
    /// quarter of the KV budget]; least-recently used blocks are evicted to stay within it.
    #[arg(long, value_name = "TOKENS|BYTES")]
    pub prefix_cache_budget: Option<String>,
    /// Also print the scheduler profile: planner clock, queue, KV and budget use, preemptions,
    /// decode stalls and the worst inter-token gap, per level.
    #[arg(long)]
    pub profile: bool,
    /// Skip the `--spec none` baseline that a speculative run otherwise interleaves round by
    /// round on the same loaded model (the report then shows no speedup).
    #[arg(long)]
    pub no_baseline: bool,
    /// How a `--spec draft:MODEL` drafter's weights are held (like --dtype).
    #[arg(long, value_enum, default_value_t = crate::config::WeightDType::Q)]
    pub draft_dtype: crate::config::WeightDType,
    /// Seconds each job pauses after an answer before its next task, the way a person reads
    /// before typing (0: the next task fires at once).
    #[arg(long, default_value_t = 0.0, value_name = "S")]
    pub think: f64,
    /// Each pause is drawn uniformly from think ± this many seconds (seeded by --seed).
    #[arg(long, default_value_t = 0.0, value_name = "S")]
    pub think_jitter: f64,
    /// Job j starts its first task j × S seconds after the round starts.
    #[arg(long, default_value_t = 0.0, value_name = "S")]
    pub stagger: f64,
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
    /// List the supported model families and pre-tokenizers instead (no model is read).
    #[arg(long, conflicts_with = "tokenize")]
    pub families: bool,
}

#[derive(Debug, Args)]
pub struct KernelsArgs {
    /// Measure again (and keep the new choice) instead of showing the kept one.
    #[arg(long)]
    pub recalibrate: bool,
    /// Print the kept choice as JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
    /// Also print the scheduler profile of each run (planner clock, queue, KV, stalls).
    #[arg(long)]
    pub profile: bool,
}

const COMPARE_HELP: &str =
    "Refused unless both runs used the same workload (content hash), model (sha256), settings
and job levels; a different build, kernel, driver or machine is the point and is listed.
--force compares anyway. Levels are matched by job count (1 job with 1 job, never by
position), with one verdict per job count both runs measured.

Examples:
  tokfire compare results/sweep-chat.json results/sweep-chat.json --old-run ID1 --new-run ID2
  tokfire compare before.json after.json                    # the last run of each
  tokfire compare before.json after.json --expect ttft --force";

const RERUN_HELP: &str =
    "The one command to type after every upgrade: the stored config runs again, the
new run is appended to the same record, then compared with the stored one (as `compare`).

Examples:
  tokfire rerun results/sweep-chat.json                     # the last run of the file
  tokfire rerun results/sweep-chat.json --run ID --note 'after the driver update'
  tokfire rerun results/sweep-chat.json --rounds 5          # enough rounds for a verdict

Only `run` and `sweep` records are repeated (an A/B, cold starts or a session: run their own
command again). The stored configuration is validated as if typed; a stored --trace is not
written again; a workload whose content changed since the run is refused.";

const CALIBRATE_HELP: &str =
    "Runs --pairs A/A pairs (two identical arms, rounds interleaved as in ab, at
least 5 measured rounds each) within --budget seconds, then prints per metric how far B / A
moved when nothing changed (median and worst pair) and the within-arm noise, the share of pairs
ab's rule called keep or revert at --min-effect (its false-positive rate here, with a 95 % upper
bound), and whether the calibration itself was disturbed. Saves OUT_DIR/calibration.json; ab
warns when --min-effect is below the worst A/A movement of its --expect metric on this CPU.

Examples:
  tokfire calibrate                               # 6 pairs of the chat workload, default model
  tokfire calibrate --pairs 10 --workload code -n 16 --threads 2
  tokfire calibrate --model my.gguf --format json --budget 300";

/// `tokfire calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// A/A pairs to run (each: one warm-up and --rounds measured rounds per arm).
    #[arg(long, default_value_t = 6)]
    pub pairs: usize,
    /// The --min-effect the false-positive rate is measured at (0.03 = 3 %).
    #[arg(long, default_value_t = crate::record::ab::DEFAULT_MIN_EFFECT)]
    pub min_effect: f64,
    /// Stop starting new pairs after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub budget: f64,
}

/// `tokfire ab`.
#[derive(Debug, Args)]
pub struct AbArgs {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// Concurrent jobs (one level).
    #[arg(long, short = 'j', default_value_t = 1)]
    pub jobs: usize,
    /// The one variable that differs, KEY=A,B (the keys: see --help).
    #[arg(long, value_name = "KEY=A,B")]
    pub vary: Vec<String>,
    /// Two identical arms: the noise check (never keep or revert unless the machine is noisy).
    #[arg(long, conflicts_with = "vary")]
    pub aa: bool,
    /// The metric the change is expected to move.
    #[arg(long, value_enum, default_value_t = crate::record::ab::Metric::Decode)]
    pub expect: crate::record::ab::Metric,
    /// Smallest relative change worth keeping (0.03 = 3 %).
    #[arg(long, default_value_t = crate::record::ab::DEFAULT_MIN_EFFECT)]
    pub min_effect: f64,
    /// While the verdict is retest, add up to N more pairs of rounds.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub until_decided: usize,
}

/// `tokfire compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The results file of the old (before) run.
    pub old: PathBuf,
    /// The results file of the new (after) run (may be the same file).
    pub new: PathBuf,
    /// The old run's id [default: the last run of OLD, or the one before the last when OLD
    /// and NEW are the same file].
    #[arg(long, value_name = "ID")]
    pub old_run: Option<String>,
    /// The new run's id [default: the last run of NEW].
    #[arg(long, value_name = "ID")]
    pub new_run: Option<String>,
    /// The metric the verdict judges.
    #[arg(long, value_enum, default_value_t = crate::record::ab::Metric::Decode)]
    pub expect: crate::record::ab::Metric,
    /// Smallest relative change that counts (0.03 = 3 %).
    #[arg(long, default_value_t = crate::record::ab::DEFAULT_MIN_EFFECT)]
    pub min_effect: f64,
    /// Compare runs of different workloads, models or settings anyway.
    #[arg(long)]
    pub force: bool,
}

/// `tokfire rerun`.
#[derive(Debug, Args)]
pub struct RerunArgs {
    /// A results file written by `run`, `sweep` or `ab`.
    pub record: PathBuf,
    /// The stored run to repeat [default: the last].
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// The metric the comparison judges.
    #[arg(long, value_enum, default_value_t = crate::record::ab::Metric::Decode)]
    pub expect: crate::record::ab::Metric,
    /// Measured rounds per level for the new run [default: the stored run's]; a verdict needs
    /// at least 5 on each side.
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Notes for the new run (repeatable); the stored run's notes are kept otherwise.
    #[arg(long, value_name = "TEXT")]
    pub note: Vec<String>,
}

/// `tokfire cold`.
#[derive(Debug, Args)]
pub struct ColdArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Cold starts (the same number of warm starts is interleaved: cold, warm, cold, …).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Workload whose task every start runs: a built-in name or a workload .toml file.
    #[arg(long, short = 'w', default_value = "chat")]
    pub workload: String,
    /// The task of the workload (default: its first task).
    #[arg(long, conflicts_with = "prompt")]
    pub task: Option<String>,
    /// Raw prompt text instead of a workload task (no chat template).
    #[arg(long, short = 'p')]
    pub prompt: Option<String>,
    /// Output limit of each start [default: the task's own; 32 with --prompt].
    #[arg(long, short = 'n')]
    pub max_tokens: Option<usize>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// A start still running after SECONDS is killed and recorded as a failed start.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Also drop the whole page cache (writes 1 to /proc/sys/vm/drop_caches) before each cold
    /// start; root only.
    #[arg(long)]
    pub drop_caches: bool,
    /// Cold-start a private copy of the model, made beside the results file and removed after:
    /// for a model another process maps, or one on tmpfs, whose pages cannot be evicted.
    #[arg(long)]
    pub private_copy: bool,
    /// Results file the run is appended to [default: OUT_DIR/cold-TASK.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder of the default results file (and its .txt log).
    #[arg(long, env = "TOKFIRE_OUT", default_value = "results")]
    pub out_dir: PathBuf,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ColdChildArgs {
    /// The start to run, as JSON.
    #[arg(long)]
    pub spec: String,
}

const SESSION_HELP: &str = "Examples:
  tokfire session workloads/session.toml
  tokfire session workloads/session.toml --time-scale 0.01   (idle gaps 100x shorter, said in the report)
  tokfire session workloads/session.toml --prefix-cache on   (each chat turn reuses the last)

The script is TOML: name = \"...\", then [[step]] tables, each with one of
  load = \"MODEL\"  (dtype = \"q|f32|f16|bf16\", evict = true for a cold page cache)
  chat = \"...\"  (system = \"...\")   raw = \"...\"   task = \"WORKLOAD/TASK_ID\"
      (max_tokens = N, repeat = N)
      chat steps are the turns of one conversation: each carries the earlier chat turns
      (their questions and answers, across model swaps), so its prompt grows as a chat does
  idle = \"90s\"  (also 500ms, 1.5m, 2h)
The first step loads a model. Each row shows what the person waited for: load, warm-up (one
forward after the load), time to first token (enter -> first token), completion (enter -> last
token); page cache: mincore residency of the model's files before the load (cold below 5 %).
Every request runs on the same engine as `run` (one sequence, run's default budgets and
prefill chunk), so its TTFT means what it means there.";

/// `tokfire session`.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// The session script (TOML), e.g. workloads/session.toml.
    pub file: PathBuf,
    /// Idle gaps are slept for their scripted length times F (1 = real time).
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub time_scale: f64,
    /// Cache of fetched models [default: ~/.cache/tokfire/models].
    #[arg(long, env = "TOKFIRE_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// cpu, cuda, cuda:N or metal.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// GGUF weights: mmap (borrow the mapped file) or copy.
    #[arg(long, value_enum, default_value_t = LoadMode::Mmap)]
    pub load: LoadMode,
    /// Quantized matrices repacked into 8-row tiles at load (as for run).
    #[arg(long, value_enum, default_value_t = Repack::Auto)]
    pub repack: Repack,
    /// Prefix cache: on lets each request copy the KV rows of the longest prefix cached from
    /// earlier requests to the same loaded model (a chat turn finds the conversation so far)
    /// and prefill only the rest; a model swap starts it empty. Its budget is run's default
    /// (a quarter of the default KV budget).
    #[arg(long, value_enum, default_value_t = crate::config::run::OnOff::Off)]
    pub prefix_cache: crate::config::run::OnOff,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Results file the run is appended to [default: OUT_DIR/session-NAME.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder of the default results file (and its .txt log).
    #[arg(long, env = "TOKFIRE_OUT", default_value = "results")]
    pub out_dir: PathBuf,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `tokfire prefill`.
#[derive(Debug, Args)]
pub struct PrefillArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// New prompt tokens of each cell (llama-bench's -p); cells past the model's context are
    /// listed as n/a.
    #[arg(long, value_delimiter = ',', default_value = "128,512,2048,8192")]
    pub lengths: Vec<usize>,
    /// Tokens already in the context before the prompt (llama-bench's -d).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub depths: Vec<usize>,
    /// Percentages of the prompt found in the prefix cache (0: cold).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub cached: Vec<u32>,
    /// Prefill chunk sizes: most prompt tokens of the sequence in one forward.
    #[arg(long, value_delimiter = ',', default_value = "256")]
    pub chunks: Vec<usize>,
    /// Measured samples per cell (3 or more for a median).
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// Unrecorded samples run first in every cell.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Seed of the generated prompts (and of the offsets into --prompts).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Take the prompt tokens from a workload (a built-in name or a .toml file, as --workload)
    /// instead of drawing them from the vocabulary: every task's first prompt, rendered as the
    /// engine submits it and tokenized, joined and repeated to the length; each sample starts
    /// at its own seeded offset.
    #[arg(long, value_name = "WORKLOAD")]
    pub prompts: Option<String>,
    /// Also time a fresh process's start on each cell's first prompt: spawn → model loaded →
    /// warm-up → first token, the model file in the page cache (cells at depth 0 with nothing
    /// cached; a fresh process holds neither). `tokfire cold` times starts from disk.
    #[arg(long)]
    pub cold_start: bool,
    /// Results file the run is appended to [default: OUT_DIR/prefill.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder of the default results file (and its .txt log).
    #[arg(long, env = "TOKFIRE_OUT", default_value = "results")]
    pub out_dir: PathBuf,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `tokfire spec-cost`.
#[derive(Debug, Args)]
pub struct SpecCostArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// Sequences decoding together (the batch size B).
    #[arg(long, short = 'j', value_delimiter = ',', default_value = "1,2,3")]
    pub jobs: Vec<usize>,
    /// Drafted tokens verified per sequence and step (0: plain decoding, the baseline).
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,3,4")]
    pub k: Vec<usize>,
    /// Prompt tokens of every sequence, in the KV cache before the measured steps.
    #[arg(long, default_value_t = 256)]
    pub context: usize,
    /// Decode steps measured per cell.
    #[arg(long, default_value_t = 16)]
    pub steps: usize,
    /// Decode steps run first in every cell, unrecorded.
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// Seed of the prompts and of the drafted tokens.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Results file the run is appended to [default: OUT_DIR/spec-cost.json].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Folder of the default results file (and its .txt log).
    #[arg(long, env = "TOKFIRE_OUT", default_value = "results")]
    pub out_dir: PathBuf,
    /// What stdout shows.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}
