//! Validators: pure functions from a model's output text to an outcome (pass, fail, abstain).
//! Kinds: `contains`, `not_contains`, `regex`, `equals` (after trimming) and `json` (the first
//! JSON object in the output, with required fields and expected values). Every text kind is
//! case-insensitive unless the check sets `case_sensitive = true`.

use regex::RegexBuilder;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One string or a list of strings (TOML `value = "x"` or `value = ["x", "y"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// `value = "x"`
    One(String),
    /// `value = ["x", "y"]`
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings, in order.
    pub(crate) fn items(&self) -> Vec<&str> {
        match self {
            Self::One(s) => vec![s.as_str()],
            Self::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// How many of a `contains` check's values must appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Require {
    /// Every value must appear (the default).
    #[default]
    All,
    /// At least one value must appear (for answers with several fair spellings).
    Any,
}

/// One check on the output text; `kind` selects the variant in the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The output contains `value` (all of them, or any with `require = "any"`).
    Contains {
        value: OneOrMany,
        #[serde(default)]
        require: Require,
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The output contains none of `value`.
    NotContains {
        value: OneOrMany,
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The regular expression `pattern` matches somewhere in the output (Rust `regex` syntax).
    Regex {
        pattern: String,
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The trimmed output equals the trimmed `value`.
    Equals {
        value: String,
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The first JSON object in the output has every `required` field (dotted paths for nested
    /// objects) and every field in `values` equal to the expected value (strings compared after
    /// trimming, numbers numerically, a number also matches a string holding it).
    Json {
        #[serde(default)]
        required: Vec<String>,
        #[serde(default)]
        values: BTreeMap<String, Value>,
        #[serde(default)]
        case_sensitive: bool,
    },
}

/// What counts as declining rather than failing; applies only when the checks fail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbstainRule {
    /// Phrases (case-insensitive) that mean the model declined, e.g. "I don't know".
    #[serde(default)]
    pub phrases: Vec<String>,
    /// Hitting the token limit with the checks unmet counts as "no answer yet", not a wrong one.
    #[serde(default)]
    pub on_limit: bool,
}

/// A task's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    /// Every check held (and, for agents, every required call was made).
    Pass,
    /// The answer is wrong; `reason` names the first unmet check or missing call.
    Fail { reason: String },
    /// The model declined or ran out of tokens before answering, as the task defines it.
    Abstain { reason: String },
}

impl Outcome {}

fn fold(s: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        s.to_string()
    } else {
        s.to_lowercase()
    }
}

impl Check {
    /// `Ok(())` when the output satisfies the check, else the reason it does not.
    pub(crate) fn evaluate(&self, output: &str) -> Result<(), String> {
        match self {
            Check::Contains {
                value,
                require,
                case_sensitive,
            } => {
                let hay = fold(output, *case_sensitive);
                let items = value.items();
                let found: Vec<bool> = items
                    .iter()
                    .map(|v| hay.contains(&fold(v, *case_sensitive)))
                    .collect();
                match require {
                    Require::All => match items.iter().zip(&found).find(|(_, f)| !**f) {
                        None => Ok(()),
                        Some((v, _)) => Err(format!("output does not contain {v:?}")),
                    },
                    Require::Any if found.iter().any(|f| *f) => Ok(()),
                    Require::Any => Err(format!("output contains none of {items:?}")),
                }
            }
            Check::NotContains {
                value,
                case_sensitive,
            } => {
                let hay = fold(output, *case_sensitive);
                match value
                    .items()
                    .into_iter()
                    .find(|v| hay.contains(&fold(v, *case_sensitive)))
                {
                    None => Ok(()),
                    Some(v) => Err(format!("output contains {v:?}")),
                }
            }
            Check::Regex {
                pattern,
                case_sensitive,
            } => {
                let re = compile(pattern, *case_sensitive).map_err(|e| e.to_string())?;
                if re.is_match(output) {
                    Ok(())
                } else {
                    Err(format!("output does not match {}", shown(pattern)))
                }
            }
            Check::Equals {
                value,
                case_sensitive,
            } => {
                if fold(output.trim(), *case_sensitive) == fold(value.trim(), *case_sensitive) {
                    Ok(())
                } else {
                    Err(format!("output is not {:?}", value.trim()))
                }
            }
            Check::Json {
                required,
                values,
                case_sensitive,
            } => check_json(output, required, values, *case_sensitive),
        }
    }

    /// Checks that the check itself is usable (the regular expression compiles).
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            Check::Regex {
                pattern,
                case_sensitive,
            } if pattern.len() > MAX_PATTERN_BYTES => Err(format!(
                "pattern {} is {} bytes; at most {MAX_PATTERN_BYTES}",
                shown(pattern),
                pattern.len()
            )),
            Check::Regex {
                pattern,
                case_sensitive,
            } => compile(pattern, *case_sensitive).map(|_| ()).map_err(|e| {
                let why: String = e.to_string().chars().take(SHOWN_CHARS * 4).collect();
                format!("pattern {} does not compile: {why}", shown(pattern))
            }),
            Check::Contains { value, .. } | Check::NotContains { value, .. }
                if value.items().iter().all(|v| v.is_empty()) =>
            {
                Err("`value` is empty; give the text to look for".into())
            }
            _ => Ok(()),
        }
    }
}

/// Longest regular expression a check may have, bytes.
const MAX_PATTERN_BYTES: usize = 4096;
/// Characters of a pattern an error message shows.
const SHOWN_CHARS: usize = 80;

/// `pattern` quoted for a message, cut to [`SHOWN_CHARS`] characters.
fn shown(pattern: &str) -> String {
    match pattern.chars().count() > SHOWN_CHARS {
        true => format!(
            "{:?}…",
            pattern.chars().take(SHOWN_CHARS).collect::<String>()
        ),
        false => format!("{pattern:?}"),
    }
}

fn compile(pattern: &str, case_sensitive: bool) -> Result<regex::Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(!case_sensitive)
        .build()
}

/// Runs every check in order; the first failure's reason, or `Ok(())`.
pub(crate) fn evaluate_checks(checks: &[Check], output: &str) -> Result<(), String> {
    checks.iter().try_for_each(|c| c.evaluate(output))
}

/// The outcome of a final answer: pass when every check holds; otherwise abstain when the rule
/// says so (a decline phrase, or the token limit hit), else fail with the first check's reason.
pub(crate) fn judge(
    checks: &[Check],
    abstain: &AbstainRule,
    output: &str,
    hit_limit: bool,
) -> Outcome {
    let reason = match evaluate_checks(checks, output) {
        Ok(()) => return Outcome::Pass,
        Err(r) => r,
    };
    let lower = output.to_lowercase();
    if let Some(p) = abstain
        .phrases
        .iter()
        .find(|p| !p.is_empty() && lower.contains(&p.to_lowercase()))
    {
        return Outcome::Abstain {
            reason: format!("declined ({p:?})"),
        };
    }
    if abstain.on_limit && hit_limit {
        return Outcome::Abstain {
            reason: format!("hit the token limit before answering ({reason})"),
        };
    }
    Outcome::Fail { reason }
}

/// The first complete JSON object in `text` (a fenced ```json block or bare braces).
pub(crate) fn first_json_object(text: &str) -> Option<Value> {
    text.char_indices()
        .filter(|(_, c)| *c == '{')
        .find_map(|(i, _)| {
            let mut it = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
            match it.next() {
                Some(Ok(v @ Value::Object(_))) => Some(v),
                _ => None,
            }
        })
}

