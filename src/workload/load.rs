//! Loading: builtin name or file path → TOML → schema checks → [`Workload`] with its hash and
//! lock status. Schema errors keep the toml crate's message (line, column and key).

use super::error::{LockMismatch, WorkloadError};
use super::lock::{self, Lock};
use super::schema::{content_hash, Criteria, FileTask, FileWorkload, Prompt, Task, Workload};
use super::tools;
use crate::model::chat::Message;
use std::path::Path;

/// Largest accepted `max_tokens` per generation.
const MAX_TOKENS_LIMIT: usize = 8192;
/// Largest accepted `max_turns` for agent tasks.
const MAX_TURNS_LIMIT: usize = 16;

/// The shipped workloads, embedded so the binary works from any directory.
pub(crate) const BUILTINS: &[(&str, &str)] = &[
    ("chat", include_str!("../../workloads/chat.toml")),
    ("code", include_str!("../../workloads/code.toml")),
    ("extract", include_str!("../../workloads/extract.toml")),
    ("agent", include_str!("../../workloads/agent.toml")),
    ("edit", include_str!("../../workloads/edit.toml")),
    (
        "shared-prefix",
        include_str!("../../workloads/shared-prefix.toml"),
    ),
];

/// Names of the builtin workloads.
pub fn builtin_names() -> &'static [&'static str] {
    &["chat", "code", "extract", "agent", "edit", "shared-prefix"]
}

/// Loads a builtin by name, or a `.toml` file by path (checked against the embedded lock and a
/// `workloads.lock` beside the file, if there is one).
pub fn load(name_or_path: &str) -> Result<Workload, WorkloadError> {
    if let Some((name, text)) = BUILTINS.iter().find(|(n, _)| *n == name_or_path) {
        return parse(text, &format!("builtin:{name}"), &Lock::embedded());
    }
    let path = Path::new(name_or_path);
    if !path.is_file() {
        return Err(WorkloadError::Unknown {
            name: name_or_path.to_string(),
            known: builtin_names().join(", "),
        });
    }
    let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES).map_err(|error| {
        WorkloadError::Io {
            path: path.to_path_buf(),
            error,
        }
    })?;
    let mut lock = Lock::embedded();
    let beside = path
        .parent()
        .unwrap_or(Path::new("."))
        .join("workloads.lock");
    if beside.is_file() {
        let lock_text =
            crate::files::read_text(&beside, crate::files::MAX_INPUT_BYTES).map_err(|error| {
                WorkloadError::Io {
                    path: beside.clone(),
                    error,
                }
            })?;
        lock.merge(Lock::parse(&lock_text, &beside.display().to_string())?);
    }
    parse(&text, &path.display().to_string(), &lock)
}

