//! What the CLI tests of `run`, `sweep` and `report` share: the binary, a tiny synthetic model,
//! a small workload, and reading a results file back.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tokfire::model::synthetic::{write_gguf, Spec};
use tokfire::record::ResultsFile;

pub fn tokfire() -> Command {
    let mut c = Command::cargo_bin("tokfire").unwrap();
    c.env_remove("TOKFIRE_CACHE").env("TOKFIRE_LOG", "error");
    c
}

pub fn tiny(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.gguf");
    write_gguf(&path, &Spec::default()).unwrap();
    path
}

/// A workload with a chat task, a raw task and an agent-free JSON task.
pub const WORKLOAD: &str = r#"
name = "tiny"
version = 1
use_case = "test"
description = "Three small tasks for the synthetic model."

[criteria]
label = "test targets"
ttft_max_s = 30.0
pass_rate_min = 0.0

[[tasks]]
id = "chat-one"
user = "hello there"
max_tokens = 6
checks = [{ kind = "contains", value = "zzz-never" }]

[[tasks]]
id = "raw-two"
raw = "once upon a time"
max_tokens = 5
checks = [{ kind = "not_contains", value = "zzz-never" }]

[[tasks]]
id = "chat-three"
system = "be brief"
user = "count to three"
max_tokens = 4
checks = [{ kind = "regex", pattern = "." }]
"#;

pub fn workload(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("tiny.toml");
    std::fs::write(&p, text).unwrap();
    p
}

pub fn read(path: &Path) -> ResultsFile {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn args<'a>(model: &'a str, wl: &'a str, out: &'a str) -> Vec<&'a str> {
    vec!["--model", model, "--workload", wl, "--out", out]
}
