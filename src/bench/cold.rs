//! `tokfire cold`: starts the same binary as a fresh child process per start, cold and warm
//! interleaved (cold, warm, cold, …). Before a cold start the model's files are evicted from the
//! page cache (`posix_fadvise(DONTNEED)`, and `drop_caches` when asked) and the eviction is
//! checked with `mincore`; before a warm start they are read into it. The child reports its
//! phases on the shared monotonic clock; the parent stamps the start, waits with a timeout, and
//! keeps every start in the record, failed ones too, saving after each (atomically). A stop
//! request (SIGINT, SIGTERM) kills the running child, leaves that unfinished start out, and ends
//! the run marked interrupted with the starts done so far.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::cold_child::ChildSpec;
use super::error::BenchError;
use crate::config::run::RunConfig;
use crate::measure::{monotonic, pagecache};
use crate::model::{self, inspect, ModelPath};
use crate::record::cold::{
    counted, ChildReport, ColdRecord, ColdSettings, Counted, Eviction, StartClocks, StartKind,
    StartRecord,
};
use crate::record::io::RecordWriter;
use crate::record::kind::RunKind;
use crate::record::{ModelInfo, RunRecord, RunStatus};
use crate::workload::{Task, Workload};

/// Everything a `cold` run needs, validated.
pub struct ColdPlan {
    /// The run's configuration (`verb = "cold"`, `rounds` = starts of each kind).
    pub config: RunConfig,
    pub settings: ColdSettings,
    pub workload: Workload,
    /// The task every start runs.
    pub task: Task,
    /// The binary each child runs (this one).
    pub exe: PathBuf,
}

/// Runs the plan, calling `progress` after every start; returns the saved record, complete or,
/// once `stop` holds a signal number, interrupted.
pub fn run(
    plan: &mut ColdPlan,
    command: Vec<String>,
    stop: Option<&AtomicUsize>,
    mut progress: impl FnMut(&StartRecord),
) -> Result<RunRecord, BenchError> {
    let writer = RecordWriter::open(&plan.config.out)?;
    let original = model::resolve(&plan.config.model)?;
    // Held until the starts are done: dropping it removes the copy.
    let copy = plan
        .settings
        .private_copy
        .then(|| super::private_copy::PrivateCopy::make(&original, &plan.config.out))
        .transpose()?;
    let path = copy.as_ref().map_or(original.clone(), |c| c.model.clone());
    let files = super::sweep::weight_files(&path);
    plan.settings.files = files.clone();
    let mut record = RunRecord {
        runtime: super::runtime::info(&plan.config.runtime, plan.config.model.device),
        model: model_info(&original)?,
        kind: RunKind::Cold(ColdRecord {
            settings: plan.settings.clone(),
            starts: Vec::new(),
        }),
        ..super::sweep::new_record(plan.config.clone(), plan.workload.clone(), command)
    };
    // Children get the resolved file, so none of them fetches or resolves again.
    let mut model_cfg = plan.config.model.clone();
    model_cfg.model = path.path().display().to_string();
    // ... and the level auto chose here, so none of them reads the kept choice in its clocks.
    let mut runtime = plan.config.runtime;
    if !runtime.candle {
        runtime.kernels = runtime
            .kernels
            .or_else(|| Some(super::kernel_choice::auto_level()));
    }
    let spec = ChildSpec {
        model: model_cfg,
        runtime,
        prompt: plan.task.prompt.clone(),
        max_tokens: plan.settings.max_tokens,
        sampling: plan.config.sampling.clone(),
        ids: None,
        prefill_chunk: None,
    };
    let spec_json = serde_json::to_string(&spec).expect("specs serialize; this is a bug");
    writer.save(&record)?;
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let timeout = Duration::from_secs_f64(plan.settings.timeout_s);
    for i in 0..plan.settings.repeat * 2 {
        if signalled(stop).is_some() {
            break;
        }
        let kind = if i % 2 == 0 {
            StartKind::Cold
        } else {
            StartKind::Warm
        };
        let eviction = prepare(kind, &refs, plan.settings.drop_caches);
        let residency = pagecache::residency(&refs);
        let Some(mut start) = one_start(&plan.exe, &spec_json, timeout, stop) else {
            break;
        };
        start.index = i;
        start.kind = kind;
        start.residency = residency;
        start.counted = counted(kind, eviction.as_ref(), start.failure.is_some());
        start.eviction = eviction;
        let cold = record.cold_mut().expect("set above; this is a bug");
        cold.starts.push(start.clone());
        writer.save(&record)?;
        progress(&start);
    }
    record.status = match signalled(stop) {
        Some(n) => RunStatus::Interrupted {
            signal: super::sweep::signal_name(n),
        },
        None => RunStatus::Complete,
    };
    writer.save(&record)?;
    Ok(record)
}

