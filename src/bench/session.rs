//! `tokfire session`: runs a [`Session`] script on one timeline in this process — loads (the
//! current model dropped first; page-cache residency read with `mincore` before, eviction when
//! the step asks), one warm-up forward after each load, requests one after the other, idle gaps
//! slept for `seconds × time_scale` — and keeps every step in the record, saved after each.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::error::BenchError;
use crate::config::run::RunConfig;
use crate::config::ModelConfig;
use crate::engine::batching::Engine;
use crate::engine::generate::{generate, generate_on, one_request, GenerateParams};
use crate::error::EngineError;
use crate::measure::pagecache;
use crate::model::chat::Message;
use crate::model::prefix::PrefixCache;
use crate::model::{self, Loaded};
use crate::record::io::RecordWriter;
use crate::record::kind::RunKind;
use crate::record::session::{is_cold, SessionRecord, StepKindTag, StepRecord};
use crate::record::{RunRecord, RunStatus};
use crate::workload::session::{scaled, Session, StepKind};
use crate::workload::{Prompt, Workload};

/// Everything a session run needs, validated.
pub struct SessionPlan {
    /// The run's configuration (`verb = "session"`, model = the first load).
    pub config: RunConfig,
    pub session: Session,
    /// The workload the record names (the script itself: name, source, content hash).
    pub workload: Workload,
    /// Idle gaps are slept for `seconds × time_scale`.
    pub time_scale: f64,
}

/// Runs the plan (model steps on its runtime's workers), calling `progress` after every step;
/// returns the saved record.
///
/// Once `stop` holds a signal number the session stops between two steps (or in an idle gap);
/// a failing step ends it. Either way every finished step (and repetition) stays in the record,
/// marked interrupted or failed with the reason.
pub fn run(
    plan: &SessionPlan,
    command: Vec<String>,
    stop: Option<&AtomicUsize>,
    progress: impl FnMut(&StepRecord) + Send,
) -> Result<RunRecord, BenchError> {
    let rt = super::runtime::start(&plan.config.runtime)?;
    let _in = rt.enter();
    steps(plan, command, stop, progress)
}

fn steps(
    plan: &SessionPlan,
    command: Vec<String>,
    stop: Option<&AtomicUsize>,
    mut progress: impl FnMut(&StepRecord),
) -> Result<RunRecord, BenchError> {
    let writer = RecordWriter::open(&plan.config.out)?;
    let first = model::resolve(&plan.config.model)?;
    let mut record = RunRecord {
        runtime: super::runtime::info(&plan.config.runtime, plan.config.model.device),
        model: super::cold::model_info(&first)?,
        kind: RunKind::Session(SessionRecord {
            session: plan.session.clone(),
            time_scale: plan.time_scale,
            steps: Vec::new(),
        }),
        ..super::sweep::new_record(plan.config.clone(), plan.workload.clone(), command)
    };
    writer.save(&record)?;
    let start = Instant::now();
    let mut state = State::default();
    let signal = || stop.map_or(0, |s| s.load(Ordering::Relaxed));
    let mut result = Ok(());
    for (i, step) in plan.session.steps.iter().enumerate() {
        if signal() != 0 {
            result = Err(BenchError::Engine(EngineError::Interrupted));
            break;
        }
        let seen = crate::measure::sentinel::Snapshot::take();
        let mut entries = Vec::new();
        let ctx = StepCtx {
            plan,
            start,
            signal: &signal,
        };
        result = run_step(&ctx, i, &step.kind, step.line, &mut state, &mut entries);
        // Idle steps are the person's own time: what the machine did then is not our concern.
        if !matches!(step.kind, StepKind::Idle { .. }) {
            // One reading per step, on its first entry (repeats share the step's window).
            if let Some(e) = entries.first_mut() {
                e.sentinel = Some(seen.until(&crate::measure::sentinel::Snapshot::take()));
            }
        }
        // What finished is kept, even when the step then failed or was interrupted.
        for e in entries {
            let s = record.session_mut().expect("set above; this is a bug");
            s.steps.push(e.clone());
            writer.save(&record)?;
            progress(&e);
        }
        if result.is_err() {
            break;
        }
    }
    let kept = record.session().map_or(0, |s| s.steps.len());
    let out = plan.config.out.clone();
    record.status = match &result {
        Ok(()) => RunStatus::Complete,
        Err(BenchError::Engine(EngineError::Interrupted)) => RunStatus::Interrupted {
            signal: super::sweep::signal_name(signal()),
        },
        Err(e) => RunStatus::Failed {
            error: e.to_string(),
        },
    };
    writer.save(&record)?;
    match result {
        Ok(()) => Ok(record),
        Err(BenchError::Engine(EngineError::Interrupted)) => Err(BenchError::StepsInterrupted {
            signal: super::sweep::signal_name(signal()),
            out,
            steps: kept,
        }),
        Err(e) => Err(BenchError::Saved {
            out,
            source: Box::new(e),
        }),
    }
}

