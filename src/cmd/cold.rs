//! `tokfire cold`: arguments → a validated [`ColdPlan`], the starts (progress on stderr), the
//! cold/warm table on stdout and the record; and the hidden `cold-child` verb each start runs.

use crate::bench::cold::{self, ColdPlan};
use crate::bench::cold_child::{self, ChildSpec};
use crate::bench::error::BenchError;
use crate::cli::{ColdArgs, ColdChildArgs};
use crate::config::run::{EngineSettings, RunConfig, DEFAULT_HEADROOM};
use crate::error::ConfigError;
use crate::measure::{monotonic, pagecache};
use crate::record::cold::{ColdSettings, Counted, StartRecord};
use crate::record::RunStatus;
use crate::report;
use crate::workload::{self, Criteria, Prompt, Task, Workload};

/// Output limit of a `--prompt` start when `-n` is not given.
const PROMPT_MAX_TOKENS: usize = 32;

pub fn run(args: ColdArgs) -> anyhow::Result<()> {
    let mut plan = plan(&args)?;
    let command: Vec<String> = std::env::args().collect();
    let total = plan.settings.repeat * 2;
    let stop = super::bench::stop_on_signals()?;
    let record = cold::run(&mut plan, command, Some(&stop), |s| {
        eprintln!("start {}/{total}: {}", s.index + 1, progress_line(s))
    })?;
    print!("{}", report::cold::render(&record, plan.config.format));
    let text = report::cold::render(&record, crate::config::run::Format::Text);
    let out = &plan.config.out;
    super::record_log::append_and_say(out, &record, &text)?;
    let starts = record.cold().expect("a cold record; this is a bug");
    if let RunStatus::Interrupted { signal } = &record.status {
        return Err(BenchError::StartsInterrupted {
            signal: signal.clone(),
            out: out.clone(),
            starts: starts.starts.len(),
        }
        .into());
    }
    let failed = crate::record::cold::summarize(starts).failed;
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {total} starts failed (each reason is listed above and kept in {})",
            out.display()
        );
    }
    Ok(())
}

/// The hidden verb: one start, its report as one JSON line on stdout.
pub fn child(args: ColdChildArgs) -> anyhow::Result<()> {
    let main_ns = monotonic::now_ns();
    let spec: ChildSpec = serde_json::from_str(&args.spec)
        .map_err(|e| ConfigError::flag("--spec", "…", format!("not a start spec: {e}")))?;
    let report = cold_child::run(&spec, main_ns)?;
    println!(
        "{}",
        serde_json::to_string(&report).expect("reports serialize; this is a bug")
    );
    Ok(())
}

fn progress_line(s: &StartRecord) -> String {
    let kind = match s.counted {
        Counted::Cold => "cold",
        Counted::Warm => "warm",
        Counted::NotCold => "NOT cold (eviction did not take)",
        Counted::Failed => "FAILED",
    };
    let resident = s
        .residency
        .map_or("n/a".into(), |r| format!("{:.0} %", r.fraction() * 100.0));
    let why = s
        .eviction
        .as_ref()
        .and_then(|e| e.why_not.as_deref())
        .map_or(String::new(), |w| format!(" — {w}"));
    let line = match (&s.clocks, &s.failure) {
        (Some(c), _) => format!(
            "{kind}, {resident} resident, loaded {:.3} s, first token {:.3} s",
            c.loaded_s, c.first_token_s
        ),
        (None, Some(why)) => format!("{kind}: {why}"),
        (None, None) => kind.into(),
    };
    line + &why
}

/// Longest `--timeout` of one start, seconds (a day).
const MAX_TIMEOUT_S: f64 = 86_400.0;
/// Most `--repeat` (each a cold and a warm start, in fresh processes).
const MAX_REPEAT: usize = 1000;

