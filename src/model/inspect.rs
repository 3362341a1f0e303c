//! What a model file is, read from its header alone (works for architectures the engine cannot
//! run yet): architecture, parameters, tensor types, bytes, sha256, shape, RoPE, tokenizer, chat
//! template, and the manifest entry (licence) when the file is a known one; for a GGUF also the
//! problems the validation pass finds (the same pass `generate` runs), listed rather than fatal.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use candle_core::quantized::GgmlDType;

use super::arch::{LlamaConfig, RopeScaling};
use super::families::{self, Family};
use super::gguf::Gguf;
use super::pretok::{self, PreTok};
use super::validate::{self, Problem};
use super::{arch, manifest, ModelPath};
use crate::error::ModelError;
use crate::kernels::QType;

/// Everything `tokfire inspect` shows.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    pub path: ModelPath,
    pub architecture: String,
    /// Total parameters (elements of every tensor).
    pub parameters: u64,
    pub tensor_count: usize,
    /// Tensor count per storage type (e.g. `q4_1`, `f32`).
    pub tensor_types: BTreeMap<String, usize>,
    /// Quantized types among them that no kernel of ours runs: candle's quantized matmul does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candle_kernels: Vec<String>,
    /// Bytes on disk.
    pub file_bytes: u64,
    /// Hex sha256 of the file (GGUF only).
    pub sha256: Option<String>,
    pub context_length: Option<u64>,
    pub rope_theta: Option<f64>,
    pub rope_dim: Option<u64>,
    pub layers: Option<u64>,
    pub heads: Option<u64>,
    pub kv_heads: Option<u64>,
    pub hidden: Option<u64>,
    pub ffn: Option<u64>,
    pub vocab_size: Option<u64>,
    /// `tokenizer.ggml.model` (e.g. `gpt2`, `llama`) or `tokenizer.json`.
    pub tokenizer: Option<String>,
    pub tokenizer_pre: Option<String>,
    pub bos_id: Option<u64>,
    pub eos_id: Option<u64>,
    pub add_bos: Option<bool>,
    /// The whole chat template, when there is one (the text report shows its first line).
    pub chat_template: Option<String>,
    /// Manifest name and licence when the file's sha256 is a manifest entry.
    pub manifest_name: Option<String>,
    pub license: Option<String>,
    /// What the validation pass found wrong; a model with problems does not load.
    pub problems: Vec<Problem>,
    /// Gemma 3's sliding window, layer pattern, RoPE bases and soft-capping (Gemma only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemma: Option<GemmaReport>,
    /// A hybrid model's layer pattern and per-sequence state (Qwen3.5 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridReport>,
    /// The family that runs the file and what it applies (none for an unsupported one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<FamilyReport>,
}

/// What the family running a model applies beyond the plain llama block.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyReport {
    pub about: String,
    pub qkv_bias: bool,
    pub qk_norm: bool,
    /// `interleaved` (llama.cpp NORM) or `halves` (NEOX).
    pub rope_pairs: String,
    /// `none`, `linear ×F`, `llama3 rope_freqs` (a GGUF's per-frequency divisors), LongRoPE.
    pub rope_scaling: String,
    /// Rotated dimensions of a head when fewer than all (partial rotary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_dims: Option<usize>,
    /// Layers without RoPE (SmolLM3's every 4th).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nope_layers: Vec<usize>,
    /// The pre-tokenizer type llama.cpp would use, for a byte-level BPE vocabulary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_tokenizer: Option<String>,
}

