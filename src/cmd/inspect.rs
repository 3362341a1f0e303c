//! `tokfire inspect MODEL [--json] [--tokenize TEXT]`: prints what the file holds, then fails
//! (exit 1) when the validation pass found problems in it; `--families` lists what loads.

use crate::cli::InspectArgs;
use crate::error::ModelError;
use crate::model::gguf::Gguf;
use crate::model::inspect::{inspect_dir, inspect_gguf};
use crate::model::tokenizer::Tokenizer;
use crate::model::validate::Problems;
use crate::model::{resolve, ModelPath};
use crate::report;

pub(crate) fn run(args: InspectArgs) -> anyhow::Result<()> {
    if args.families {
        print!("{}", report::inspect::families(args.json)?);
        return Ok(());
    }
    let cfg = super::base_config(&args.model, args.cache_dir.clone());
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
    if !r.problems.is_empty() {
        return Err(ModelError::Rejected {
            path: r.path.path().to_path_buf(),
            problems: Problems(r.problems),
        }
        .into());
    }
    Ok(())
}
