//! `tokfire cold` end to end on a tiny synthetic model written under the build folder (a disk
//! file system: a tmpfs keeps every page, so eviction could not take there): eviction measurably
//! drops residency, every clock is present and in order, a killed start is a failed start kept in
//! the record, `--drop-caches` without root is a clear error, `report` re-renders the run, and
//! SIGINT kills the running child and keeps the starts done in an interrupted record.

use std::path::{Path, PathBuf};

use tokfire::record::cold::{Counted, StartKind};
use tokfire::record::{ResultsFile, RunStatus};

use crate::support;
use support::{read, tiny, tokfire};

fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn cold_args<'a>(model: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "cold",
        "--model",
        model,
        "--prompt",
        "once upon",
        "-n",
        "3",
        "--threads",
        "1",
        "--out",
        out,
    ]
}

fn run_cold(dir: &Path, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let m = tiny(dir);
    let out = dir.join("cold.json");
    let mut a = cold_args(m.to_str().unwrap(), out.to_str().unwrap());
    a.extend(extra);
    let res = tokfire().args(&a).output().unwrap();
    (res, out)
}

#[test]
fn cold_starts_evict_and_time_every_clock() {
    let dir = disk_dir();
    let (res, out) = run_cold(dir.path(), &["--repeat", "2"]);
    let stdout = String::from_utf8_lossy(&res.stdout);
    support::fits_100(&stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    for want in [
        "cold median",
        "warm slowest",
        "first token",
        "read (median)",
        "counted: 2 cold, 2 warm",
        "load split s (header/tokenizer/weights/touch)",
    ] {
        assert!(
            support::has(&stdout, want),
            "missing {want:?} in:\n{stdout}"
        );
    }
    let file: ResultsFile = read(&out);
    let run = &file.runs[0];
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.config.verb, "cold");
    let cold = run.cold().expect("a cold record");
    assert_eq!(cold.starts.len(), 4);
    let kinds: Vec<StartKind> = cold.starts.iter().map(|s| s.kind).collect();
    use StartKind::{Cold, Warm};
    assert_eq!(kinds, [Cold, Warm, Cold, Warm], "interleaved");
    for s in &cold.starts {
        let c = s.clocks.expect("every clock of a finished start");
        let seq = [
            c.main_s,
            c.loaded_s,
            c.warm_s,
            c.first_token_s,
            c.last_token_s,
            s.exit_s,
        ];
        assert!(
            seq.windows(2).all(|w| w[0] <= w[1]) && seq[0] > 0.0,
            "{seq:?}"
        );
        assert!(s.output_tokens >= 1 && s.read_bytes.is_some());
        let split = s
            .load_split
            .as_ref()
            .expect("a GGUF start records its load split");
        let cell = format!(
            "{:.3}/{:.3}/{:.3}/{:.3} ",
            split.header_s, split.tokenizer_s, split.weights_s, split.first_touch_s
        );
        assert!(
            support::has(&stdout, &cell),
            "missing {cell:?} in:\n{stdout}"
        );
        match s.kind {
            Cold => {
                let e = s
                    .eviction
                    .as_ref()
                    .expect("cold starts record the eviction");
                let (before, after) = (e.before.unwrap(), e.after.unwrap());
                assert!(
                    before.fraction() > after.fraction() && after.fraction() <= 0.05,
                    "eviction drops residency: {before:?} → {after:?}"
                );
                assert_eq!(s.counted, Counted::Cold);
                assert!(
                    s.read_bytes.unwrap() > 0,
                    "a cold child reads the file from disk"
                );
            }
            Warm => {
                assert!(s.eviction.is_none());
                assert_eq!(s.residency.unwrap().label(), "page-cache warm");
                assert_eq!(s.counted, Counted::Warm);
            }
        }
    }
    let again = tokfire()
        .args(["report", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(again.status.success());
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        support::has(&text, "tokfire cold") && support::has(&text, "cold median"),
        "{text}"
    );
    let csv = tokfire()
        .args(["report", out.to_str().unwrap(), "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&csv.stdout).lines().count(),
        5,
        "a header and 4 starts"
    );
    support::every_format(&out, "cold", &["cold median", "first token"]);
}

#[test]
fn a_killed_start_is_a_failed_start_kept_in_the_record() {
    let dir = disk_dir();
    let (res, out) = run_cold(dir.path(), &["--repeat", "1", "--timeout", "0.001"]);
    assert_eq!(res.status.code(), Some(1), "failed starts fail the run");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(support::has(&stderr, "2 of 2 starts failed"), "{stderr}");
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        support::has(&stdout, "FAILED")
            && support::has(&stdout, "hung: still running after --timeout"),
        "{stdout}"
    );
    let run = &read(&out).runs[0];
    let cold = run.cold().unwrap();
    assert_eq!(cold.starts.len(), 2);
    assert!(cold
        .starts
        .iter()
        .all(|s| s.counted == Counted::Failed && s.clocks.is_none()));
}

#[test]
fn bad_flags_are_clear_errors() {
    let dir = disk_dir();
    let (res, _) = run_cold(dir.path(), &["--repeat", "0"]);
    assert_eq!(res.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&res.stderr).contains("--repeat 0: 1 to 1000 cold starts"));
    let (res, _) = run_cold(dir.path(), &["--timeout", "0"]);
    assert!(String::from_utf8_lossy(&res.stderr).contains("--timeout"));
}

