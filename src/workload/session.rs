//! A session script (`tokfire session FILE`): the steps a person lives through on one timeline
//! — load a model (optionally evicted from the page cache first, or at another dtype), send a
//! request (a chat message, a raw prompt or a workload task, repeated if asked), sit idle.
//! Parsed from TOML with unknown keys refused; every error names the file and the step's line.
//!
//! ```toml
//! name = "morning"
//! [[step]]
//! load = "smollm2-135m-instruct-q4_1"
//! evict = true
//! [[step]]
//! chat = "Good morning!"
//! max_tokens = 32
//! [[step]]
//! idle = "90s"
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::error::WorkloadError;
use super::schema::Prompt;
use crate::config::WeightDType;
use crate::model::chat::Message;

/// Largest `max_tokens` of a request step (beyond any model's context).
const MAX_TOKENS: usize = 1 << 20;

/// Output limit of a request step without `max_tokens`.
pub const DEFAULT_MAX_TOKENS: usize = 32;
/// The longest idle gap accepted, seconds (a day).
const MAX_IDLE_S: f64 = 86_400.0;
/// Most repeats of one request step.
const MAX_REPEAT: usize = 1000;

/// A parsed session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub name: String,
    pub description: String,
    /// Where it came from (the file path).
    pub source: String,
    pub steps: Vec<Step>,
}