/// Parses and validates workload TOML `text`; `source_name` names it in errors and in
/// [`Workload::source`]. A name+version in `lock` with another hash is an error.
pub fn parse(text: &str, source_name: &str, lock: &Lock) -> Result<Workload, WorkloadError> {
    let file: FileWorkload = toml::from_str(text).map_err(|e| WorkloadError::Parse {
        source_name: source_name.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    check_header(&file, source_name)?;
    let mut ids = std::collections::BTreeSet::new();
    let mut tasks = Vec::with_capacity(file.tasks.len());
    for (i, mut t) in file.tasks.into_iter().enumerate() {
        let key = format!("tasks[{i}] (id {:?})", t.id);
        if !ids.insert(t.id.clone()) {
            return Err(WorkloadError::invalid(
                source_name,
                key,
                "duplicate task id; ids must be unique",
            ));
        }
        default_system(&mut t, file.system.as_deref())
            .map_err(|r| WorkloadError::invalid(source_name, format!("{key}.prompt"), r))?;
        tasks.push(task_from_file(t, source_name, &key)?);
    }
    let hash = content_hash(&file.name, file.version, &file.criteria, &tasks);
    let locked = match lock.get(&file.name, file.version) {
        Some(h) if h == hash => true,
        Some(h) => {
            return Err(WorkloadError::HashMismatch(Box::new(LockMismatch {
                source_name: source_name.to_string(),
                name: file.name.clone(),
                version: file.version,
                next_version: file.version + 1,
                locked: h.to_string(),
                next_hash: content_hash(&file.name, file.version + 1, &file.criteria, &tasks),
                actual: hash,
            })))
        }
        None => false,
    };
    Ok(Workload {
        name: file.name,
        version: file.version,
        description: file.description,
        use_case: file.use_case,
        source: source_name.to_string(),
        hash,
        locked,
        criteria: file.criteria,
        tasks,
    })
}

/// The lock line for a loaded workload (`NAME VERSION SHA256`).
pub fn lock_line(w: &Workload) -> String {
    lock::line(&w.name, w.version, &w.hash)
}

fn check_header(f: &FileWorkload, src: &str) -> Result<(), WorkloadError> {
    let name_ok = !f.name.is_empty()
        && f.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(WorkloadError::invalid(
            src,
            "name",
            "use letters, digits, '-' or '_' (it goes into the lock file)",
        ));
    }
    if f.version == 0 {
        return Err(WorkloadError::invalid(
            src,
            "version",
            "versions start at 1",
        ));
    }
    if f.system.as_ref().is_some_and(|s| s.trim().is_empty()) {
        return Err(WorkloadError::invalid(
            src,
            "system",
            "is empty; write the shared system message or leave the key out",
        ));
    }
    if f.tasks.is_empty() {
        return Err(WorkloadError::invalid(
            src,
            "tasks",
            "no [[tasks]]; add at least one",
        ));
    }
    check_criteria(&f.criteria, src)
}

/// Checks targets: positive and finite, a pass rate from 0 to 1 (workload files and the copy a
/// record keeps).
pub(crate) fn check_criteria(c: &Criteria, src: &str) -> Result<(), WorkloadError> {
    if c.label.trim().is_empty() {
        return Err(WorkloadError::invalid(
            src,
            "criteria.label",
            "say whose targets these are, e.g. \"your targets for …\"",
        ));
    }
    let positive = [
        ("criteria.ttft_max_s", c.ttft_max_s),
        ("criteria.per_job_tok_s_min", c.per_job_tok_s_min),
        ("criteria.completion_max_s", c.completion_max_s),
    ];
    for (key, v) in positive {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(WorkloadError::invalid(
                src,
                key,
                format!("{v} must be a positive number (or leave the key out)"),
            ));
        }
    }
    if let Some(v) = c.pass_rate_min.filter(|v| !(0.0..=1.0).contains(v)) {
        return Err(WorkloadError::invalid(
            src,
            "criteria.pass_rate_min",
            format!("{v} is a fraction: use 0 to 1 (0.8 = 80 %)"),
        ));
    }
    Ok(())
}

/// Gives a `user` task without a `system` of its own the workload's `system`. A `raw` task, or
/// `messages` that do not open with their own system message, would silently go without it,
/// so those are errors.
fn default_system(t: &mut FileTask, system: Option<&str>) -> Result<(), String> {
    let Some(system) = system else {
        return Ok(());
    };
    if t.user.is_some() {
        t.system.get_or_insert_with(|| system.to_string());
    } else if t.raw.is_some() {
        return Err("a `raw` prompt has no system message, so the workload's top-level `system` cannot apply; give the task `user` instead, or move it to a workload without `system`".into());
    } else if let Some(m) = &t.messages {
        if m.first().map(|m| m.role.as_str()) != Some("system") {
            return Err("these `messages` do not open with a system message, so the workload's top-level `system` would not apply; start them with { role = \"system\", content = \"…\" } or give the task `user` instead".into());
        }
    }
    Ok(())
}

