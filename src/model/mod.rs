//! Models by name, path or hub id: resolving `--model` (manifest name fetched on first use, a
//! `.gguf` file, a safetensors directory, `hf:REPO[:FILE]`), then loading weights, tokenizer and
//! chat template, timing the load.

pub(crate) mod arch;
pub(crate) mod attention;
pub mod chat;
pub(crate) mod embedding;
pub mod families;
pub mod family;
pub mod gemma;
pub mod gguf;
mod header;
pub(crate) mod hub;
pub mod inspect;
pub mod kv;
mod layout;
pub(crate) mod linear;
pub mod llama;
pub mod manifest;
pub mod mapped;
pub mod prefix;
pub mod pretok;
pub(crate) mod projections;
pub mod qwen35;
pub mod recurrent;
pub(crate) mod residual;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic_gemma;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic_mtp;
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic_qwen35;
pub mod tokenizer;
pub mod tokenizer_spm;
pub(crate) mod validate;
pub(crate) mod vmath;
pub mod weights;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::config::{LoadMode, ModelConfig};
use crate::error::{ConfigError, ModelError};
use chat::ChatTemplate;
use family::Model;
use gguf::Gguf;
use llama::Llama;
use tokenizer::Tokenizer;

/// A model file or directory found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "format", content = "path", rename_all = "lowercase")]
pub enum ModelPath {
    Gguf(PathBuf),
    Safetensors(PathBuf),
}

impl ModelPath {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::Gguf(p) | Self::Safetensors(p) => p,
        }
    }
}

/// Turns `--model` into a path, fetching manifest models that are not cached yet.
pub(crate) fn resolve(cfg: &ModelConfig) -> Result<ModelPath, ModelError> {
    let spec = cfg.model.as_str();
    if let Some(rest) = spec.strip_prefix("hf:") {
        let r = hub::HubRef::parse(rest).ok_or_else(|| ConfigError::Flag {
            flag: "--model".into(),
            value: spec.into(),
            reason: "expected hf:ORG/NAME or hf:ORG/NAME:FILE".into(),
        })?;
        return Ok(classify(hub::locate(&r, &cfg.hf_cache_dir)?));
    }
    let path = Path::new(spec);
    if path.exists() {
        return Ok(classify(path.to_path_buf()));
    }
    let manifest = manifest::manifest()?;
    if let Some(m) = manifest.get(spec) {
        let cached = m.cached_path(&cfg.cache_dir);
        // Never download what this engine cannot run.
        if families::by_gguf(&m.architecture).is_none() && !cached.exists() {
            return Err(ModelError::UnsupportedArch {
                path: cached,
                arch: format!(
                    "{} (manifest model '{spec}', not downloaded)",
                    m.architecture
                ),
                supported: families::names(),
            });
        }
        return Ok(ModelPath::Gguf(m.ensure(&cfg.cache_dir)?));
    }
    if spec.contains('/') || spec.ends_with(".gguf") {
        return Err(ModelError::Io {
            path: path.to_path_buf(),
            error: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
        });
    }
    Err(ConfigError::UnknownModel {
        name: spec.into(),
        known: manifest.known(),
    }
    .into())
}

fn classify(path: PathBuf) -> ModelPath {
    if path.is_dir() {
        ModelPath::Safetensors(path)
    } else {
        ModelPath::Gguf(path)
    }
}

/// A model ready to run.
pub struct Loaded {
    pub model: Model,
    pub tokenizer: Tokenizer,
    pub chat: Option<ChatTemplate>,
    pub path: ModelPath,
    /// Open + read + build weights and tokenizer, wall clock.
    pub load_time: Duration,
    /// Bytes of the weight files on disk.
    pub file_bytes: u64,
    /// Where a GGUF's load time went (none for safetensors).
    pub split: Option<mapped::LoadSplit>,
    /// The GPU's driver figures (NVML), when the model is on a GPU and they can be read.
    pub(crate) gpu: Option<crate::measure::gpu::Gpu>,
}

pub use crate::config::Kernels;

