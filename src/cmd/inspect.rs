//! `tokfire inspect MODEL [--json] [--tokenize TEXT]`.

use crate::cli::InspectArgs;
use crate::config::{default_cache_dir, default_hf_cache_dir, ModelConfig};
use crate::model::gguf::Gguf;
use crate::model::inspect::{inspect_dir, inspect_gguf};
use crate::model::tokenizer::Tokenizer;
use crate::model::{resolve, ModelPath};
use crate::report;

pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let cfg = ModelConfig {
        model: args.model.clone(),
        cache_dir: args.cache_dir.clone().unwrap_or_else(default_cache_dir),
        hf_cache_dir: default_hf_cache_dir(),
        dtype: Default::default(),
        device: crate::config::DeviceSpec::Cpu,
    };
    let path = resolve(&cfg)?;
    if let Some(text) = &args.tokenize {
        let tok = match &path {
            ModelPath::Gguf(p) => Tokenizer::from_gguf(&Gguf::open(p)?)?,
            ModelPath::Safetensors(p) => {
                Tokenizer::from_file(&p.join("tokenizer.json"), None, None)?
            }
        };
        let ids = tok.encode(text)?;
        println!("{}", report::inspect::token_ids(&tok, &ids, args.json)?);
        return Ok(());
    }
    let r = match &path {
        ModelPath::Gguf(p) => inspect_gguf(p)?,
        ModelPath::Safetensors(p) => inspect_dir(p)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", report::inspect::text(&r));
    }
    Ok(())
}