#[cfg(unix)]
#[test]
fn drop_caches_without_root_is_a_clear_error() {
    let dir = disk_dir();
    let m = tiny(dir.path());
    let out = dir.path().join("c.json");
    let mut a = cold_args(m.to_str().unwrap(), out.to_str().unwrap());
    a.push("--drop-caches");
    // As root, run the binary as `nobody` (setpriv) so the check meets a user without the right.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = assert_cmd::cargo::cargo_bin("tokfire");
    let res = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(&a);
        match c.output() {
            Ok(o) => o,
            Err(_) => return, // no setpriv: nothing to test as root
        }
    } else {
        std::process::Command::new(&bin).args(&a).output().unwrap()
    };
    assert_eq!(res.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        support::has(&stderr, "--drop-caches") && support::has(&stderr, "needs root"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran, nothing recorded");
}

/// Starts in the first run of `out` (0 before the file exists; it is valid whenever it does).
fn starts_saved(out: &Path) -> usize {
    if !out.exists() {
        return 0;
    }
    let file: ResultsFile = tokfire::record::io::read(out).expect("the record is always valid");
    file.runs
        .first()
        .and_then(|r| r.cold())
        .map_or(0, |c| c.starts.len())
}

/// Processes whose command line holds `needle` (other than this test process).
#[cfg(target_os = "linux")]
fn processes_with(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy() != me)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("cold-child") && c.contains(needle))
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn sigint_kills_the_running_child_and_keeps_the_starts_done() {
    let dir = disk_dir();
    let m = tiny(dir.path());
    let out = dir.path().join("interrupted.json");
    let mut a = cold_args(m.to_str().unwrap(), out.to_str().unwrap());
    a.extend(["--repeat", "200"]);
    let mut child = support::spawn(&a);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while starts_saved(&out) < 1 {
        assert!(std::time::Instant::now() < deadline, "no start saved");
        assert!(child.try_wait().unwrap().is_none(), "ended before a start");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let res = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    let run = &read(&out).runs[0];
    let starts = &run.cold().unwrap().starts;
    if starts.len() == 400 {
        return; // the signal came after the last start: nothing to interrupt
    }
    assert_eq!(res.status.code(), Some(130), "{stderr}");
    assert!(
        support::has(
            &stderr,
            "interrupted by SIGINT: the running child was killed"
        ),
        "{stderr}"
    );
    assert_eq!(
        run.status,
        RunStatus::Interrupted {
            signal: "SIGINT".into()
        }
    );
    assert!(!starts.is_empty(), "the starts done are kept");
    for (i, s) in starts.iter().enumerate() {
        assert_eq!(s.index, i, "in order, none lost");
        assert!(
            s.clocks.is_some() || s.failure.is_some(),
            "start {i} is whole"
        );
    }
    let log = std::fs::read_to_string(out.with_extension("txt")).unwrap();
    assert!(
        support::has(&log, "interrupted (SIGINT)") && support::has(&log, "its start is not kept"),
        "{log}"
    );
    let left = processes_with(m.to_str().unwrap());
    assert!(left.is_empty(), "children left running: {left:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_model_another_process_maps_is_named_and_private_copy_makes_it_cold() {
    let dir = disk_dir();
    let m = tiny(dir.path());
    // This test process maps the model, as a running server would.
    let map = support::hold_mapped(&m);
    let out = dir.path().join("cold.json");
    let mut a = cold_args(m.to_str().unwrap(), out.to_str().unwrap());
    a.extend(["--repeat", "1"]);
    let res = tokfire().args(&a).output().unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let me = format!("mapped by pid {}", std::process::id());
    assert!(support::has(&stdout, format!("not cold: {me}")), "{stdout}");
    assert!(support::has(&stdout, "--private-copy"), "{stdout}");
    let file_back = read(&out);
    let start = &file_back.runs[0].cold().unwrap().starts[0];
    assert_eq!(start.counted, Counted::NotCold);
    let why = start.eviction.as_ref().unwrap().why_not.as_deref().unwrap();
    assert!(why.starts_with(&me), "{why}");
    // The same model through a private copy: evicted to nothing, and the copy is gone after.
    let out2 = dir.path().join("copy.json");
    let mut a = cold_args(m.to_str().unwrap(), out2.to_str().unwrap());
    a.extend(["--repeat", "1", "--private-copy"]);
    let res = tokfire().args(&a).output().unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let run = read(&out2).runs.remove(0);
    let cold = run.cold().unwrap();
    assert!(cold.settings.private_copy);
    let s = &cold.starts[0];
    assert_eq!(s.counted, Counted::Cold, "{s:?}");
    assert_eq!(s.eviction.as_ref().unwrap().after.unwrap().fraction(), 0.0);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("private-copy"))
        .collect();
    assert!(left.is_empty(), "the private copy is removed");
    drop(map);
}

/// The state letter and parent of process `pid` (`/proc/PID/stat`), if it exists.
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold spaces: the fields after its last ')'.
    let mut rest = text[text.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}

fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| proc_stat(pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

#[test]
fn a_start_dies_with_a_killed_parent() {
    let dir = disk_dir();
    let m = tiny(dir.path());
    let out = dir.path().join("cold.json");
    let mut a = cold_args(m.to_str().unwrap(), out.to_str().unwrap());
    a.extend(["--repeat", "50", "--timeout", "60"]);
    let mut parent = std::process::Command::new(assert_cmd::cargo::cargo_bin("tokfire"))
        .args(&a)
        .env("TOKFIRE_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let kill = |pid: u32, sig| unsafe { libc::kill(pid as i32, sig) };
    // Catch a start and stop it, so that it cannot end on its own.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let kid = 'caught: loop {
        assert!(
            parent.try_wait().unwrap().is_none(),
            "cold ended before a start was caught"
        );
        assert!(std::time::Instant::now() < deadline, "no start seen");
        for pid in children_of(parent.id()) {
            kill(pid, libc::SIGSTOP);
            std::thread::sleep(std::time::Duration::from_millis(20));
            if proc_stat(pid).is_some_and(|(s, _)| s == 'T') {
                break 'caught pid;
            }
        }
    };
    kill(parent.id(), libc::SIGKILL);
    parent.wait().unwrap();
    // Let it run: caught before its death signal was armed, it must see the parent gone and
    // stop there; caught after, the signal has killed it already.
    kill(kid, libc::SIGCONT);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while proc_stat(kid).is_some_and(|(s, _)| s != 'Z') {
        if std::time::Instant::now() > deadline {
            kill(kid, libc::SIGKILL);
            panic!("start {kid} outlived its killed parent");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