/// Resolves and loads `cfg.model` onto its device, its matmuls run by `kernels`.
pub fn load(cfg: &ModelConfig, kernels: Kernels) -> Result<Loaded, ModelError> {
    let path = resolve(cfg)?;
    // Opening a GPU (its context) is part of what a person waits for before the model is ready.
    let start = Instant::now();
    let device = cfg.device.open()?;
    let open_s = start.elapsed().as_secs_f64();
    let mut loaded = match &path {
        ModelPath::Gguf(p) => load_gguf(p, cfg, &device, kernels)?,
        ModelPath::Safetensors(p) => load_dir(p, cfg, &device, kernels)?,
    };
    device
        .synchronize()
        .map_err(ModelError::candle("synchronizing the device after load"))?;
    loaded.load_time = start.elapsed();
    if let Some(d) = loaded.split.as_mut().and_then(|s| s.device.as_mut()) {
        d.open_s = open_s;
    }
    if let crate::config::DeviceSpec::Cuda(n) = cfg.device {
        loaded.gpu = crate::measure::gpu::Gpu::open(n).ok();
    }
    loaded.path = path;
    if let Some(file) = &cfg.chat_template {
        loaded.chat = Some(template_file(file, &loaded.tokenizer)?);
    }
    Ok(loaded)
}

fn load_gguf(
    path: &Path,
    cfg: &ModelConfig,
    device: &candle_core::Device,
    kernels: Kernels,
) -> Result<Loaded, ModelError> {
    let _span = tracing::info_span!("load_gguf").entered();
    let mut split = mapped::LoadSplit {
        mode: cfg.load,
        ..Default::default()
    };
    let mut clock = Instant::now();
    let mut lap = || {
        let s = clock.elapsed().as_secs_f64();
        clock = Instant::now();
        s
    };
    let mut g = Gguf::open(path)?;
    let family = arch::check_arch(&g.path, &g.architecture()?)?;
    let cfg_read = match family.engine {
        families::Engine::Gemma => Config::Gemma(arch::GemmaConfig::from_gguf(&g, family)?),
        families::Engine::Llama => Config::Llama(arch::LlamaConfig::from_gguf(&g, family)?),
        families::Engine::Qwen35 => Config::Qwen35(qwen35_config(&g, family)?),
    };
    split.header_s = lap();
    let tokenizer = Tokenizer::from_gguf(&g)?;
    let chat = match g
        .get("tokenizer.chat_template")
        .and_then(|v| v.to_string().ok())
    {
        Some(src) => Some(chat_template(path, src, &tokenizer)?),
        None => None,
    };
    split.tokenizer_s = lap();
    let file_bytes = g.file_bytes;
    let map = match cfg.load {
        LoadMode::Mmap => Some(g.map()?),
        LoadMode::Copy => None,
    };
    let repack = cfg.repack.wanted(kernels.ours(device))?;
    let mut src = weights::GgufSource::new(&mut g, device.clone(), map, kernels, repack);
    let model = match cfg_read {
        Config::Gemma(c) => Model::Gemma(gemma::Gemma::load(c, &mut src, cfg.dtype)?),
        Config::Llama(c) => Model::Llama(Llama::load(c, &mut src, cfg.dtype)?),
        Config::Qwen35(c) => Model::Qwen35(qwen35::Qwen35::load(c, &mut src, cfg.dtype)?),
    };
    split.weights_s = lap();
    if let Some(m) = src.mapping() {
        split.first_touch_s = m.touch(&src.mapped_ranges).as_secs_f64();
    }
    split.mapped_bytes = src.mapped_bytes;
    split.copied_bytes = src.copied_bytes;
    split.repack_s = src.repack_s;
    split.repacked_bytes = src.repacked_bytes;
    split.device = src.device_load.take();
    Ok(Loaded {
        model,
        tokenizer,
        chat,
        path: ModelPath::Gguf(path.into()),
        load_time: Duration::ZERO,
        file_bytes,
        split: Some(split),
        gpu: None,
    })
}

/// The hyper-parameters read from a GGUF, one kind per engine.
enum Config {
    Llama(arch::LlamaConfig),
    Gemma(arch::GemmaConfig),
    Qwen35(families::qwen35::Qwen35Config),
}

/// A Qwen3.5 file's hyper-parameters through the validation pass.
fn qwen35_config(
    g: &Gguf,
    family: &'static families::Family,
) -> Result<families::qwen35::Qwen35Config, ModelError> {
    validate::qwen35_config(g, family).map_err(|problems| ModelError::Rejected {
        path: g.path.clone(),
        problems: validate::Problems(problems),
    })
}

