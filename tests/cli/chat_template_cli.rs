//! `--chat-template FILE` on a model without a chat template (a synthetic Gemma 3, as
//! gemma3-270m-q4_k_m): chat workloads and `generate --chat` are refused with an error naming the
//! flag, and work with it; the record keeps the template file.

use crate::support;

use support::{args, read, tokfire, workload, WORKLOAD};
use tokfire::model::synthetic_gemma::{write_gemma_gguf, GemmaSpec};

const GEMMA_TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

fn gemma(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("gemma.gguf");
    write_gemma_gguf(&p, &GemmaSpec::default()).unwrap();
    p
}

#[test]
fn chat_workload_needs_a_template_and_runs_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (gemma(dir.path()), workload(dir.path(), WORKLOAD));
    let out = dir.path().join("r.json");
    let (m, wl, o) = (
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let mut base = vec![
        "run",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--allow-few-rounds",
    ];
    base.extend(args(m, wl, o));

    let refused = tokfire().args(&base).output().unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        support::has(&err, "no chat template") && support::has(&err, "--chat-template"),
        "{err}"
    );

    let template = dir.path().join("gemma.jinja");
    std::fs::write(&template, GEMMA_TEMPLATE).unwrap();
    let mut with = base.clone();
    with.extend(["--chat-template", template.to_str().unwrap()]);
    let ok = tokfire().args(&with).output().unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let file = read(&out);
    let run = file.runs.last().expect("the run is saved");
    assert_eq!(
        run.config.model.chat_template.as_deref(),
        Some(template.as_path())
    );
    let tasks = &run.levels[0].rounds[0].tasks;
    assert_eq!(tasks.len(), 3, "every task ran, chat ones included");
}

#[test]
fn generate_chat_uses_the_template_file_and_a_bad_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = gemma(dir.path());
    let template = dir.path().join("gemma.jinja");
    std::fs::write(&template, GEMMA_TEMPLATE).unwrap();
    let m = m.to_str().unwrap();
    let gen = |t: &str| {
        tokfire()
            .args([
                "generate",
                "--model",
                m,
                "--chat",
                "hi",
                "-n",
                "3",
                "--chat-template",
                t,
            ])
            .output()
            .unwrap()
    };
    let ok = gen(template.to_str().unwrap());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let missing = dir.path().join("missing.jinja");
    let bad = gen(missing.to_str().unwrap());
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(support::has(&err, "missing.jinja"), "{err}");
    assert!(!support::has(&err, "panicked"), "{err}");
}
