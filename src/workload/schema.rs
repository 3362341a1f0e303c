//! The workload file schema (TOML), its parsed form and the canonical content hash. A workload
//! is a fixed, named, versioned task set for one use case, with the user's acceptance criteria
//! declared in the file before any run.

use super::tools::ToolSpec;
use super::validate::{AbstainRule, Check};
use crate::model::chat::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A loaded, validated workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// Short name, e.g. `chat`.
    pub name: String,
    /// Version; bump it whenever tasks or criteria change.
    pub version: u32,
    /// What the workload exercises.
    pub description: String,
    /// The use case it stands for, e.g. "interactive chat".
    pub use_case: String,
    /// `builtin:NAME` or the file path it was read from.
    pub source: String,
    /// sha256 hex of the canonical content (name, version, criteria, tasks).
    pub hash: String,
    /// True when `name` + `version` is in the lock with this hash.
    pub locked: bool,
    /// The user's acceptance targets.
    pub criteria: Criteria,
    /// The tasks, in the order each job submits them.
    pub tasks: Vec<Task>,
}

/// Acceptance criteria, declared before any run and labelled as the user's own targets. A
/// criterion left out is not judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criteria {
    /// How the targets are presented, e.g. "your targets for an interactive chat assistant".
    pub label: String,
    /// Longest acceptable time to first token, seconds (median over requests).
    #[serde(default)]
    pub ttft_max_s: Option<f64>,
    /// Slowest acceptable generation speed seen by one job, tokens per second.
    #[serde(default)]
    pub per_job_tok_s_min: Option<f64>,
    /// Longest acceptable completion time of one request, seconds.
    #[serde(default)]
    pub completion_max_s: Option<f64>,
    /// Smallest acceptable fraction of passed tasks, 0 to 1.
    #[serde(default)]
    pub pass_rate_min: Option<f64>,
}

/// What the model is given: raw text to complete, or chat messages the caller renders with the
/// model's chat template (`add_generation_prompt = true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prompt {
    /// Text the model continues as-is (no chat template).
    Raw(String),
    /// Messages rendered with the model's chat template, assistant turn opened.
    Chat(Vec<Message>),
}

/// One task: a prompt, an output limit and how its answer is judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Unique within the workload.
    pub id: String,
    /// The first prompt (for agent tasks the tool list is already in its system message).
    pub prompt: Prompt,
    /// Output limit per generation, tokens.
    pub max_tokens: usize,
    /// Checks on the final answer; all must hold.
    pub checks: Vec<Check>,
    /// When a failed answer counts as declining instead.
    pub abstain: AbstainRule,
    /// Tools the model may call (empty: a single-generation task).
    pub tools: Vec<ToolSpec>,
    /// Calls that must have been made, in any order.
    pub required_calls: Vec<RequiredCall>,
    /// Most generations for an agent task (tool calls plus the final answer); 1 otherwise.
    pub max_turns: usize,
}

impl Task {
    /// True when the task declares tools.
    pub fn is_agent(&self) -> bool {
        !self.tools.is_empty()
    }
}

/// A call an agent task requires: the tool and the argument values that must match (other
/// arguments are free). Strings match trimmed and case-insensitively, numbers numerically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredCall {
    /// The tool's name.
    pub tool: String,
    /// Argument values that must match; arguments left out are not checked.
    #[serde(default)]
    pub arguments: std::collections::BTreeMap<String, Value>,
}

/// The file form of a workload (what `workloads/*.toml` holds).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWorkload {
    pub name: String,
    pub version: u32,
    pub description: String,
    pub use_case: String,
    pub criteria: Criteria,
    /// The system message of every `user` task that gives none of its own.
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub tasks: Vec<FileTask>,
}

/// The file form of a task: exactly one of `raw`, `user` (with optional `system`, else the
/// workload's) or `messages` gives the prompt.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTask {
    pub id: String,
    pub max_tokens: usize,
    #[serde(default)]
    pub raw: Option<String>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<Message>>,
    #[serde(default)]
    pub checks: Vec<Check>,
    #[serde(default)]
    pub abstain: AbstainRule,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub required_calls: Vec<RequiredCall>,
    #[serde(default)]
    pub max_turns: Option<usize>,
}

/// The hashed part of a workload.
#[derive(Serialize)]
struct Canonical<'a> {
    name: &'a str,
    version: u32,
    criteria: &'a Criteria,
    tasks: &'a [Task],
}

/// sha256 hex of the canonical JSON of name, version, criteria and tasks (serde_json writes
/// struct fields in declaration order and maps sorted, so the text is canonical).
pub(crate) fn content_hash(
    name: &str,
    version: u32,
    criteria: &Criteria,
    tasks: &[Task],
) -> String {
    let json = serde_json::to_vec(&Canonical {
        name,
        version,
        criteria,
        tasks,
    })
    .expect("workload content always serializes; this is a bug");
    Sha256::digest(&json)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
