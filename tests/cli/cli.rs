//! The `tokfire` binary end to end on tiny synthetic models: the working verbs, and a clear
//! error (named file or flag, non-zero exit, no panic) for every bad input.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tokfire::model::synthetic::{write_gguf, Spec};

fn tokfire() -> Command {
    let mut c = Command::cargo_bin("tokfire").unwrap();
    c.env_remove("TOKFIRE_CACHE").env("TOKFIRE_LOG", "error");
    c
}

fn tiny(dir: &Path, spec: Spec) -> PathBuf {
    let path = dir.join(format!("{}-{}.gguf", spec.arch, spec.tokenizer));
    write_gguf(&path, &spec).unwrap();
    path
}

/// Runs and expects failure with `code`; returns stderr after checking it has no panic.
fn fails(args: &[&str], code: i32) -> String {
    let out = tokfire().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit code for {args:?}; stderr: {stderr}"
    );
    assert!(
        !crate::support::has(&stderr, "panicked"),
        "panic for {args:?}: {stderr}"
    );
    assert!(
        stderr.starts_with("Error: ") || code == 2,
        "no Error: line for {args:?}: {stderr}"
    );
    stderr
}

#[test]
fn generate_on_a_synthetic_model_prints_text_and_the_four_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path(), Spec::default());
    let out = tokfire()
        .args([
            "generate",
            "--model",
            m.to_str().unwrap(),
            "-n",
            "8",
            "--ids",
            "--prompt",
            "the tin",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for clock in ["load", "warm-up", "prefill", "decode", "tok/s", "machine: "] {
        assert!(
            crate::support::has(&stderr, clock),
            "missing {clock} in {stderr}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.starts_with('[')),
        "no id list: {stdout}"
    );
    // Chat goes through the template; sampling flags are accepted and seeded.
    tokfire()
        .args([
            "generate",
            "--model",
            m.to_str().unwrap(),
            "-n",
            "4",
            "--chat",
            "hi",
            "--temperature",
            "0.8",
            "--top-p",
            "0.9",
            "--seed",
            "3",
        ])
        .assert()
        .success();
}

#[test]
fn inspect_reports_the_file_as_text_json_and_token_ids() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path(), Spec::default());
    let m = m.to_str().unwrap();
    let text = tokfire().args(["inspect", m]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        crate::support::has(&text, "architecture  llama")
            && crate::support::has(&text, "sha256")
            && crate::support::has(&text, "chat template yes"),
        "{text}"
    );
    let json = tokfire().args(["inspect", m, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["layers"], 2);
    assert_eq!(v["tensor_types"]["q8_0"], 16);
    let ids = tokfire()
        .args(["inspect", m, "--tokenize", "<|im_start|>the"])
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&ids.stdout);
    assert!(ids.starts_with("[1, "), "{ids}");
}

#[test]
fn hub_ids_load_from_a_local_hub_cache() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("hub/models--Org--Tiny/snapshots/0123abcd");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(dir.path().join("hub/models--Org--Tiny/refs")).unwrap();
    std::fs::write(
        dir.path().join("hub/models--Org--Tiny/refs/main"),
        "0123abcd",
    )
    .unwrap();
    write_gguf(&snap.join("tiny.gguf"), &Spec::default()).unwrap();
    tokfire()
        .env("HF_HOME", dir.path())
        .args(["generate", "--model", "hf:Org/Tiny:tiny.gguf", "-n", "3"])
        .assert()
        .success();
    let err = tokfire()
        .env("HF_HOME", dir.path())
        .args(["generate", "--model", "hf:Org/Tiny:other.gguf"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&err.stderr)
        .contains("huggingface-cli download Org/Tiny other.gguf"));
}

#[test]
fn missing_file_names_the_path() {
    let e = fails(&["generate", "--model", "/nonexistent/dir/model.gguf"], 1);
    assert!(
        crate::support::has(&e, "/nonexistent/dir/model.gguf")
            && crate::support::has(&e, "no such file"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_gguf_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.gguf");
    std::fs::write(&p, "hello, I am text").unwrap();
    let e = fails(&["generate", "--model", p.to_str().unwrap()], 1);
    assert!(crate::support::has(&e, "not a GGUF file"), "{e}");
    let e = fails(&["inspect", p.to_str().unwrap()], 1);
    assert!(crate::support::has(&e, "not a GGUF file"), "{e}");
}

#[test]
fn truncated_gguf_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path(), Spec::default());
    let bytes = std::fs::read(&m).unwrap();
    for keep in [bytes.len() - 1000, 200, 6] {
        let p = dir.path().join(format!("cut{keep}.gguf"));
        std::fs::write(&p, &bytes[..keep]).unwrap();
        let e = fails(&["generate", "--model", p.to_str().unwrap()], 1);
        assert!(
            crate::support::has(&e, "damaged or truncated")
                && crate::support::has(&e, format!("cut{keep}.gguf")),
            "{keep}: {e}"
        );
    }
}