/// What every step shares: the plan, the session's start and the stop signal (0: none).
struct StepCtx<'a> {
    plan: &'a SessionPlan,
    start: Instant,
    signal: &'a dyn Fn() -> usize,
}

/// Sleeps `d`, waking every 50 ms to see whether a stop was asked; false when it was.
fn sleep_unless_stopped(d: std::time::Duration, signal: &dyn Fn() -> usize) -> bool {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if signal() != 0 {
            return false;
        }
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(50)));
    }
}

/// What carries from one step to the next: the model in memory, its prefix cache and the
/// conversation so far.
#[derive(Default)]
struct State {
    loaded: Option<Loaded>,
    /// With `--prefix-cache on`: the loaded model's cache and its budget in tokens (each request
    /// gets an engine of its own; the cache passes from one to the next).
    prefix: Option<(PrefixCache, usize)>,
    /// Every earlier `chat` step's user message and answer, in order: each chat step is one
    /// more turn of one conversation (across model swaps, as a person keeps talking), so its
    /// prompt grows as a real chat's does. Raw and task steps stay outside it.
    history: Vec<Message>,
}

/// Runs one step, pushing its entries (one per repetition of a request) to `out` as each
/// finishes, so a failure or a stop keeps those before it.
fn run_step(
    ctx: &StepCtx<'_>,
    i: usize,
    kind: &StepKind,
    line: usize,
    state: &mut State,
    out: &mut Vec<StepRecord>,
) -> Result<(), BenchError> {
    let (plan, start) = (ctx.plan, ctx.start);
    let at = || start.elapsed().as_secs_f64();
    match kind {
        StepKind::Load {
            model: name,
            dtype,
            evict,
        } => {
            let label = format!("load {name} ({})", format!("{dtype:?}").to_lowercase());
            let mut e = StepRecord::new(i, line, StepKindTag::Load, label, at());
            // The person waits from here: the old model goes first, then the new one loads.
            state.loaded = None;
            state.prefix = None;
            let cfg = ModelConfig {
                model: name.clone(),
                dtype: *dtype,
                ..plan.config.model.clone()
            };
            let kernels = plan.config.runtime.matmuls();
            let (l, warm) = load_step(&cfg, kernels, *evict, &mut e)?;
            e.warmup_s = Some(warm);
            state.prefix = prefix_cache(&plan.config, &l)?;
            state.loaded = Some(l);
            out.push(e);
            Ok(())
        }
        StepKind::Idle { seconds } => {
            let mut e = StepRecord::new(i, line, StepKindTag::Idle, "idle".into(), at());
            let t = Instant::now();
            let slept = sleep_unless_stopped(scaled(*seconds, plan.time_scale), ctx.signal);
            e.idle_script_s = Some(*seconds);
            e.idle_s = Some(t.elapsed().as_secs_f64());
            out.push(e);
            match slept {
                true => Ok(()),
                false => Err(BenchError::Engine(EngineError::Interrupted)),
            }
        }
        StepKind::Request {
            label,
            prompt,
            max_tokens,
            repeat,
        } => {
            let l = state
                .loaded
                .as_ref()
                .expect("the first step loads a model (checked when parsing); this is a bug");
            let turn = (label == "chat").then(|| with_history(prompt, &state.history));
            let first = out.len();
            for r in 0..*repeat {
                if r > 0 && (ctx.signal)() != 0 {
                    return Err(BenchError::Engine(EngineError::Interrupted));
                }
                let mut e = StepRecord::new(i, line, StepKindTag::Request, label.clone(), at());
                e.repeat = r;
                e.earlier_turns = turn.as_ref().map(|_| state.history.len() / 2);
                let prompt = turn.as_ref().unwrap_or(prompt);
                request(l, &mut state.prefix, prompt, *max_tokens, plan, &mut e)?;
                out.push(e);
            }
            // A repeated turn is the same question asked again; the conversation keeps it once.
            if let (Prompt::Chat(msgs), Some(last)) = (prompt, out[first..].last()) {
                if turn.is_some() {
                    let asked = msgs.iter().filter(|m| m.role != "system").cloned();
                    state.history.extend(asked);
                    state.history.push(Message::new("assistant", &last.output));
                }
            }
            Ok(())
        }
    }
}