/// Validates the arguments into a plan.
fn plan(args: &ColdArgs) -> anyhow::Result<ColdPlan> {
    if args.repeat == 0 || args.repeat > MAX_REPEAT {
        return Err(ConfigError::flag(
            "--repeat",
            args.repeat.to_string(),
            format!("1 to {MAX_REPEAT} cold starts (5 or more for a median)"),
        )
        .into());
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= MAX_TIMEOUT_S) {
        let v = args.timeout.to_string();
        let why = format!("seconds above 0 and at most {MAX_TIMEOUT_S} (a day), e.g. 120");
        return Err(ConfigError::flag("--timeout", v, why).into());
    }
    if args.max_tokens == Some(0) {
        return Err(ConfigError::flag("--max-tokens", "0", "must be at least 1").into());
    }
    if args.drop_caches && !pagecache::is_root() {
        return Err(ConfigError::flag(
            "--drop-caches",
            "given",
            format!("writing {} needs root; run as root (sudo), or leave the flag out: posix_fadvise eviction of the model's own files needs no privilege", pagecache::DROP_CACHES),
        )
        .into());
    }
    let (workload, task) = task(args)?;
    let max_tokens = args.max_tokens.unwrap_or(task.max_tokens);
    let sampling = args.sampling.config();
    let stem = if args.prompt.is_some() {
        "prompt".to_string()
    } else {
        workload.name.clone()
    };
    let config = RunConfig {
        verb: "cold".into(),
        model: super::model_config(&args.model)?,
        runtime: super::runtime_config(&args.runtime)?,
        workload: args
            .prompt
            .as_ref()
            .map_or(args.workload.clone(), |_| "--prompt".into()),
        jobs: vec![1],
        rounds: args.repeat,
        warmup_rounds: 0,
        sampling,
        // One request at a time, the other budgets as `run`'s defaults.
        engine: EngineSettings {
            max_seqs: 1,
            ..Default::default()
        },
        max_tokens: Some(max_tokens),
        out: args
            .out
            .clone()
            .unwrap_or_else(|| args.out_dir.join(format!("cold-{stem}.json"))),
        format: args.format,
        trace: None,
        headroom: DEFAULT_HEADROOM,
        notes: Vec::new(),
        spec: Default::default(),
        think: Default::default(),
        quiet_wait_s: 0.0,
    };
    config.sampling.validate()?;
    let exe = std::env::current_exe().map_err(|e| {
        anyhow::anyhow!("cannot find this program's own binary to start it again: {e}")
    })?;
    Ok(ColdPlan {
        settings: ColdSettings {
            repeat: args.repeat,
            timeout_s: args.timeout,
            drop_caches: args.drop_caches,
            private_copy: args.private_copy,
            task: task.id.clone(),
            max_tokens,
            files: Vec::new(),
        },
        config,
        workload,
        task,
        exe,
    })
}

/// The workload and the task every start runs.
fn task(args: &ColdArgs) -> anyhow::Result<(Workload, Task)> {
    if let Some(text) = &args.prompt {
        return Ok(prompt_workload(
            text,
            args.max_tokens.unwrap_or(PROMPT_MAX_TOKENS),
        ));
    }
    let w = workload::load(&args.workload)?;
    let task = match &args.task {
        Some(id) => w.tasks.iter().find(|t| &t.id == id).ok_or_else(|| {
            let known: Vec<&str> = w.tasks.iter().map(|t| t.id.as_str()).collect();
            ConfigError::flag(
                "--task",
                id.clone(),
                format!(
                    "no such task in {}; its tasks: {}",
                    w.name,
                    known.join(", ")
                ),
            )
        })?,
        None => w.tasks.first().ok_or_else(|| {
            ConfigError::flag(
                "--workload",
                args.workload.clone(),
                "the workload has no tasks",
            )
        })?,
    };
    if task.is_agent() {
        let why =
            "a cold start runs one generation; pick a task without tools (--task), or --prompt";
        return Err(ConfigError::flag("--task", task.id.clone(), why).into());
    }
    let task = task.clone();
    Ok((w, task))
}

/// A one-task workload around a raw `--prompt` (no checks, no criteria).
fn prompt_workload(text: &str, max_tokens: usize) -> (Workload, Task) {
    let task = Task {
        id: "prompt".into(),
        prompt: Prompt::Raw(text.into()),
        max_tokens,
        checks: Vec::new(),
        abstain: Default::default(),
        tools: Vec::new(),
        required_calls: Vec::new(),
        max_turns: 1,
    };
    let criteria = Criteria {
        label: "none (a --prompt start is not judged)".into(),
        ttft_max_s: None,
        per_job_tok_s_min: None,
        completion_max_s: None,
        pass_rate_min: None,
    };
    let hash = workload::schema::content_hash("prompt", 0, &criteria, std::slice::from_ref(&task));
    let w = Workload {
        name: "prompt".into(),
        version: 0,
        description: "the --prompt text".into(),
        use_case: "one raw prompt".into(),
        source: "--prompt".into(),
        hash,
        locked: false,
        criteria,
        tasks: vec![task.clone()],
    };
    (w, task)
}
