//! The hostile-file harness: small synthetic base models as editable parts, and a check that
//! runs one file through everything `generate` and `inspect` do with a model (validation, load,
//! tokenizer, chat template, one forward step) and reports a panic as a failure.
#![allow(dead_code)]

pub mod gguf_edit;
pub mod mutate;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use tokfire::config::{DeviceSpec, ModelConfig, WeightDType};
use tokfire::error::ModelError;
use tokfire::model::chat::Message;
use tokfire::model::llama::{LogitRows, SeqInput};
use tokfire::model::synthetic::{self, Spec};

use gguf_edit::Gguf;

/// A base model to mutate: its architecture and parts.
pub struct Base {
    pub arch: String,
    pub parts: Gguf,
}

/// Three small bases: llama with Q8_0 matrices, qwen2 (QKV bias) with Q4_0 and a tied head,
/// and a one-layer llama with f32 matrices.
pub fn bases(dir: &Path) -> Vec<Base> {
    let specs = [
        Spec {
            hidden: 32,
            ffn: 64,
            ..Spec::default()
        },
        Spec {
            hidden: 32,
            ffn: 64,
            quant: GgmlDType::Q4_0,
            tied: true,
            arch: "qwen2".into(),
            ..Spec::default()
        },
        Spec {
            hidden: 32,
            ffn: 64,
            layers: 1,
            heads: 2,
            kv_heads: 1,
            quant: GgmlDType::F32,
            ..Spec::default()
        },
    ];
    specs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| {
            let path = dir.join(format!("base-{i}.gguf"));
            synthetic::write_gguf(&path, &spec).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let parts = Gguf::parse(&bytes);
            assert_eq!(
                parts.write().0,
                bytes,
                "the editor must write base {i} back unchanged"
            );
            Base {
                arch: spec.arch,
                parts,
            }
        })
        .collect()
}

/// What a file did: loaded and ran, or was refused with this error.
#[derive(Debug)]
pub enum Outcome {
    Ran,
    Refused(String),
}

/// The `generate` model settings for `path`, CPU, weights as stored (or dense f32).
pub fn config(path: &Path, dense: bool) -> ModelConfig {
    ModelConfig {
        model: path.to_string_lossy().into_owned(),
        cache_dir: std::env::temp_dir(),
        hf_cache_dir: std::env::temp_dir(),
        dtype: if dense {
            WeightDType::F32
        } else {
            WeightDType::Q
        },
        device: DeviceSpec::Cpu,
        chat_template: None,
        load: Default::default(),
        repack: Default::default(),
    }
}

/// Runs `path` through inspect and the generate load path; `Err` is a panic or an error that
/// does not name the file.
pub fn check(path: &Path, dense: bool) -> Result<Outcome, String> {
    catch_unwind(AssertUnwindSafe(|| exercise(path, dense)))
        .map_err(|p| format!("panicked: {}", panic_text(&p)))?
}

fn exercise(path: &Path, dense: bool) -> Result<Outcome, String> {
    let shown = path.display().to_string();
    let names = |e: &ModelError| {
        let msg = e.to_string();
        if msg.contains(&shown) {
            Ok(msg)
        } else {
            Err(format!("the error does not name the file: {msg}"))
        }
    };
    match tokfire::model::inspect::inspect_gguf(path) {
        Ok(_) => {}
        Err(e) => {
            names(&e)?;
        }
    }
    let loaded = match tokfire::model::load(&config(path, dense), tokfire::model::Kernels::Ours) {
        Ok(l) => l,
        Err(e) => return names(&e).map(Outcome::Refused),
    };
    if let Some(chat) = &loaded.chat {
        let _ = chat.render(&[Message::new("user", "hi there")], true);
    }
    let Ok(ids) = loaded.tokenizer.encode("the hi 42") else {
        return Ok(Outcome::Ran);
    };
    if ids.is_empty() {
        return Ok(Outcome::Ran);
    }
    let mut cache = loaded
        .model
        .new_cache(ids.len() + 1)
        .map_err(|e| e.to_string())?;
    let step = loaded.model.forward(
        &[SeqInput {
            tokens: &ids,
            logits: LogitRows::Last,
        }],
        &mut [&mut cache],
    );
    if let Ok(logits) = step {
        let _ = loaded.tokenizer.decode(&ids);
        let _ = logits.dims();
    }
    Ok(Outcome::Ran)
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic".into())
}

/// Counts of one run.
#[derive(Debug, Default)]
pub struct Tally {
    pub mutants: u64,
    pub ran: u64,
    pub refused: u64,
    /// `(seed, what was mutated, what went wrong)` of the failures (first few).
    pub failures: Vec<(u64, String, String)>,
}

/// Mutants `seeds` of the bases, on `threads` threads, each thread with its own file in `dir`.
/// Before each load the mutant is left in `dir/thread-N.gguf` and its description in
/// `dir/thread-N.txt`, so a process abort (an allocation over the test's bound) leaves both.
pub fn run(bases: &[Base], seeds: std::ops::Range<u64>, threads: u64, dir: &Path) -> Tally {
    let chunks: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seeds = seeds.clone();
                s.spawn(move || {
                    let file = dir.join(format!("thread-{t}.gguf"));
                    let note = dir.join(format!("thread-{t}.txt"));
                    let mut tally = Tally::default();
                    for seed in seeds.filter(|x| x % threads == t) {
                        one(bases, seed, &file, &note, &mut tally);
                    }
                    tally
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for c in chunks {
        all.mutants += c.mutants;
        all.ran += c.ran;
        all.refused += c.refused;
        all.failures.extend(c.failures);
    }
    all.failures.sort();
    all
}

fn one(bases: &[Base], seed: u64, file: &PathBuf, note: &PathBuf, tally: &mut Tally) {
    let base = &bases[(seed % bases.len() as u64) as usize];
    let (bytes, what) = mutate::mutant(&base.parts, &base.arch, seed);
    std::fs::write(file, &bytes).unwrap();
    std::fs::write(note, format!("seed {seed}: {what}\n")).unwrap();
    tally.mutants += 1;
    match check(file, seed.is_multiple_of(16)) {
        Ok(Outcome::Ran) => tally.ran += 1,
        Ok(Outcome::Refused(_)) => tally.refused += 1,
        Err(e) => {
            if tally.failures.len() < 20 {
                tally.failures.push((seed, what, e));
            }
        }
    }
}
