//! SentencePiece-style BPE from GGUF metadata (`tokenizer.ggml.model = llama`, Gemma 3): the
//! file holds pieces, scores and token types but no merges, so the merges are derived from vocab
//! and scores the way transformers' `SentencePieceExtractor` does it. For every normal piece,
//! each split into two pieces that are both in the vocabulary is a merge (within one piece
//! ordered by the halves' ids); all merges are then stable-sorted by the merged piece's score,
//! highest first. Spaces become `▁`; with `tokenizer.ggml.add_space_prefix` (llama.cpp's
//! default for these files; Gemma 3's converter writes false) a `▁` is also put before the text
//! and after every special token, as llama.cpp does; unknown bytes fall back to `<0xNN>` tokens,
//! control and user-defined tokens are matched whole. Gemma 3's 262 144 pieces give about 513 000 merges; the build takes about a
//! second, once, at load (it is on the load clock, never on a step's).

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::prepend::Prepend;
use tokenizers::normalizers::replace::Replace;
use tokenizers::normalizers::utils::Sequence as NormalizerSequence;
use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper};

/// GGUF `token_type` of a normal piece (the only kind merges are derived for).
const TOKEN_TYPE_NORMAL: i64 = 1;
/// Control and user-defined tokens: matched as whole strings, never split.
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;
/// The SentencePiece space marker.
pub const SPACE: &str = "\u{2581}";

/// The merges of a SentencePiece BPE vocabulary, best (highest merged score) first.
pub fn derive_merges(tokens: &[String], scores: &[f32], types: &[i64]) -> Vec<(String, String)> {
    let vocab: std::collections::HashMap<&str, u32> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i as u32))
        .collect();
    let mut merges: Vec<(u32, u32, f32)> = Vec::new();
    for (i, piece) in tokens.iter().enumerate() {
        if types.get(i).is_some_and(|&t| t != TOKEN_TYPE_NORMAL) {
            continue;
        }
        let score = scores.get(i).copied().unwrap_or(0.0);
        let start = merges.len();
        for (cut, _) in piece.char_indices().skip(1) {
            let (l, r) = piece.split_at(cut);
            if let (Some(&a), Some(&b)) = (vocab.get(l), vocab.get(r)) {
                merges.push((a, b, score));
            }
        }
        merges[start..].sort_by_key(|&(a, b, _)| (a, b));
    }
    // Stable: ties keep vocabulary order, as Python's `sorted` does.
    merges.sort_by(|x, y| y.2.total_cmp(&x.2));
    merges
        .into_iter()
        .map(|(a, b, _)| (tokens[a as usize].clone(), tokens[b as usize].clone()))
        .collect()
}

/// The tokenizer: BPE over `▁`-joined text with byte fallback, special tokens added.
pub fn build_spm(
    tokens: &[String],
    scores: &[f32],
    types: &[i64],
    unk: Option<u32>,
    add_space_prefix: bool,
) -> Result<tokenizers::Tokenizer, String> {
    let merges = derive_merges(tokens, scores, types);
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .fuse_unk(true)
        .byte_fallback(true);
    if let Some(name) = unk.and_then(|i| tokens.get(i as usize)) {
        builder = builder.unk_token(name.clone());
    }
    let bpe = builder.build().map_err(|e| e.to_string())?;
    let mut tok = tokenizers::Tokenizer::new(bpe);
    // Special tokens split the text first; the normalizer then sees each piece between them,
    // so a prepended marker lands at the start and after every special token.
    let space = NormalizerWrapper::from(Replace::new(" ", SPACE).map_err(|e| e.to_string())?);
    let normalizer = match add_space_prefix {
        false => space,
        true => NormalizerWrapper::from(NormalizerSequence::new(vec![
            space,
            NormalizerWrapper::from(Prepend::new(SPACE.into())),
        ])),
    };
    tok.with_normalizer(Some(normalizer))
        .map_err(|e| e.to_string())?;
    let unspace = tokenizers::decoders::DecoderWrapper::Replace(
        Replace::new(SPACE, " ").map_err(|e| e.to_string())?,
    );
    tok.with_decoder(Some(DecoderWrapper::Sequence(DecoderSequence::new(vec![
        unspace,
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
    ]))));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, &t)| t == TOKEN_TYPE_CONTROL || t == TOKEN_TYPE_USER_DEFINED)
        .map(|(s, _)| AddedToken::from(s.clone(), true))
        .collect();
    tok.add_special_tokens(special).map_err(|e| e.to_string())?;
    Ok(tok)
}

#[cfg(test)]
#[path = "tokenizer_spm_tests.rs"]
mod tests;
