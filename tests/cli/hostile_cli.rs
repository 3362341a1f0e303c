//! Hostile input beyond model files: special files as file arguments, numbers out of range,
//! chat templates that never end, escape sequences in records, prompts past the context. Every
//! case is a clear error naming the flag or file (or a safe rendering), quickly: no hang, panic
//! or abort.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support;

use support::{args, tiny, tokfire, workload, WORKLOAD};

/// Runs the binary (at most 20 s), expects exit 1 with every needle in stderr.
fn refused(a: &[&str], needles: &[&str]) {
    let t0 = Instant::now();
    let out = tokfire()
        .args(a)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{a:?}: {stderr}");
    for n in needles {
        assert!(support::has(&stderr, n), "{a:?}: no {n:?} in {stderr}");
    }
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "{a:?} took {:?}",
        t0.elapsed()
    );
}

/// `generate` of one chat message on `model` with the chat template `template`.
fn chat_with_template<'a>(model: &'a str, template: &'a str) -> [&'a str; 7] {
    [
        "generate",
        "--model",
        model,
        "--chat",
        "hi",
        "--chat-template",
        template,
    ]
}

fn fifo(dir: &Path, name: &str) -> String {
    let p = dir.join(name);
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    p.to_str().unwrap().to_string()
}

#[test]
fn special_files_as_arguments_are_refused_before_they_block() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let (m, wl) = (m.to_str().unwrap(), wl.to_str().unwrap());
    let p = fifo(dir.path(), "pipe");
    let out = dir.path().join("r.json");
    let o = out.to_str().unwrap();
    let fifo_says = ["a FIFO (named pipe), not a regular file"];
    refused(&chat_with_template(m, &p), &fifo_says);
    refused(&["session", &p], &fifo_says);
    // The OS's reason is said once, not once per layer of the error.
    let res = tokfire()
        .args(["generate", "--model", "/no/such.gguf"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(stderr.matches("no such file").count(), 1, "{stderr}");
    refused(&["report", &p], &fifo_says);
    refused(&["report", "/dev/zero"], &["a device, not a regular file"]);
    let mut a = vec!["run", "--jobs", "1", "--rounds", "1", "--allow-few-rounds"];
    a.extend(args(m, wl, &p));
    refused(&a, &fifo_says);
    // --trace is checked before any work (it is first written after round 1).
    let mut a = vec!["run", "--jobs", "1", "--trace", &p];
    a.extend(args(m, wl, o));
    refused(&a, &["--trace", "a FIFO"]);
    let mut a = vec!["run", "--jobs", "1", "--trace", "/no/such/dir/t.json"];
    a.extend(args(m, wl, o));
    refused(&a, &["--trace", "does not exist"]);
    assert!(!out.exists(), "nothing recorded");
}

#[test]
fn numbers_out_of_range_name_their_flag_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let (m, wl) = (m.to_str().unwrap(), wl.to_str().unwrap());
    let o = dir.path().join("r.json");
    let o = o.to_str().unwrap();
    let run = |extra: &[&str], needles: &[&str]| {
        let mut a = vec!["run"];
        a.extend(extra);
        a.extend(args(m, wl, o));
        refused(&a, needles);
    };
    run(&["--jobs", "1000000000"], &["--jobs", "at most 4096"]);
    run(
        &["--rounds", "18446744073709551615"],
        &["--rounds", "at most"],
    );
    refused(
        &["cold", "--model", m, "--timeout", "1e20"],
        &["--timeout", "a day"],
    );
    refused(
        &["cold", "--model", m, "--repeat", "9223372036854775808"],
        &["--repeat", "1 to 1000"],
    );
    let script = dir.path().join("s.toml");
    std::fs::write(
        &script,
        format!("name = \"s\"\n[[step]]\nload = \"{m}\"\n[[step]]\nidle = \"1s\"\n"),
    )
    .unwrap();
    refused(
        &["session", script.to_str().unwrap(), "--time-scale", "1e300"],
        &["--time-scale", "0 to 10"],
    );
    refused(&["compare", o, o, "--min-effect", "NaN"], &["--min-effect"]);
}

#[test]
fn a_template_that_never_ends_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let t = dir.path().join("loop.jinja");
    std::fs::write(
        &t,
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    )
    .unwrap();
    let (m, t) = (m.to_str().unwrap(), t.to_str().unwrap());
    refused(
        &chat_with_template(m, t),
        &["loop.jinja", "exceeds its bounds"],
    );
}