/// The signal number a stop was requested with, if any.
fn signalled(stop: Option<&AtomicUsize>) -> Option<usize> {
    stop.map(|s| s.load(Ordering::Relaxed)).filter(|&n| n != 0)
}

/// Empties (cold) or fills (warm) the page cache for `files`; the eviction as it went.
fn prepare(kind: StartKind, files: &[&Path], drop_caches: bool) -> Option<Eviction> {
    if kind == StartKind::Warm {
        // A failed read leaves the residency as it is; the start records what it was.
        let _ = pagecache::touch(files);
        return None;
    }
    let before = pagecache::residency(files);
    let mut method = "posix_fadvise(DONTNEED)".to_string();
    let mut error = pagecache::evict(files).err().map(|e| e.to_string());
    if drop_caches {
        method += " + drop_caches";
        if let Err(e) = pagecache::drop_caches() {
            error.get_or_insert(format!("writing {}: {e}", pagecache::DROP_CACHES));
        }
    }
    let mut e = Eviction {
        method,
        before,
        after: pagecache::residency(files),
        error,
        why_not: None,
    };
    if !e.took() {
        e.why_not = Some(crate::measure::holders::why_resident(
            files,
            e.error.as_deref(),
            crate::measure::holders::FIX_COLD,
        ));
    }
    Some(e)
}

/// What a child left behind.
struct Exit {
    status: Option<ExitStatus>,
    timed_out: bool,
    stdout: String,
    stderr: String,
    spawn_ns: u64,
    exit_s: f64,
    /// A stop request ended the wait; the child was killed.
    interrupted: bool,
}

/// Starts one child and turns its exit and report into a start (kind and page cache filled in
/// by the caller); none when a stop request killed it before it finished.
pub(crate) fn one_start(
    exe: &Path,
    spec_json: &str,
    timeout: Duration,
    stop: Option<&AtomicUsize>,
) -> Option<StartRecord> {
    let mut cmd = Command::new(exe);
    cmd.args(["cold-child", "--spec", spec_json]);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: only prctl(2) and getppid(2), async-signal-safe, run between fork and exec.
        // A child dies with this process (killed with -9, say) instead of running on as an
        // orphan; one whose parent died before the prctl took effect stops here.
        let parent = std::process::id() as libc::pid_t;
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                match libc::getppid() == parent {
                    true => Ok(()),
                    false => Err(std::io::Error::other("the parent died before the start")),
                }
            });
        }
    }
    let mut start = StartRecord {
        index: 0,
        kind: StartKind::Cold,
        counted: Counted::Failed,
        residency: None,
        eviction: None,
        failure: None,
        clocks: None,
        exit_s: 0.0,
        read_bytes: None,
        peak_rss_bytes: None,
        prompt_tokens: 0,
        output_tokens: 0,
        output: String::new(),
        stderr_tail: String::new(),
        load_split: None,
        sentinel: None,
    };
    let seen = crate::measure::sentinel::Snapshot::take();
    let exit = run_child(cmd, timeout, stop);
    start.sentinel = Some(seen.until(&crate::measure::sentinel::Snapshot::take()));
    let exit = match exit {
        Ok(e) => e,
        Err(e) => {
            start.failure = Some(format!("could not start {}: {e}", exe.display()));
            return Some(start);
        }
    };
    // A Ctrl-C in a terminal reaches the child too: whatever it did then is not a start.
    let failed = !exit.status.is_some_and(|s| s.success());
    if exit.interrupted || (failed && signalled(stop).is_some()) {
        return None;
    }
    start.exit_s = exit.exit_s;
    match judge(&exit, timeout) {
        Ok(report) => fill(&mut start, &report, exit.spawn_ns),
        Err(why) => {
            start.failure = Some(why);
            start.stderr_tail = tail(&exit.stderr, 2000);
        }
    }
    Some(start)
}