#[test]
fn unsupported_architecture_lists_the_supported_ones() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(
        dir.path(),
        Spec {
            arch: "mamba".into(),
            ..Spec::default()
        },
    );
    let e = fails(&["generate", "--model", m.to_str().unwrap()], 1);
    assert!(
        crate::support::has(&e, "architecture 'mamba' is not supported")
            && crate::support::has(&e, "llama"),
        "{e}"
    );
    // inspect still describes it.
    tokfire()
        .args(["inspect", m.to_str().unwrap()])
        .assert()
        .success();
}

#[test]
fn gguf_without_tokenizer_metadata_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(
        dir.path(),
        Spec {
            tokenizer: false,
            ..Spec::default()
        },
    );
    let e = fails(&["generate", "--model", m.to_str().unwrap()], 1);
    assert!(
        crate::support::has(&e, "no tokenizer") && crate::support::has(&e, "tokenizer.ggml.model"),
        "{e}"
    );
}

#[test]
fn unknown_model_name_lists_the_known_ones() {
    let e = fails(&["generate", "--model", "no-such-model"], 1);
    assert!(
        crate::support::has(&e, "unknown model 'no-such-model'")
            && crate::support::has(&e, "smollm2-135m-instruct-q4_1"),
        "{e}"
    );
}

#[test]
fn bad_devices_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path(), Spec::default());
    let m = m.to_str().unwrap();
    let e = fails(&["generate", "--model", m, "--device", "tpu"], 1);
    assert!(crate::support::has(&e, "--device tpu"), "{e}");
    if !cfg!(feature = "cuda") {
        let e = fails(&["generate", "--model", m, "--device", "cuda"], 1);
        assert!(crate::support::has(&e, "--features cuda"), "{e}");
    }
    if !cfg!(feature = "metal") {
        let e = fails(&["generate", "--model", m, "--device", "metal"], 1);
        assert!(crate::support::has(&e, "--features metal"), "{e}");
    }
}

#[test]
fn bad_flags_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path(), Spec::default());
    let e = fails(
        &["generate", "--model", m.to_str().unwrap(), "--top-p", "1.5"],
        1,
    );
    assert!(crate::support::has(&e, "--top-p"), "{e}");
    fails(&["generate", "--dtype", "int3"], 2);
}

#[test]
fn session_without_a_file_is_a_usage_error() {
    let e = fails(&["session"], 2);
    assert!(crate::support::has(&e, "<FILE>"), "session: {e}");
}

#[test]
fn inspect_lists_the_families_and_shows_what_each_tiny_model_applies() {
    let out = tokfire().args(["inspect", "--families"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "llama",
        "qwen2",
        "qwen3",
        "phi3",
        "smollm3",
        "gemma3",
        "llama-bpe",
        "tekken",
    ] {
        assert!(
            crate::support::has(&text, name),
            "{name} missing from:\n{text}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for (arch, layers, needle) in [
        ("qwen3", 2, "q/k RMSNorm; RoPE pairs halves"),
        ("qwen2", 2, "q/k/v bias; RoPE pairs halves"),
        ("smollm3", 4, "no RoPE on layers 3; RoPE pairs interleaved"),
    ] {
        let spec = Spec {
            arch: arch.into(),
            layers,
            ..Default::default()
        };
        let m = tiny(dir.path(), spec);
        let out = tokfire()
            .args(["inspect", m.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{arch}: {text}");
        assert!(crate::support::has(&text, needle), "{arch}: {text}");
    }
}

#[test]
fn a_config_json_past_the_gguf_bounds_is_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    tokfire::model::synthetic::write_safetensors_dir(dir.path(), &Spec::default()).unwrap();
    let config = dir.path().join("config.json");
    let good = std::fs::read_to_string(&config).unwrap();
    for (key, value) in [
        ("hidden_size", serde_json::json!(1u64 << 40)),
        ("num_hidden_layers", serde_json::json!(100_000)),
        ("rms_norm_eps", serde_json::json!(-1.0)),
        ("rope_theta", serde_json::json!(0.0)),
    ] {
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        v[key] = value;
        std::fs::write(&config, v.to_string()).unwrap();
        let e = fails(&["inspect", dir.path().to_str().unwrap()], 1);
        assert!(crate::support::has(&e, key), "{key}: {e}");
        assert!(crate::support::has(&e, "config.json"), "{key}: {e}");
    }
}

#[test]
fn kernels_measures_once_then_shows_the_kept_choice() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = tokfire()
            .env("TOKFIRE_CACHE", dir.path())
            .arg("kernels")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run(&[]);
    assert!(first.contains("--kernels auto runs: "), "{first}");
    assert!(first.contains("measured now, kept in"), "{first}");
    assert!(first.lines().all(|l| l.chars().count() <= 100), "{first}");
    let again = run(&[]);
    assert!(again.contains("by an earlier run"), "{again}");
    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let chosen = json["chosen"].as_str().unwrap().to_string();
    assert!(
        first.contains(&format!("--kernels auto runs: {chosen} (")),
        "{first}"
    );
    assert!(run(&["--recalibrate"]).contains("measured now"));
}