impl FamilyReport {
    /// `split`: the pre-tokenizer type of a byte-level BPE file, when known.
    fn new(f: &Family, g: &Gguf, cfg: Option<LlamaConfig>, split: Option<PreTok>) -> Self {
        let freqs = g
            .content
            .tensor_infos
            .contains_key(families::llama::ROPE_FREQS);
        let scaling = cfg.as_ref().map(|c| c.rope_scaling);
        let mut rope_scaling = match (scaling, freqs) {
            (_, true) if f.rope_freqs => "llama3 (rope_freqs.weight)".to_string(),
            (Some(RopeScaling::Linear { factor }), _) => format!("linear ×{factor}"),
            (
                Some(RopeScaling::Yarn {
                    factor,
                    original_context,
                    beta_fast,
                    beta_slow,
                    mscale,
                }),
                _,
            ) => format!(
                "yarn ×{factor} (original context {original_context}, β {beta_fast}/{beta_slow}, \
                 cos/sin ×{mscale:.3})"
            ),
            (Some(s), _) => format!("{s:?}").to_lowercase(),
            (None, _) => "n/a (the file has problems)".into(),
        };
        if f.engine == families::Engine::Gemma && scaling.is_some_and(|s| s != RopeScaling::None) {
            rope_scaling.push_str(" on the global layers");
        }
        if let Some(l) = cfg.as_ref().and_then(|c| c.long_rope) {
            rope_scaling = format!(
                "LongRoPE, {:?} factors (original context {}), cos/sin ×{:.3}",
                l.factors, l.original_context, l.attn_factor
            )
            .to_lowercase();
        }
        let rope_dims = cfg
            .as_ref()
            .filter(|c| c.rope_dims > 0)
            .map(|c| c.rope_dims);
        let nope_layers = cfg
            .as_ref()
            .map(|c| (0..c.layers).filter(|&l| !c.ropes(l)).collect())
            .unwrap_or_default();
        Self {
            about: f.about.into(),
            qkv_bias: f.qkv_bias,
            qk_norm: f.qk_norm,
            rope_pairs: if f.rope_interleaved {
                "interleaved"
            } else {
                "halves"
            }
            .into(),
            rope_scaling,
            rope_dims,
            nope_layers,
            pre_tokenizer: split.map(|p| p.kind.to_string()),
        }
    }
}

/// What a Gemma 3 model adds to the llama-family shape.
#[derive(Debug, Clone, Serialize)]
pub struct GemmaReport {
    /// Keys a sliding-window layer's query sees, in tokens.
    pub sliding_window: usize,
    /// The layers that attend globally (every other layer is a sliding-window layer).
    pub global_layers: Vec<usize>,
    /// Head width (Gemma's heads are wider than hidden / heads).
    pub head_dim: usize,
    /// RoPE base of the global layers.
    pub rope_global_theta: f64,
    /// RoPE base of the sliding-window layers.
    pub rope_local_theta: f64,
    /// Scores are divided by the square root of this.
    pub query_pre_attn_scalar: f64,
    /// Final-logit soft-cap, when the model has one.
    pub final_softcap: Option<f64>,
    /// Attention-score soft-cap, when the model has one.
    pub attn_softcap: Option<f64>,
}

impl GemmaReport {
    pub fn new(c: &arch::GemmaConfig) -> Self {
        Self {
            sliding_window: c.sliding_window,
            global_layers: (0..c.base.layers).filter(|&l| !c.is_local(l)).collect(),
            head_dim: c.base.head_dim,
            rope_global_theta: c.base.rope_theta,
            rope_local_theta: c.rope_local_theta,
            query_pre_attn_scalar: c.query_pre_attn_scalar,
            final_softcap: c.final_softcap,
            attn_softcap: c.attn_softcap,
        }
    }
}

/// What a hybrid (recurrent + attention) model holds per sequence.
#[derive(Debug, Clone, Serialize)]
pub struct HybridReport {
    /// The Gated DeltaNet layers.
    pub recurrent_layers: Vec<usize>,
    /// The full-attention layers (the only ones with KV rows).
    pub attention_layers: Vec<usize>,
    /// Head width of the attention layers.
    pub head_dim: usize,
    /// Recurrent state one sequence holds, every recurrent layer (conv windows and state
    /// matrices, f32): fixed, whatever the sequence's length.
    pub state_bytes_per_seq: usize,
    /// KV bytes one token takes across the attention layers (f32).
    pub kv_bytes_per_token: usize,
    /// Key heads, value heads and head size of the Gated DeltaNet layers; conv width.
    pub delta_heads: (usize, usize, usize),
    pub conv_kernel: usize,
    /// M-RoPE sections.
    pub rope_sections: [usize; 4],
    /// Multi-token-prediction blocks in the file (`nextn_predict_layers`).
    pub mtp_blocks: usize,
}