fn fill(start: &mut StartRecord, r: &ChildReport, spawn_ns: u64) {
    let at = |ns| monotonic::seconds_between(spawn_ns, ns).unwrap_or(f64::NAN);
    start.clocks = Some(StartClocks {
        main_s: at(r.main_ns),
        loaded_s: at(r.loaded_ns),
        warm_s: at(r.warm_ns),
        first_token_s: at(r.first_token_ns),
        last_token_s: at(r.last_token_ns),
    });
    start.read_bytes = r.read_bytes;
    start.peak_rss_bytes = r.peak_rss_bytes;
    start.prompt_tokens = r.prompt_tokens;
    start.output_tokens = r.output_tokens;
    start.output = r.output.clone();
    start.load_split = r.load_split.clone();
}

/// The child's report, or why the start failed.
fn judge(exit: &Exit, timeout: Duration) -> Result<ChildReport, String> {
    if exit.timed_out {
        return Err(format!(
            "hung: still running after --timeout {:.1} s, killed",
            timeout.as_secs_f64()
        ));
    }
    let status = exit.status.ok_or("the child's exit status is unknown")?;
    if !status.success() {
        return Err(describe_exit(status, &exit.stderr));
    }
    let line = exit.stdout.lines().rev().find(|l| l.starts_with('{'));
    let line = line.ok_or("the child exited 0 but printed no report")?;
    serde_json::from_str(line).map_err(|e| format!("the child's report is unreadable: {e}"))
}

/// `killed by signal 9 (SIGKILL)`, or `exited with status 1: <last stderr line>`.
pub fn describe_exit(status: ExitStatus, stderr: &str) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    match (status.code(), last) {
        (Some(c), Some(l)) => format!("exited with status {c}: {}", l.trim()),
        (Some(c), None) => format!("exited with status {c}"),
        (None, _) => "ended without an exit status".into(),
    }
}

/// Spawns `cmd` (stdout and stderr captured), stamping the monotonic clock just before, and
/// waits up to `timeout` or a stop request, killing it after.
fn run_child(
    mut cmd: Command,
    timeout: Duration,
    stop: Option<&AtomicUsize>,
) -> std::io::Result<Exit> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let spawn_ns = monotonic::now_ns();
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let (status, ended) = wait(&mut child, started, timeout, stop);
    let exit_s = started.elapsed().as_secs_f64();
    Ok(Exit {
        status,
        timed_out: ended == Ended::TimedOut,
        interrupted: ended == Ended::Stopped,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        spawn_ns,
        exit_s,
    })
}

/// How waiting for a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited,
    /// Still running at the timeout: killed.
    TimedOut,
    /// A stop request came: killed.
    Stopped,
}

fn wait(
    child: &mut Child,
    started: Instant,
    timeout: Duration,
    stop: Option<&AtomicUsize>,
) -> (Option<ExitStatus>, Ended) {
    loop {
        let ended = if signalled(stop).is_some() {
            Ended::Stopped
        } else if started.elapsed() >= timeout {
            Ended::TimedOut
        } else {
            Ended::Exited
        };
        match child.try_wait() {
            Ok(Some(s)) => return (Some(s), Ended::Exited),
            Ok(None) if ended != Ended::Exited => {
                let _ = child.kill();
                return (child.wait().ok(), ended);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => return (None, Ended::Exited),
        }
    }
}

/// Reads a pipe to its end on a thread (so a chatty child never blocks on a full pipe).
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let mut bytes = Vec::new();
            let _ = p.read_to_end(&mut bytes);
            s = String::from_utf8_lossy(&bytes).into_owned();
        }
        s
    })
}

/// The last `n` bytes of `s` (at a character boundary).
fn tail(s: &str, n: usize) -> String {
    let mut from = s.len().saturating_sub(n);
    while !s.is_char_boundary(from) {
        from += 1;
    }
    s[from..].to_string()
}

pub(crate) fn model_info(path: &ModelPath) -> Result<ModelInfo, BenchError> {
    let report = match path {
        ModelPath::Gguf(p) => inspect::inspect_gguf(p)?,
        ModelPath::Safetensors(p) => inspect::inspect_dir(p)?,
    };
    let files = super::sweep::weight_files(path);
    let sha256 = match &report.sha256 {
        Some(s) => s.clone(),
        None => {
            let parts: Result<Vec<String>, _> =
                files.iter().map(|f| inspect::sha256_file(f)).collect();
            parts?.join("+")
        }
    };
    Ok(ModelInfo {
        path: path.path().to_path_buf(),
        sha256,
        file_bytes: files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum(),
        arch: report.architecture,
        parameters: report.parameters,
        kv_bytes_per_token: 0,
    })
}

#[cfg(test)]
#[path = "cold_tests.rs"]
mod tests;
