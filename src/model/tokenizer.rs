//! Tokenizers: built from GGUF metadata (`tokenizer.ggml.*`, byte-level BPE as llama.cpp builds it)
//! or loaded from a model directory's `tokenizer.json`; plus the special ids (bos, eos, pad) and the
//! `add_bos_token` rule, which callers get through [`Tokenizer::encode`].
//!
//! SentencePiece BPE (`llama`, Gemma) is built in [`super::tokenizer_spm`].
//!
//! candle's own `TokenizerFromGguf` adds a prefix space for `pre = smollm` (llama.cpp does not), so
//! the BPE is built here: byte-level, no prefix space, split first as llama.cpp splits for the
//! file's `tokenizer.ggml.pre` ([`super::pretok`]; an unknown name is refused).

use std::path::Path;

use serde::Serialize;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::AddedToken;

use super::gguf::Gguf;
use crate::error::ModelError;

/// GGUF `token_type` values that mark control and user-defined tokens (matched as whole strings).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// Facts about a tokenizer, for `inspect` and records.
#[derive(Debug, Clone, Serialize)]
pub struct TokenizerInfo {
    /// `gpt2` (byte-level BPE) or `llama` (SentencePiece BPE) for GGUF, or `tokenizer.json`.
    pub kind: String,
    /// The GGUF pre-tokenizer name (`tokenizer.ggml.pre`), if any.
    pub pre: Option<String>,
    pub vocab_size: usize,
    pub bos_id: Option<u32>,
    pub eos_id: Option<u32>,
    pub pad_id: Option<u32>,
    /// Whether a BOS token is put before every encoded prompt.
    pub add_bos: bool,
    /// Whether an EOS token is put after every encoded prompt (`tokenizer.ggml.add_eos_token`).
    pub add_eos: bool,
    /// Time to build the tokenizer from the GGUF metadata, in milliseconds (part of the load
    /// clock; 0 for a `tokenizer.json`, which is read rather than built).
    pub build_ms: f64,
}

/// A tokenizer with the model's special-token rules.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub info: TokenizerInfo,
}