impl HybridReport {
    pub fn new(c: &super::families::qwen35::Qwen35Config) -> Self {
        let layers = |want: bool| {
            (0..c.base.layers)
                .filter(|&l| c.recurrent[l] == want)
                .collect()
        };
        let attention = c.attention_layers();
        Self {
            recurrent_layers: layers(true),
            attention_layers: layers(false),
            head_dim: c.base.head_dim,
            state_bytes_per_seq: c.state_bytes(),
            kv_bytes_per_token: 2 * attention * c.base.kv_heads * c.base.head_dim * 4,
            delta_heads: (c.k_heads, c.v_heads, c.state),
            conv_kernel: c.conv_kernel,
            rope_sections: c.sections,
            mtp_blocks: c.base.nextn,
        }
    }
}

/// Inspects a GGUF file.
pub fn inspect_gguf(path: &Path) -> Result<ModelReport, ModelError> {
    let g = Gguf::open_unchecked(path)?;
    let mut problems = g.problems.clone();
    let arch = match g.architecture() {
        Ok(a) => a,
        Err(_) => {
            let found = g
                .get("general.architecture")
                .map_or_else(|| "nothing (the key is missing)".into(), validate::show);
            problems.push(Problem::new(
                "metadata key general.architecture",
                found,
                "a string such as llama",
            ));
            "?".into()
        }
    };
    let mut gemma = None;
    let mut hybrid = None;
    let mut llama_cfg = None;
    match families::by_gguf(&arch) {
        Some(f) if f.engine == families::Engine::Qwen35 => match validate::qwen35_config(&g, f) {
            Ok(c) => {
                hybrid = Some(HybridReport::new(&c));
                llama_cfg = Some(c.base);
            }
            Err(p) => problems.extend(p),
        },
        Some(f) if f.engine == families::Engine::Gemma => match validate::gemma_config(&g, f) {
            Ok(c) => {
                gemma = Some(GemmaReport::new(&c));
                llama_cfg = Some(c.base);
            }
            Err(p) => problems.extend(p),
        },
        Some(f) => match validate::llama_config(&g, f) {
            Ok(c) => llama_cfg = Some(c),
            Err(p) => problems.extend(p),
        },
        None => {}
    }
    // A byte-level BPE file's pre-tokenizer, as loading would look it up.
    let is_bpe = g
        .get("tokenizer.ggml.model")
        .and_then(|v| v.to_string().ok())
        .is_some_and(|m| m == "gpt2");
    let pre = g.get("tokenizer.ggml.pre").and_then(|v| v.to_string().ok());
    let split = match is_bpe.then(|| pretok::lookup(pre.map(String::as_str))) {
        Some(Err(e)) => {
            problems.push(Problem::new(
                "metadata key tokenizer.ggml.pre",
                e,
                "a known name",
            ));
            None
        }
        other => other.and_then(Result::ok),
    };
    let family = families::by_gguf(&arch).map(|f| FamilyReport::new(f, &g, llama_cfg, split));
    let key = |k: &str| format!("{arch}.{k}");
    let mut types = BTreeMap::new();
    let mut candle_kernels = std::collections::BTreeSet::new();
    let mut parameters = 0u64;
    for info in g.content.tensor_infos.values() {
        let name = format!("{:?}", info.ggml_dtype).to_lowercase();
        let dense = matches!(
            info.ggml_dtype,
            GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16
        );
        if !dense && QType::from_ggml(info.ggml_dtype).is_none() {
            candle_kernels.insert(name.clone());
        }
        *types.entry(name).or_insert(0) += 1;
        parameters = parameters.saturating_add(info.shape.elem_count() as u64);
    }
    let sha256 = sha256_file(path)?;
    let entry = manifest::manifest()?.by_sha256(&sha256).cloned();
    let tokens = g
        .get("tokenizer.ggml.tokens")
        .and_then(|v| v.to_vec().ok())
        .map(|v| v.len() as u64);
    let template = g
        .get("tokenizer.chat_template")
        .and_then(|v| v.to_string().ok());
    Ok(ModelReport {
        path: ModelPath::Gguf(path.into()),
        tensor_count: g.content.tensor_infos.len(),
        tensor_types: types,
        candle_kernels: candle_kernels.into_iter().collect(),
        parameters,
        file_bytes: g.file_bytes,
        sha256: Some(sha256),
        context_length: g.opt_u64(&key("context_length")),
        rope_theta: g.opt_f64(&key("rope.freq_base")),
        rope_dim: g
            .opt_u64(&key("rope.dimension_count"))
            .or_else(|| g.opt_u64(&key("attention.key_length"))),
        layers: g.opt_u64(&key("block_count")),
        heads: g.opt_u64(&key("attention.head_count")),
        kv_heads: g.opt_u64(&key("attention.head_count_kv")),
        hidden: g.opt_u64(&key("embedding_length")),
        ffn: g.opt_u64(&key("feed_forward_length")),
        vocab_size: g.opt_u64(&key("vocab_size")).or(tokens),
        tokenizer: g
            .get("tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok())
            .cloned(),
        tokenizer_pre: g
            .get("tokenizer.ggml.pre")
            .and_then(|v| v.to_string().ok())
            .cloned(),
        bos_id: g.opt_u64("tokenizer.ggml.bos_token_id"),
        eos_id: g.opt_u64("tokenizer.ggml.eos_token_id"),
        add_bos: g.opt_bool("tokenizer.ggml.add_bos_token"),
        chat_template: template.cloned(),
        manifest_name: entry.as_ref().map(|e| e.name.clone()),
        license: entry.map(|e| e.license),
        architecture: arch,
        problems,
        gemma,
        hybrid,
        family,
    })
}

/// Inspects a safetensors model directory through its `config.json` and tensor headers.
pub(crate) fn inspect_dir(dir: &Path) -> Result<ModelReport, ModelError> {
    let config = dir.join("config.json");
    let family = arch::hf_model_type(&config).and_then(|t| families::by_hf(&t));
    let (cfg, gemma) = match family.map(|f| f.engine) {
        Some(families::Engine::Gemma) => {
            let g = arch::GemmaConfig::from_hf_json(&config)?;
            (g.base.clone(), Some(GemmaReport::new(&g)))
        }
        _ => (arch::LlamaConfig::from_hf_json(&config)?, None),
    };
    let files = super::weights::safetensors_files(dir)?;
    // SAFETY: read-only mapping of files nobody truncates meanwhile.
    let st = unsafe { candle_core::safetensors::MmapedSafetensors::multi(&files) }.map_err(
        ModelError::candle(format!("{}: opening safetensors", dir.display())),
    )?;
    let mut types = BTreeMap::new();
    let mut parameters = 0u64;
    let tensors = st.tensors();
    for (_, view) in &tensors {
        *types
            .entry(format!("{:?}", view.dtype()).to_lowercase())
            .or_insert(0) += 1;
        parameters += view.shape().iter().product::<usize>() as u64;
    }
    let template = crate::files::read_text(
        &dir.join("tokenizer_config.json"),
        crate::files::MAX_INPUT_BYTES,
    )
    .ok()
    .and_then(|t| {
        let v: serde_json::Value = serde_json::from_str(&t).ok()?;
        v["chat_template"].as_str().map(str::to_string)
    });
    Ok(ModelReport {
        path: ModelPath::Safetensors(dir.into()),
        architecture: cfg.arch.clone(),
        parameters,
        tensor_count: tensors.len(),
        tensor_types: types,
        candle_kernels: Vec::new(),
        file_bytes: files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum(),
        sha256: None,
        context_length: Some(cfg.context_length as u64),
        rope_theta: Some(cfg.rope_theta),
        rope_dim: Some(cfg.head_dim as u64),
        layers: Some(cfg.layers as u64),
        heads: Some(cfg.heads as u64),
        kv_heads: Some(cfg.kv_heads as u64),
        hidden: Some(cfg.hidden as u64),
        ffn: Some(cfg.ffn as u64),
        vocab_size: Some(cfg.vocab as u64),
        tokenizer: dir
            .join("tokenizer.json")
            .exists()
            .then(|| "tokenizer.json".to_string()),
        tokenizer_pre: None,
        bos_id: None,
        eos_id: None,
        add_bos: None,
        chat_template: template,
        manifest_name: None,
        license: None,
        problems: Vec::new(),
        gemma,
        hybrid: None,
        family: None,
    })
}

/// Hex sha256 of a file, read in 1 MiB chunks.
pub(crate) fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut f = std::fs::File::open(path).map_err(ModelError::io(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(ModelError::io(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