/// A chat step's messages with the conversation so far before its own: its system message
/// first, then the earlier turns, then its user message.
fn with_history(prompt: &Prompt, history: &[Message]) -> Prompt {
    let Prompt::Chat(msgs) = prompt else {
        return prompt.clone();
    };
    let (system, rest): (Vec<&Message>, Vec<&Message>) =
        msgs.iter().partition(|m| m.role == "system");
    let all = system
        .into_iter()
        .cloned()
        .chain(history.iter().cloned())
        .chain(rest.into_iter().cloned())
        .collect();
    Prompt::Chat(all)
}

/// Evicts when asked, reads residency, loads and warms up; fills the load fields of `e`.
fn load_step(
    cfg: &ModelConfig,
    kernels: model::Kernels,
    evict: bool,
    e: &mut StepRecord,
) -> Result<(Loaded, f64), BenchError> {
    let path = model::resolve(cfg)?;
    let files: Vec<PathBuf> = super::sweep::weight_files(&path);
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let error = evict
        .then(|| pagecache::evict(&refs).err().map(|e| e.to_string()))
        .flatten();
    e.residency = pagecache::residency(&refs);
    e.cold = is_cold(e.residency);
    if evict && (error.is_some() || e.cold != Some(true)) {
        // Asked for a cold load and did not get one: say why, in the record and the table.
        e.eviction_failed = Some(crate::measure::holders::why_resident(
            &refs,
            error.as_deref(),
            crate::measure::holders::FIX_BY_HAND,
        ));
    }
    let l = model::load(cfg, kernels)?;
    e.load_s = Some(l.load_time.as_secs_f64());
    e.split = l.split.as_ref().map(Into::into);
    let t = Instant::now();
    warm_up(&l)?;
    Ok((l, t.elapsed().as_secs_f64()))
}

/// One forward of one token on a scratch cache, waited for.
fn warm_up(l: &Loaded) -> Result<(), EngineError> {
    let token = l.tokenizer.info.bos_id.unwrap_or(0);
    let params = GenerateParams {
        max_new: 1,
        sampling: Default::default(),
        stop: Vec::new(),
    };
    generate(&l.model, &[token], &params, |_, _| {})?;
    Ok(())
}

/// An empty prefix cache for the loaded model when the session asks for one, with its budget in
/// tokens (run's rule: `--prefix-cache-budget`, else a quarter of the KV budget).
fn prefix_cache(cfg: &RunConfig, l: &Loaded) -> Result<Option<(PrefixCache, usize)>, BenchError> {
    let bytes = l.model.kv_shape().bytes_per_token();
    let tokens = super::sweep::scheduler_config(cfg, bytes as u64)?.prefix_cache_tokens;
    let state = l.model.state_bytes_per_seq();
    Ok((tokens > 0).then(|| (PrefixCache::new(tokens, bytes, state), tokens)))
}

/// Sends one request on a one-request engine (the prefix cache passed in and back): enter →
/// first token → last token; fills the request fields of `e`.
fn request(
    l: &Loaded,
    prefix: &mut Option<(PrefixCache, usize)>,
    prompt: &Prompt,
    max_tokens: usize,
    plan: &SessionPlan,
    e: &mut StepRecord,
) -> Result<(), BenchError> {
    let enter = Instant::now();
    let text = super::round::render(l, prompt)?;
    let ids = l.tokenizer.encode(&text)?;
    let params = GenerateParams {
        max_new: max_tokens,
        sampling: plan.config.sampling.clone(),
        stop: l.tokenizer.info.eos_id.into_iter().collect(),
    };
    let budget = prefix.as_ref().map_or(0, |p| p.1);
    let cfg = one_request(ids.len(), max_tokens, budget);
    let mut engine = Engine::new(&l.model, cfg, plan.config.sampling.clone());
    if let Some((cache, _)) = prefix.take() {
        engine.set_prefix_cache(cache);
    }
    let mut first: Option<Instant> = None;
    let g = generate_on(&mut engine, 0, &ids, &params, |_, at| {
        first.get_or_insert(at);
    });
    *prefix = engine.take_prefix_cache().map(|c| (c, budget));
    let g = g?;
    let done = enter.elapsed();
    e.prompt_tokens = ids.len();
    e.output_tokens = g.tokens.len();
    e.reused_tokens = (budget > 0).then_some(g.reused_tokens);
    e.ttft_s = first.map(|t| t.duration_since(enter).as_secs_f64());
    e.completion_s = Some(done.as_secs_f64());
    e.output = l.tokenizer.decode(&g.tokens)?;
    Ok(())
}
