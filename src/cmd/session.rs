//! `tokfire session FILE`: the script parsed (errors with its line), every model it loads
//! resolved before the first step runs (an unknown model names its line), the steps run with
//! progress on stderr, the step table on stdout and the record appended.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::bench::session::{self, SessionPlan};
use crate::cli::SessionArgs;
use crate::config::run::{EngineSettings, RunConfig, DEFAULT_HEADROOM};
use crate::config::DeviceSpec;
use crate::error::ConfigError;
use crate::record::session::{StepKindTag, StepRecord};
use crate::report;
use crate::workload::session::{Session, StepKind};
use crate::workload::{Criteria, Workload, WorkloadError};

/// Largest `--time-scale`: idle gaps ten times longer than scripted (a day's gap, the longest a
/// script may have, then sleeps ten days).
const MAX_TIME_SCALE: f64 = 10.0;

pub(crate) fn run(args: SessionArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    let command: Vec<String> = std::env::args().collect();
    let total = plan.session.steps.len();
    let stop = super::bench::stop_on_signals()?;
    let record = session::run(&plan, command, Some(&stop), |s| {
        eprintln!(
            "{}",
            report::wrap(&format!(
                "step {}/{total} (line {}): {}",
                s.step + 1,
                s.line,
                progress_line(s)
            ))
        )
    })?;
    print!("{}", report::session::render(&record, args.format));
    let text = report::session::render(&record, crate::config::run::Format::Text);
    super::record_log::append_and_say(&plan.config.out, &record, &text)
}

fn progress_line(s: &StepRecord) -> String {
    let f = |v: Option<f64>| v.map_or("n/a".into(), |x| format!("{x:.3} s"));
    match s.kind {
        StepKindTag::Load => format!(
            "{}: {} page cache, loaded in {}, warm-up {}",
            s.label,
            match s.cold {
                Some(true) => "cold",
                Some(false) => "warm",
                None => "unknown",
            },
            f(s.load_s),
            f(s.warmup_s)
        ),
        StepKindTag::Request => format!(
            "{}: first token {}, done {}",
            s.label,
            f(s.ttft_s),
            f(s.completion_s)
        ),
        StepKindTag::Idle => format!("idle {}", f(s.idle_s)),
    }
}

/// Validates the arguments and the script into a plan.
fn plan(args: &SessionArgs) -> anyhow::Result<SessionPlan> {
    if !(args.time_scale.is_finite() && (0.0..=MAX_TIME_SCALE).contains(&args.time_scale)) {
        let v = args.time_scale.to_string();
        return Err(ConfigError::flag(
            "--time-scale",
            v,
            format!(
                "a factor from 0 to {MAX_TIME_SCALE} for the idle gaps, e.g. 0.01 (1 = real time)"
            ),
        )
        .into());
    }
    let source = args.file.display().to_string();
    let text =
        crate::files::read_text(&args.file, crate::files::MAX_INPUT_BYTES).map_err(|error| {
            WorkloadError::Io {
                path: args.file.clone(),
                error,
            }
        })?;
    let s = crate::workload::session::parse(&text, &source)?;
    let mut model = super::base_config("", args.cache_dir.clone());
    model.device = DeviceSpec::parse(&args.device)?;
    model.device.check_built()?;
    model.load = args.load;
    model.repack = args.repack;
    // Every model the script loads is found (or fetched) before the first step runs.
    for step in &s.steps {
        if let StepKind::Load { model: name, .. } = &step.kind {
            let mut cfg = model.clone();
            cfg.model = name.clone();
            crate::model::resolve(&cfg).map_err(|e| WorkloadError::Invalid {
                source_name: source.clone(),
                key: format!("line {}: load = {name:?}", step.line),
                reason: e.to_string(),
            })?;
        }
    }
    if let Some(StepKind::Load {
        model: name, dtype, ..
    }) = s.steps.first().map(|s| &s.kind)
    {
        model.model = name.clone();
        model.dtype = *dtype;
    }
    let stem = Path::new(&args.file)
        .file_stem()
        .map_or("session".into(), |x| x.to_string_lossy().to_string());
    let config = RunConfig {
        verb: "session".into(),
        model,
        runtime: super::runtime_config(&args.runtime)?,
        workload: source.clone(),
        jobs: vec![1],
        rounds: 1,
        warmup_rounds: 0,
        sampling: Default::default(),
        // One request at a time, the other budgets as `run`'s defaults.
        engine: EngineSettings {
            max_seqs: 1,
            prefix_cache: args.prefix_cache,
            ..Default::default()
        },
        max_tokens: None,
        out: args
            .out
            .clone()
            .unwrap_or_else(|| args.out_dir.join(format!("session-{stem}.json"))),
        format: args.format,
        trace: None,
        headroom: DEFAULT_HEADROOM,
        notes: Vec::new(),
        spec: Default::default(),
        think: Default::default(),
        quiet_wait_s: 0.0,
    };
    Ok(SessionPlan {
        workload: workload_of(&s, &text),
        config,
        session: s,
        time_scale: args.time_scale,
    })
}

/// The record's workload entry for a session: its name, file and content hash, no tasks.
fn workload_of(s: &Session, text: &str) -> Workload {
    let hash = format!("{:x}", Sha256::digest(text.as_bytes()));
    Workload {
        name: s.name.clone(),
        version: 0,
        description: s.description.clone(),
        use_case: "a scripted session".into(),
        source: s.source.clone(),
        hash,
        locked: false,
        criteria: Criteria {
            label: "none (a session is measured, not judged)".into(),
            ttft_max_s: None,
            per_job_tok_s_min: None,
            completion_max_s: None,
            pass_rate_min: None,
        },
        tasks: Vec::new(),
    }
}