/// One step, with the line it starts on in its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based line of the step in its file.
    pub line: usize,
    pub kind: StepKind,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum StepKind {
    /// Unload the current model (if any) and load `model`.
    Load {
        /// A `--model` value: manifest name, `.gguf` path, directory.
        model: String,
        dtype: WeightDType,
        /// Evict the model's files from the page cache first (a start after a reboot).
        evict: bool,
    },
    /// Send a request `repeat` times, one after the other.
    Request {
        /// What the request is, for the report: `chat`, `raw` or `task NAME/ID`.
        label: String,
        prompt: Prompt,
        max_tokens: usize,
        repeat: usize,
    },
    /// Sit idle, seconds (before `--time-scale`).
    Idle { seconds: f64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSession {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    step: Vec<Spanned<FileStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStep {
    load: Option<String>,
    dtype: Option<WeightDType>,
    evict: Option<bool>,
    idle: Option<String>,
    chat: Option<String>,
    system: Option<String>,
    raw: Option<String>,
    task: Option<String>,
    max_tokens: Option<usize>,
    repeat: Option<usize>,
}

/// Parses session TOML `text`; `source` names it in errors.
pub fn parse(text: &str, source: &str) -> Result<Session, WorkloadError> {
    let file: FileSession = toml::from_str(text).map_err(|e| WorkloadError::Parse {
        source_name: source.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    if file.step.is_empty() {
        return Err(WorkloadError::invalid(
            source,
            "step",
            "no steps; add [[step]] tables (load, chat, raw, task or idle)",
        ));
    }
    let mut steps = Vec::with_capacity(file.step.len());
    for (i, s) in file.step.into_iter().enumerate() {
        let line = line_of(text, s.span().start);
        let key = format!("line {line}: step {}", i + 1);
        let kind = step_kind(s.into_inner(), source, &key)?;
        steps.push(Step { line, kind });
    }
    if !matches!(steps[0].kind, StepKind::Load { .. }) {
        return Err(WorkloadError::invalid(
            source,
            format!("line {}: step 1", steps[0].line),
            "the first step must load a model (load = \"MODEL\")",
        ));
    }
    Ok(Session {
        name: file.name,
        description: file.description,
        source: source.to_string(),
        steps,
    })
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

fn step_kind(s: FileStep, src: &str, key: &str) -> Result<StepKind, WorkloadError> {
    let bad = |reason: String| WorkloadError::invalid(src, key, reason);
    let given: Vec<&str> = [
        ("load", s.load.is_some()),
        ("idle", s.idle.is_some()),
        ("chat", s.chat.is_some()),
        ("raw", s.raw.is_some()),
        ("task", s.task.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, on)| on.then_some(k))
    .collect();
    if given.len() != 1 {
        return Err(bad(format!(
            "a step has exactly one of load, idle, chat, raw or task; this one has {}",
            if given.is_empty() {
                "none".to_string()
            } else {
                given.join(" and ")
            }
        )));
    }
    let request_keys = s.max_tokens.is_some() || s.repeat.is_some();
    if given[0] != "load" && (s.dtype.is_some() || s.evict.is_some()) {
        return Err(bad("dtype and evict belong to a load step".into()));
    }
    if given[0] != "chat" && s.system.is_some() {
        return Err(bad("system belongs to a chat step".into()));
    }
    if let Some(model) = s.load {
        if request_keys {
            return Err(bad("max_tokens and repeat belong to a request step".into()));
        }
        if model.trim().is_empty() {
            return Err(bad("load needs a model name or path".into()));
        }
        return Ok(StepKind::Load {
            model,
            dtype: s.dtype.unwrap_or_default(),
            evict: s.evict.unwrap_or(false),
        });
    }
    if let Some(idle) = s.idle {
        if request_keys {
            return Err(bad("max_tokens and repeat belong to a request step".into()));
        }
        let seconds = parse_duration(&idle).map_err(|r| bad(format!("idle = {idle:?}: {r}")))?;
        return Ok(StepKind::Idle { seconds });
    }
    let max_tokens = s.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let repeat = s.repeat.unwrap_or(1);
    if max_tokens == 0 || max_tokens > MAX_TOKENS {
        return Err(bad(format!("max_tokens must be 1 to {MAX_TOKENS}")));
    }
    if repeat == 0 || repeat > MAX_REPEAT {
        return Err(bad(format!("repeat must be 1 to {MAX_REPEAT}")));
    }
    let (label, prompt, max_tokens) = if let Some(user) = s.chat {
        let mut msgs = Vec::new();
        if let Some(sys) = s.system {
            msgs.push(Message::new("system", &sys));
        }
        msgs.push(Message::new("user", &user));
        ("chat".to_string(), Prompt::Chat(msgs), max_tokens)
    } else if let Some(raw) = s.raw {
        ("raw".to_string(), Prompt::Raw(raw), max_tokens)
    } else {
        let task = s.task.expect("exactly one kind is set; this is a bug");
        let (prompt, limit) = workload_task(&task).map_err(bad)?;
        let max = s.max_tokens.unwrap_or(limit);
        (format!("task {task}"), prompt, max)
    };
    Ok(StepKind::Request {
        label,
        prompt,
        max_tokens,
        repeat,
    })
}

/// `WORKLOAD/TASK_ID` → the task's prompt and output limit.
fn workload_task(spec: &str) -> Result<(Prompt, usize), String> {
    let Some((name, id)) = spec.rsplit_once('/') else {
        return Err(format!(
            "task = {spec:?}: expected WORKLOAD/TASK_ID, e.g. \"code/fizzbuzz\""
        ));
    };
    let w = super::load(name).map_err(|e| format!("task = {spec:?}: {e}"))?;
    let t = w.tasks.iter().find(|t| t.id == id).ok_or_else(|| {
        let ids: Vec<&str> = w.tasks.iter().map(|t| t.id.as_str()).collect();
        format!(
            "task = {spec:?}: workload {name} has no task {id:?}; its tasks: {}",
            ids.join(", ")
        )
    })?;
    if t.is_agent() {
        return Err(format!(
            "task = {spec:?}: a tool-agent task needs several turns; a session step sends one request"
        ));
    }
    Ok((t.prompt.clone(), t.max_tokens))
}

/// `90s`, `1.5m`, `500ms`, `2h` or a bare number of seconds → seconds ≥ 0.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| "expected a duration such as \"90s\", \"1.5m\" or \"500ms\"".to_string())?;
    let secs = v * scale;
    if !secs.is_finite() {
        return Err("a duration is a finite number of seconds, not NaN or infinite".into());
    }
    if secs < 0.0 {
        return Err("a duration cannot be negative".into());
    }
    if secs > MAX_IDLE_S {
        return Err(format!("at most {MAX_IDLE_S} s (a day)"));
    }
    Ok(secs)
}

impl Session {
    /// The idle steps' total, seconds, before scaling.
    pub fn idle_s(&self) -> f64 {
        self.steps
            .iter()
            .map(|s| match s.kind {
                StepKind::Idle { seconds } => seconds,
                _ => 0.0,
            })
            .sum()
    }
}

/// `seconds × scale` as a duration.
pub fn scaled(seconds: f64, scale: f64) -> Duration {
    // Bounded where the flag is parsed; saturating here, never a panic.
    Duration::try_from_secs_f64((seconds * scale).max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
