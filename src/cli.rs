//! Command-line arguments (clap), turned into validated configs by [`crate::run`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::WeightDType;

/// Name of the model used when `--model` is not given.
pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct-q4_1";

const CLOCKS: &str = "Clocks (stderr):
  load     open + read + build weights and tokenizer (fetching a missing model is not counted)
  warm-up  first decode step minus the median of the later steps (first use of a shape)
  prefill  prompt tokens through the model up to the first token (time to first token)
  decode   every later token, one forward + sample each; tok/s = tokens / summed step time";

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
    /// One configuration, one workload: warm-up and measured rounds (not yet available).
    Run(Pending),
    /// The same workload at 1, 2 and 3 concurrent jobs (not yet available).
    Sweep(Pending),
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

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
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
    /// Print the generated token ids too.
    #[arg(long)]
    pub ids: bool,
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