fn load_dir(
    dir: &Path,
    cfg: &ModelConfig,
    device: &candle_core::Device,
    kernels: Kernels,
) -> Result<Loaded, ModelError> {
    let _span = tracing::info_span!("load_safetensors").entered();
    let config_path = dir.join("config.json");
    if !config_path.exists() {
        return Err(ModelError::Invalid {
            path: dir.into(),
            detail: "a model directory needs config.json, tokenizer.json and *.safetensors".into(),
        });
    }
    let gemma = arch::hf_model_type(&config_path)
        .and_then(|t| families::by_hf(&t))
        .is_some_and(|f| f.engine == families::Engine::Gemma);
    let (llama_cfg, gemma_cfg) = if gemma {
        (None, Some(arch::GemmaConfig::from_hf_json(&config_path)?))
    } else {
        (Some(arch::LlamaConfig::from_hf_json(&config_path)?), None)
    };
    let ids = special_ids(&config_path)?;
    let tok_path = dir.join("tokenizer.json");
    if !tok_path.exists() {
        return Err(ModelError::NoTokenizer {
            path: dir.into(),
            detail: "tokenizer.json is missing".into(),
        });
    }
    let tokenizer = Tokenizer::from_file(&tok_path, ids.0, ids.1)?;
    let chat = match read_chat_template(dir)? {
        Some(src) => Some(chat_template(dir, &src, &tokenizer)?),
        None => None,
    };
    let files = weights::safetensors_files(dir)?;
    let file_bytes = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let mut src = weights::SafetensorsSource::open(dir, device, kernels)?;
    let model = match (llama_cfg, gemma_cfg) {
        (_, Some(c)) => Model::Gemma(gemma::Gemma::load(c, &mut src, cfg.dtype)?),
        (Some(c), None) => Model::Llama(Llama::load(c, &mut src, cfg.dtype)?),
        (None, None) => unreachable!("one config is read; this is a bug"),
    };
    Ok(Loaded {
        model,
        tokenizer,
        chat,
        path: ModelPath::Safetensors(dir.into()),
        load_time: Duration::ZERO,
        file_bytes,
        split: None,
        gpu: None,
    })
}

/// A chat template read from `file` (`--chat-template`), for a model without one.
pub fn template_file(file: &Path, tok: &Tokenizer) -> Result<ChatTemplate, ModelError> {
    let src = crate::files::read_text(file, crate::files::MAX_INPUT_BYTES)
        .map_err(ModelError::io(file))?;
    chat_template(file, &src, tok)
}

fn chat_template(path: &Path, src: &str, tok: &Tokenizer) -> Result<ChatTemplate, ModelError> {
    let name = |id: Option<u32>| {
        id.and_then(|i| tok.inner().id_to_token(i))
            .unwrap_or_default()
    };
    ChatTemplate::new(src, &name(tok.info.bos_id), &name(tok.info.eos_id)).map_err(|detail| {
        ModelError::Invalid {
            path: path.into(),
            detail,
        }
    })
}

/// `bos_token_id` and `eos_token_id` of a `config.json` (the first id when a list).
fn special_ids(config: &Path) -> Result<(Option<u32>, Option<u32>), ModelError> {
    let text = crate::files::read_text(config, crate::files::MAX_INPUT_BYTES)
        .map_err(ModelError::io(config))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| ModelError::Invalid {
        path: config.into(),
        detail: e.to_string(),
    })?;
    let id = |key: &str| {
        let x = &v[key];
        x.as_u64()
            .or_else(|| {
                x.as_array()
                    .and_then(|a| a.first())
                    .and_then(|f| f.as_u64())
            })
            .map(|i| i as u32)
    };
    Ok((id("bos_token_id"), id("eos_token_id")))
}

/// `chat_template` from `tokenizer_config.json`, when it is a plain string.
fn read_chat_template(dir: &Path) -> Result<Option<String>, ModelError> {
    let path = dir.join("tokenizer_config.json");
    let Ok(text) = crate::files::read_text(&path, crate::files::MAX_INPUT_BYTES) else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| ModelError::Invalid {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    Ok(v["chat_template"].as_str().map(str::to_string))
}
