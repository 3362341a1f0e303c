//! `tokfire generate`: one prompt, text on stdout as it is produced, the four clocks on stderr.

use std::io::Write;

use crate::cli::GenerateArgs;
use crate::engine::generate::{generate, GenerateParams};
use crate::error::ConfigError;
use crate::model::chat::Message;
use crate::model::{self, Loaded};
use crate::report::clocks::{self, ClockContext};

/// The raw prompt used when neither --prompt nor --chat is given.
pub(crate) const DEFAULT_PROMPT: &str = "The capital of France is";

pub(crate) fn run(args: GenerateArgs) -> anyhow::Result<()> {
    let cfg = super::model_config(&args.model)?;
    let runtime = super::runtime_config(&args.runtime)?;
    let sampling = args.sampling.config();
    sampling.validate()?;
    let rt = crate::bench::runtime::start(&runtime)?;
    let info = crate::bench::runtime::info(&runtime, cfg.device);
    let _in = rt.enter();
    generate_on(&args, (&cfg, runtime.matmuls()), &info, sampling)
}

/// Loads, generates and prints (model steps on the entered runtime's workers).
fn generate_on(
    args: &GenerateArgs,
    (cfg, kernels): (&crate::config::ModelConfig, model::Kernels),
    runtime: &crate::config::RuntimeInfo,
    sampling: crate::config::SamplingConfig,
) -> anyhow::Result<()> {
    let seen = crate::measure::sentinel::Snapshot::take();
    let loaded = model::load(cfg, kernels)?;
    let prompt = prompt_text(args, &loaded)?;
    let ids = loaded.tokenizer.encode(&prompt)?;
    let params = GenerateParams {
        max_new: args.max_tokens,
        sampling,
        stop: loaded.tokenizer.info.eos_id.into_iter().collect(),
    };
    let mut printer = StreamPrinter::default();
    let g = generate(&loaded.model, &ids, &params, |t, _| {
        printer.push(&loaded.tokenizer, t)
    })?;
    println!();
    if args.ids {
        println!("{:?}", g.tokens);
    }
    let split = loaded.split.as_ref().map(Into::into);
    let ctx = ClockContext {
        load: loaded.load_time,
        file_bytes: loaded.file_bytes,
        model: &cfg.model,
        device: &runtime.to_string(),
        dtype: cfg.dtype.name(),
        split: split.as_ref(),
    };
    eprint!("{}", clocks::text(&ctx, &g));
    // What else the machine did from load to last token (the OS's counters, not the flags).
    let reading = seen.until(&crate::measure::sentinel::Snapshot::take());
    let quiet = crate::record::quiet::QuietFigures::of_readings([&reading]);
    let line = quiet.line("runs").unwrap_or_else(|| {
        format!(
            "n/a (this run took {:.2} s; under 0.25 s the OS's 10 ms ticks cannot tell)",
            reading.wall_s
        )
    });
    eprintln!("machine: {line}");
    Ok(())
}

fn prompt_text(args: &GenerateArgs, loaded: &Loaded) -> anyhow::Result<String> {
    let Some(user) = &args.chat else {
        return Ok(args
            .prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_PROMPT.to_string()));
    };
    let template = loaded.chat.as_ref().ok_or_else(|| ConfigError::Flag {
        flag: "--chat".into(),
        value: user.clone(),
        reason: format!(
            "{} has no chat template (no tokenizer.chat_template in its metadata); give one with --chat-template FILE, or use --prompt with raw text",
            loaded.path.path().display()
        ),
    })?;
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(Message::new("system", system));
    }
    messages.push(Message::new("user", user));
    template.render(&messages, true).map_err(anyhow::Error::msg)
}

/// Prints decoded text as tokens arrive, holding back incomplete UTF-8 sequences.
#[derive(Default)]
struct StreamPrinter {
    tokens: Vec<u32>,
    printed: usize,
}

impl StreamPrinter {
    fn push(&mut self, tok: &crate::model::tokenizer::Tokenizer, id: u32) {
        self.tokens.push(id);
        let Ok(text) = tok.decode(&self.tokens) else {
            return;
        };
        if text.ends_with('\u{FFFD}')
            || text.len() <= self.printed
            || !text.is_char_boundary(self.printed)
        {
            return;
        }
        print!("{}", &text[self.printed..]);
        let _ = std::io::stdout().flush();
        self.printed = text.len();
    }
}