/// The value at a dotted path (`a.b.c`) inside a JSON value.
fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

/// Whether `got` matches `want`: strings after trimming (case per flag), numbers numerically, a
/// number against a string holding it, arrays and objects element by element.
pub(crate) fn json_matches(got: &Value, want: &Value, case_sensitive: bool) -> bool {
    match (got, want) {
        (Value::String(g), Value::String(w)) => {
            fold(g.trim(), case_sensitive) == fold(w.trim(), case_sensitive)
        }
        (Value::Number(g), Value::Number(w)) => g.as_f64() == w.as_f64(),
        (Value::String(g), Value::Number(w)) | (Value::Number(w), Value::String(g)) => {
            g.trim().parse::<f64>().ok() == w.as_f64()
        }
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len()
                && g.iter()
                    .zip(w)
                    .all(|(g, w)| json_matches(g, w, case_sensitive))
        }
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, w)| g.get(k).is_some_and(|g| json_matches(g, w, case_sensitive))),
        (g, w) => g == w,
    }
}

fn check_json(
    output: &str,
    required: &[String],
    values: &BTreeMap<String, Value>,
    case_sensitive: bool,
) -> Result<(), String> {
    let obj = first_json_object(output).ok_or("no JSON object in the output")?;
    if let Some(missing) = required.iter().find(|f| at_path(&obj, f).is_none()) {
        return Err(format!("JSON has no field {missing:?}"));
    }
    for (field, want) in values {
        match at_path(&obj, field) {
            None => return Err(format!("JSON has no field {field:?}")),
            Some(got) if !json_matches(got, want, case_sensitive) => {
                return Err(format!("JSON field {field:?} is {got}, expected {want}"))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