fn task_from_file(t: FileTask, src: &str, key: &str) -> Result<Task, WorkloadError> {
    let bad =
        |field: &str, reason: String| WorkloadError::invalid(src, format!("{key}.{field}"), reason);
    if t.id.trim().is_empty() {
        return Err(bad("id", "give the task a non-empty id".into()));
    }
    if t.max_tokens == 0 || t.max_tokens > MAX_TOKENS_LIMIT {
        return Err(bad(
            "max_tokens",
            format!(
                "{} is out of range; use 1 to {MAX_TOKENS_LIMIT}",
                t.max_tokens
            ),
        ));
    }
    for (j, c) in t.checks.iter().enumerate() {
        c.validate().map_err(|r| bad(&format!("checks[{j}]"), r))?;
    }
    let agent = !t.tools.is_empty();
    if t.checks.is_empty() && t.required_calls.is_empty() {
        return Err(bad(
            "checks",
            "the task has no [[tasks.checks]]; add at least one so its answer is judged".into(),
        ));
    }
    let max_turns = match (agent, t.max_turns) {
        (false, None) => 1,
        (false, Some(_)) => {
            return Err(bad(
                "max_turns",
                "only agent tasks (with [[tasks.tools]]) take more than one turn".into(),
            ))
        }
        (true, None) => 4,
        (true, Some(n)) if (2..=MAX_TURNS_LIMIT).contains(&n) => n,
        (true, Some(n)) => {
            return Err(bad(
                "max_turns",
                format!("{n} is out of range; use 2 to {MAX_TURNS_LIMIT}"),
            ))
        }
    };
    check_tools(&t, src, key)?;
    let prompt = prompt_from_file(&t, agent).map_err(|r| bad("prompt", r))?;
    Ok(Task {
        id: t.id,
        prompt,
        max_tokens: t.max_tokens,
        checks: t.checks,
        abstain: t.abstain,
        tools: t.tools,
        required_calls: t.required_calls,
        max_turns,
    })
}

fn check_tools(t: &FileTask, src: &str, key: &str) -> Result<(), WorkloadError> {
    let mut names = std::collections::BTreeSet::new();
    for (j, tool) in t.tools.iter().enumerate() {
        if tool.name.trim().is_empty() || !names.insert(tool.name.as_str()) {
            return Err(WorkloadError::invalid(
                src,
                format!("{key}.tools[{j}].name"),
                "tool names must be non-empty and unique",
            ));
        }
    }
    for (j, call) in t.required_calls.iter().enumerate() {
        if !names.contains(call.tool.as_str()) {
            let known: Vec<&str> = names.iter().copied().collect();
            return Err(WorkloadError::invalid(
                src,
                format!("{key}.required_calls[{j}].tool"),
                format!("{:?} is not one of the task's tools {known:?}", call.tool),
            ));
        }
    }
    Ok(())
}

fn prompt_from_file(t: &FileTask, agent: bool) -> Result<Prompt, String> {
    let forms = [t.raw.is_some(), t.user.is_some(), t.messages.is_some()];
    if forms.iter().filter(|f| **f).count() != 1 {
        return Err("give exactly one of `raw` (text to complete), `user` (with optional `system`) or `messages`".into());
    }
    if t.system.is_some() && t.user.is_none() {
        return Err("`system` goes with `user`; put it in `messages` otherwise".into());
    }
    if let Some(raw) = &t.raw {
        if agent {
            return Err("agent tasks need a chat prompt (`user` or `messages`), not `raw`".into());
        }
        return Ok(Prompt::Raw(raw.clone()));
    }
    let mut messages = match (&t.user, &t.messages) {
        (Some(user), _) => {
            let mut m = Vec::new();
            if let Some(s) = &t.system {
                m.push(Message::new("system", s));
            }
            m.push(Message::new("user", user));
            m
        }
        (None, Some(m)) if !m.is_empty() => m.clone(),
        _ => return Err("`messages` is empty".into()),
    };
    if agent {
        let extra = match messages.first() {
            Some(m) if m.role == "system" => Some(messages.remove(0).content),
            _ => None,
        };
        messages.insert(
            0,
            Message::new("system", &tools::system_prompt(&t.tools, extra.as_deref())),
        );
    }
    Ok(Prompt::Chat(messages))
}