impl Tokenizer {
    /// Builds the tokenizer described by a GGUF file's metadata.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, ModelError> {
        let no_tok = |detail: &str| ModelError::NoTokenizer {
            path: gguf.path.clone(),
            detail: detail.into(),
        };
        let model = gguf
            .get("tokenizer.ggml.model")
            .ok_or_else(|| no_tok("metadata key tokenizer.ggml.model is missing"))?;
        let model = model
            .to_string()
            .map_err(|_| no_tok("tokenizer.ggml.model is not a string"))?
            .clone();
        let tokens = gguf
            .opt_strings("tokenizer.ggml.tokens")?
            .ok_or_else(|| no_tok("tokenizer.ggml.tokens is missing"))?;
        let types = gguf
            .opt_ints("tokenizer.ggml.token_type")?
            .unwrap_or_default();
        let pre = gguf
            .get("tokenizer.ggml.pre")
            .and_then(|v| v.to_string().ok())
            .cloned();
        let id = |key: &str| gguf.opt_u64(key).and_then(|x| u32::try_from(x).ok());
        let started = std::time::Instant::now();
        // llama.cpp's default when the file has no add_bos_token: SentencePiece yes, BPE by its
        // pre-tokenizer.
        let mut bpe_add_bos = true;
        let built = match model.as_str() {
            "gpt2" => {
                let merges = gguf
                    .opt_strings("tokenizer.ggml.merges")?
                    .ok_or_else(|| no_tok("tokenizer.ggml.merges is missing"))?;
                let pre = super::pretok::lookup(pre.as_deref()).map_err(|detail| {
                    ModelError::Invalid { path: gguf.path.clone(), detail }
                })?;
                bpe_add_bos = pre.add_bos;
                build_bpe(&tokens, &merges, &types, &pre)
            }
            "llama" => {
                let scores = scores(gguf)?.ok_or_else(|| no_tok("tokenizer.ggml.scores is missing"))?;
                if scores.len() != tokens.len() {
                    return Err(no_tok("tokenizer.ggml.scores and tokenizer.ggml.tokens differ in length"));
                }
                let prefix = gguf.opt_bool("tokenizer.ggml.add_space_prefix").unwrap_or(true);
                super::tokenizer_spm::build_spm(&tokens, &scores, &types, id("tokenizer.ggml.unknown_token_id"), prefix)
            }
            _ => {
                return Err(ModelError::Invalid {
                    path: gguf.path.clone(),
                    detail: format!("tokenizer.ggml.model = '{model}' is not supported (gpt2 byte-level BPE and llama SentencePiece BPE are)"),
                })
            }
        };
        let inner = built.map_err(|e| ModelError::Invalid {
            path: gguf.path.clone(),
            detail: format!("building the {model} tokenizer: {e}"),
        })?;
        let build_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(model = %model, build_ms, "tokenizer built");
        let info = TokenizerInfo {
            build_ms,
            kind: model,
            pre,
            vocab_size: tokens.len(),
            bos_id: id("tokenizer.ggml.bos_token_id"),
            eos_id: id("tokenizer.ggml.eos_token_id"),
            pad_id: id("tokenizer.ggml.padding_token_id"),
            add_bos: gguf
                .opt_bool("tokenizer.ggml.add_bos_token")
                .unwrap_or(bpe_add_bos),
            add_eos: gguf
                .opt_bool("tokenizer.ggml.add_eos_token")
                .unwrap_or(false),
        };
        Ok(Self { inner, info })
    }

    /// Loads `tokenizer.json`; special ids come from the model's config (`bos`, `eos`).
    pub(crate) fn from_file(
        path: &Path,
        bos_id: Option<u32>,
        eos_id: Option<u32>,
    ) -> Result<Self, ModelError> {
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| ModelError::Invalid {
            path: path.to_path_buf(),
            detail: format!("cannot load tokenizer: {e}"),
        })?;
        let info = TokenizerInfo {
            build_ms: 0.0,
            kind: "tokenizer.json".into(),
            pre: None,
            vocab_size: inner.get_vocab_size(true),
            bos_id,
            eos_id,
            pad_id: None,
            add_bos: false,
            add_eos: false,
        };
        Ok(Self { inner, info })
    }

    /// Encodes text; special-token strings (e.g. `<|im_start|>`) become their ids; a BOS is put
    /// first and an EOS last when the model asks for them (llama.cpp's `add_special`).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| self.error("encoding", e))?;
        let mut ids = Vec::with_capacity(enc.len() + 1);
        if let (true, Some(bos)) = (self.info.add_bos, self.info.bos_id) {
            ids.push(bos);
        }
        ids.extend_from_slice(enc.get_ids());
        if let (true, Some(eos)) = (self.info.add_eos, self.info.eos_id) {
            ids.push(eos);
        }
        Ok(ids)
    }

    /// Decodes ids to text, keeping special tokens.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| self.error("decoding", e))
    }

    /// The underlying `tokenizers` object (e.g. to save it as `tokenizer.json`).
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    fn error(&self, what: &str, e: impl std::fmt::Display) -> ModelError {
        ModelError::Invalid {
            path: "tokenizer".into(),
            detail: format!("{what}: {e}"),
        }
    }
}

/// `tokenizer.ggml.scores`, when present.
fn scores(gguf: &Gguf) -> Result<Option<Vec<f32>>, ModelError> {
    let Some(v) = gguf.get("tokenizer.ggml.scores") else {
        return Ok(None);
    };
    let bad = || ModelError::Invalid {
        path: gguf.path.clone(),
        detail: "tokenizer.ggml.scores is not an array of floats".into(),
    };
    let arr = v.to_vec().map_err(|_| bad())?;
    arr.iter()
        .map(|x| {
            x.to_f32()
                .or_else(|_| x.to_f64().map(|f| f as f32))
                .map_err(|_| bad())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Byte-level BPE from vocab, merges and token types, as llama.cpp tokenizes `gpt2` models.
pub(crate) fn build_bpe(
    tokens: &[String],
    merges: &[String],
    types: &[i64],
    pre: &super::pretok::PreTok,
) -> Result<tokenizers::Tokenizer, String> {
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    // A merge listed twice keeps its first rank, as llama.cpp's rank map does (`tokenizers`
    // would keep the last).
    let mut seen = std::collections::HashSet::new();
    let mut pairs = Vec::with_capacity(merges.len());
    for m in merges {
        let (a, b) = m
            .split_once(' ')
            .ok_or_else(|| format!("merge '{m}' has no space"))?;
        if seen.insert((a, b)) {
            pairs.push((a.to_string(), b.to_string()));
        }
    }
    let merges = pairs;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(pre.ignore_merges)
        .build()
        .map_err(|e| e.to_string())?;
    let mut tok = tokenizers::Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre.build()?));
    tok.with_decoder(Some(ByteLevel::default()));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, &t)| t == TOKEN_TYPE_CONTROL || t == TOKEN_TYPE_USER_DEFINED)
        .map(|(s, _)| AddedToken::from(s.clone(), true))
        .collect();
    tok.add_special_tokens(special).map_err(|e| e.to_string())?;
    Ok(tok)
}
