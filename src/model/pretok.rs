//! The pre-tokenizers of byte-level BPE models, by their GGUF name (`tokenizer.ggml.pre`), each
//! exactly as llama.cpp 0c1e57098 splits text (`llm_tokenizer_bpe` in `llama-vocab.cpp`): a
//! sequence of regexes, each splitting every piece the previous one left, matches and the text
//! between them kept as pieces; then GPT-2's byte encoding. Some types also take a whole piece
//! that is in the vocabulary as one token before merging (`ignore_merges`) or put a BOS first
//! when the file does not say. A name outside [`KNOWN`] is refused: a guessed split changes token
//! ids, prompt lengths and prefill work without a word.

use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::SplitDelimiterBehavior;

/// GPT-2's word regex, as llama.cpp writes it (no trailing `\s+`; what it leaves is a piece).
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
/// Llama 3's regex with the case-insensitive contractions spelled out, as llama.cpp adapts it.
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's: Llama 3's with digits one by one.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// GPT-4o's (Phi-4): words split at case changes, contractions kept on the word.
const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Mistral's Tekken: GPT-4o's without contractions, digits one by one.
const TEKKEN: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// How one family of `tokenizer.ggml.pre` names splits text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreTok {
    /// What llama.cpp calls the type (`LLAMA_VOCAB_PRE_TYPE_*`, lower case), for messages.
    pub kind: &'static str,
    /// The regexes, applied in order.
    pub regexes: &'static [&'static str],
    /// A piece that is a vocabulary entry becomes that token without merging.
    pub ignore_merges: bool,
    /// A BOS is put first when `tokenizer.ggml.add_bos_token` is absent.
    pub add_bos: bool,
}

const fn pre(
    kind: &'static str,
    regexes: &'static [&'static str],
    ignore_merges: bool,
    add_bos: bool,
) -> PreTok {
    PreTok {
        kind,
        regexes,
        ignore_merges,
        add_bos,
    }
}

const DEFAULT: PreTok = pre(
    "default",
    &[r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    false,
    false,
);
const GPT2_TYPE: PreTok = pre("gpt2", &[GPT2], false, false);
const SMOLLM: PreTok = pre("smollm", &[r"\p{N}", GPT2], false, false);
const LLAMA3_TYPE: PreTok = pre("llama3", &[LLAMA3], true, true);
const QWEN2_TYPE: PreTok = pre("qwen2", &[QWEN2], false, false);
const GPT4O_TYPE: PreTok = pre("gpt4o", &[GPT4O], false, false);
const TEKKEN_TYPE: PreTok = pre("tekken", &[TEKKEN], true, true);

/// Every `tokenizer.ggml.pre` name implemented here, with its type (llama.cpp's name lists).
pub const KNOWN: &[(&str, PreTok)] = &[
    ("default", DEFAULT),
    ("gpt-2", GPT2_TYPE),
    ("phi-2", GPT2_TYPE),
    ("roberta-bpe", GPT2_TYPE),
    ("smollm", SMOLLM),
    ("starcoder", SMOLLM),
    ("refact", SMOLLM),
    ("codeshell", SMOLLM),
    ("llama3", LLAMA3_TYPE),
    ("llama-v3", LLAMA3_TYPE),
    ("llama-bpe", LLAMA3_TYPE),
    ("falcon3", LLAMA3_TYPE),
    ("pixtral", LLAMA3_TYPE),
    ("qwen2", QWEN2_TYPE),
    ("deepseek-r1-qwen", QWEN2_TYPE),
    ("megrez", QWEN2_TYPE),
    ("stablelm2", QWEN2_TYPE),
    ("gpt-4o", GPT4O_TYPE),
    ("llama4", GPT4O_TYPE),
    ("tekken", TEKKEN_TYPE),
];

/// The type of a `tokenizer.ggml.pre` value (`None`: the key is absent, llama.cpp's `default`),
/// or an error naming the value and what is known.
pub fn lookup(name: Option<&str>) -> Result<PreTok, String> {
    let name = name.unwrap_or("default");
    KNOWN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| *p)
        .ok_or_else(|| {
            let shown: String = name.chars().take(40).collect();
            format!(
                "tokenizer.ggml.pre = {shown:?} is not implemented here, and a guessed split \
                 would change token ids and prompt lengths; known: {}",
                names()
            )
        })
}

/// The known names, comma-separated, for messages and `inspect --families`.
pub fn names() -> String {
    KNOWN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

impl PreTok {
    /// The `tokenizers` pre-tokenizer: the regex splits, then byte encoding without its own regex.
    pub(crate) fn build(&self) -> Result<PreTokenizerWrapper, String> {
        let mut steps: Vec<PreTokenizerWrapper> = Vec::with_capacity(self.regexes.len() + 1);
        for re in self.regexes {
            let split = Split::new(
                SplitPattern::Regex((*re).to_string()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| format!("pre-tokenizer {} regex: {e}", self.kind))?;
            steps.push(split.into());
        }
        steps.push(ByteLevel::new(false, true, false).into());
        Ok(Sequence::new(steps).into())
    }
}