#[test]
fn a_one_position_context_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("ctx1.gguf");
    let spec = tokfire::model::synthetic::Spec {
        context: 1,
        ..Default::default()
    };
    tokfire::model::synthetic::write_gguf(&m, &spec).unwrap();
    let m = m.to_str().unwrap();
    refused(
        &["generate", "--model", m, "--prompt", "hi"],
        &[m, "context"],
    );
}

#[test]
fn a_prompt_longer_than_the_context_is_refused_before_prefill() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let long = "word ".repeat(2000);
    refused(
        &[
            "generate",
            "--model",
            m.to_str().unwrap(),
            "--prompt",
            &long,
        ],
        &["longer than the model's context of 256 positions"],
    );
}

#[test]
fn escape_sequences_in_a_record_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let out = dir.path().join("r.json");
    let mut a = vec!["run", "--jobs", "1", "--rounds", "1", "--allow-few-rounds"];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        out.to_str().unwrap(),
    ));
    support::ok(&a);
    let mut v = support::doc(&out);
    v["runs"][0]["workload"]["name"] = "evil\u{1b}]0;owned\u{7}\u{1b}[2J".into();
    v["runs"][0]["config"]["model"]["model"] = "m\u{9b}31m".into();
    let evil = dir.path().join("evil.json");
    std::fs::write(&evil, v.to_string()).unwrap();
    for format in ["text", "md", "csv"] {
        let s = support::ok(&["report", evil.to_str().unwrap(), "--format", format]);
        assert!(
            !s.contains('\u{1b}') && !s.contains('\u{9b}') && !s.contains('\u{7}'),
            "{format}"
        );
        assert!(s.contains("evil"), "{format}: the rest of the name is kept");
    }
}

#[test]
fn a_session_stopped_by_a_signal_keeps_its_finished_steps() {
    let dir = tempfile::tempdir().unwrap();
    let m = tiny(dir.path());
    let script = dir.path().join("s.toml");
    let text = format!(
        "name = \"s\"\n[[step]]\nload = \"{}\"\n[[step]]\nraw = \"once\"\nmax_tokens = 3\n\
         [[step]]\nidle = \"10m\"\n[[step]]\nraw = \"never\"\n",
        m.display()
    );
    std::fs::write(&script, text).unwrap();
    let out = dir.path().join("s.json");
    let mut child = support::spawn(&[
        "session",
        script.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // Wait until the request step is saved: the session then sits in its 10-minute gap.
    let steps = || -> usize {
        tokfire::record::io::read(&out)
            .ok()
            .and_then(|f| {
                f.runs
                    .first()
                    .and_then(|r| r.session().map(|s| s.steps.len()))
            })
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while steps() < 2 {
        assert!(Instant::now() < deadline && child.try_wait().unwrap().is_none());
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid. SIGHUP: the terminal went away.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let t0 = Instant::now();
    let res = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the idle gap is not slept out"
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(130), "{stderr}");
    assert!(support::has(&stderr, "interrupted by SIGHUP"), "{stderr}");
    let run = &support::read(&out).runs[0];
    assert_eq!(
        run.status,
        tokfire::record::RunStatus::Interrupted {
            signal: "SIGHUP".into()
        }
    );
    let kept = &run.session().unwrap().steps;
    assert_eq!(kept.len(), 3, "load, request and the cut-short idle gap");
    assert!(kept[2].idle_s.unwrap() < 60.0);
}

#[test]
fn a_record_kept_through_a_symlink_is_written_where_it_lives() {
    let dir = tempfile::tempdir().unwrap();
    let (m, wl) = (tiny(dir.path()), workload(dir.path(), WORKLOAD));
    let real_dir = dir.path().join("store");
    std::fs::create_dir(&real_dir).unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink(real_dir.join("r.json"), &link).unwrap();
    let mut a = vec!["run", "--jobs", "1", "--rounds", "1", "--allow-few-rounds"];
    a.extend(args(
        m.to_str().unwrap(),
        wl.to_str().unwrap(),
        link.to_str().unwrap(),
    ));
    support::ok(&a);
    assert!(
        link.symlink_metadata().unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
    assert_eq!(support::read(&real_dir.join("r.json")).runs.len(), 1);
}
