//! One round: `jobs` independent clients, each submitting the workload's tasks one after another
//! (closed loop) to one shared engine, until every job has run every task. Tool-agent tasks loop
//! through several generations. The round is measured only through the engine's events, turned
//! here into raw samples (per task and per step) for the record.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::config::SamplingConfig;
use crate::engine::batching::{Engine, Event, EventKind, FinishReason, Request};
use crate::engine::scheduler::{RequestId, SchedulerConfig};
use crate::error::EngineError;
use crate::model::Loaded;
use crate::record::RoundRecord;
use crate::workload::{Next, Prompt, TaskResult, TaskRun, Workload};

/// What every round of a run shares.
pub struct RoundSetup<'a> {
    /// The thread pool and kernel level the round runs on.
    pub runtime: &'a crate::kernels::Runtime,
    pub loaded: &'a Loaded,
    pub workload: &'a Workload,
    pub scheduler: SchedulerConfig,
    pub sampling: SamplingConfig,
    /// Caps each task's output limit.
    pub max_tokens: Option<usize>,
    /// Non-zero once a stop is requested (the signal number); checked before every step.
    pub stop: Option<&'a AtomicUsize>,
    /// Speculative decoding (`--spec`, `--spec-k`, `--lookup-ngram`).
    pub spec: crate::config::spec::SpecConfig,
    /// The loaded draft model of `--spec draft:MODEL`.
    pub draft: Option<&'a Loaded>,
    /// The reference pass of `--spec synthetic:`.
    pub reference: Option<&'a crate::spec::synthetic::Reference>,
    /// Think time and stagger of the jobs (lockstep by default).
    pub think: crate::config::think::ThinkConfig,
}

/// A finished round: its samples, the raw events (for a trace) and the KV high-water mark.
pub struct RoundOutput {
    pub record: RoundRecord,
    pub events: Vec<Event>,
    pub peak_kv_bytes: u64,
    /// The recurrent-state high-water mark, bytes (hybrid models; 0 otherwise).
    pub peak_state_bytes: u64,
    /// Which job sent each request.
    pub job_of: HashMap<RequestId, usize>,
    /// The drafter's KV high-water mark, bytes (0 without a drafter that keeps a cache).
    pub peak_draft_kv_bytes: u64,
    /// Every finished request's prompt followed by its output, token ids, in finishing order.
    pub transcripts: Vec<Vec<u32>>,
}

struct Active {
    task: usize,
    run: TaskRun,
    requests: Vec<RequestId>,
}

struct Job {
    /// Task indices in the order this job runs them.
    order: Vec<usize>,
    next: usize,
    active: Option<Active>,
}

struct Finished {
    job: usize,
    task: usize,
    requests: Vec<RequestId>,
    result: TaskResult,
    hit_limit: bool,
}

/// Renders a prompt to text with the model's chat template where it is a conversation.
pub(crate) fn render(loaded: &Loaded, prompt: &Prompt) -> Result<String, EngineError> {
    match prompt {
        Prompt::Raw(text) => Ok(text.clone()),
        Prompt::Chat(messages) => {
            let t = loaded.chat.as_ref().ok_or_else(|| {
                EngineError::Refused(
                    "the workload has chat tasks but the model has no chat template; give one with --chat-template FILE, pick a chat model, or use a raw-prompt workload (e.g. --workload code)"
                        .into(),
                )
            })?;
            t.render(messages, true).map_err(EngineError::Refused)
        }
    }
}

struct Driver<'a, 's> {
    setup: &'s RoundSetup<'a>,
    engine: Engine<'a>,
    jobs: Vec<Job>,
    owner: HashMap<RequestId, usize>,
    next_id: RequestId,
    done: Vec<Finished>,
    stop: Vec<u32>,
    pacer: super::think::Pacer,
    /// Each submitted request's prompt; on finishing, prompt and output move to `transcripts`.
    prompts: HashMap<RequestId, Vec<u32>>,
    transcripts: Vec<Vec<u32>>,
}

impl<'a, 's> Driver<'a, 's> {
    /// Starts `job`'s next task, if it has one left.
    fn start_next(&mut self, job: usize) -> Result<(), EngineError> {
        let j = &mut self.jobs[job];
        let Some(&task) = j.order.get(j.next) else {
            return Ok(());
        };
        j.next += 1;
        let run = TaskRun::new(&self.setup.workload.tasks[task]);
        self.jobs[job].active = Some(Active {
            task,
            run,
            requests: Vec::new(),
        });
        self.submit_turn(job)
    }

    /// Submits the active task's current prompt of `job`.
    fn submit_turn(&mut self, job: usize) -> Result<(), EngineError> {
        let active = self.jobs[job]
            .active
            .as_mut()
            .expect("a turn is submitted for an active task; this is a bug");
        let text = render(self.setup.loaded, active.run.prompt())?;
        let prompt = self
            .setup
            .loaded
            .tokenizer
            .encode(&text)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        let limit = active.run.max_tokens();
        let max_new = self.setup.max_tokens.map_or(limit, |cap| cap.min(limit));
        let id = self.next_id;
        self.next_id += 1;
        active.requests.push(id);
        self.owner.insert(id, job);
        self.prompts.insert(id, prompt.clone());
        self.engine.submit(Request {
            id,
            prompt,
            max_new,
            stop: self.stop.clone(),
        })
    }

    /// Feeds a finished generation to its task; continues the task or starts the job's next.
    fn on_finished(&mut self, id: RequestId, reason: FinishReason) -> Result<usize, EngineError> {
        let job = self.owner[&id];
        let ids = self.engine.output(id).unwrap_or_default().to_vec();
        let mut transcript = self.prompts.remove(&id).unwrap_or_default();
        transcript.extend_from_slice(&ids);
        self.transcripts.push(transcript);
        let text = self
            .setup
            .loaded
            .tokenizer
            .decode(&ids)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        let hit_limit = reason == FinishReason::Length;
        let active = self.jobs[job]
            .active
            .as_mut()
            .expect("finished request has an active task");
        match active.run.feed(&text, hit_limit) {
            Next::Continue => {
                self.submit_turn(job)?;
                Ok(0)
            }
            Next::Done(result) => {
                let a = self.jobs[job].active.take().expect("active task");
                self.done.push(Finished {
                    job,
                    task: a.task,
                    requests: a.requests,
                    result,
                    hit_limit,
                });
                if !self.pacer.after_answer(job, Instant::now()) {
                    self.start_next(job)?;
                }
                Ok(1)
            }
        }
    }
}

/// Runs one round of `jobs` jobs; `progress(done, total)` is called as tasks finish.
pub fn run_round(
    setup: &RoundSetup<'_>,
    jobs: usize,
    mut progress: impl FnMut(usize, usize),
) -> Result<RoundOutput, EngineError> {
    let n_tasks = setup.workload.tasks.len();
    let total = n_tasks * jobs;
    let mut d = Driver {
        setup,
        engine: Engine::new(&setup.loaded.model, setup.scheduler, setup.sampling.clone()),
        // Job j starts at task j so that jobs do not send the same prompt at the same moment.
        jobs: (0..jobs)
            .map(|j| Job {
                order: (0..n_tasks).map(|t| (t + j) % n_tasks.max(1)).collect(),
                next: 0,
                active: None,
            })
            .collect(),
        owner: HashMap::new(),
        next_id: 0,
        done: Vec::new(),
        stop: setup.loaded.tokenizer.info.eos_id.into_iter().collect(),
        pacer: super::think::Pacer::new(setup.think),
        prompts: HashMap::new(),
        transcripts: Vec::new(),
    };
    let sources = crate::spec::Sources {
        draft: setup.draft.map(|d| &d.model),
        reference: setup.reference,
        seed: setup.sampling.seed,
        prefix_tokens: setup.scheduler.prefix_cache_tokens,
    };
    if let Some(drafter) = crate::spec::drafter_with(&setup.spec, &setup.loaded.model, sources)? {
        d.engine.set_speculation(drafter, setup.spec.k)?;
    }
    let start = Instant::now();
    for j in 0..jobs {
        if d.pacer.first_start(j, start).is_none() {
            d.start_next(j)?;
        }
    }
    let (mut seen, mut finished_tasks, mut peak_kv) = (0, 0, 0u64);
    let mut peak_state = 0u64;
    let stopped = || setup.stop.is_some_and(|s| s.load(Ordering::Relaxed) != 0);
    loop {
        if stopped() {
            return Err(EngineError::Interrupted);
        }
        for j in d.pacer.take_due(Instant::now()) {
            d.start_next(j)?;
        }
        if !d.engine.step()? {
            match d.pacer.wait(Instant::now()) {
                // Every job is thinking: nap (briefly, so a stop request is seen).
                Some(w) => std::thread::sleep(w.min(std::time::Duration::from_millis(50))),
                None => break,
            }
            continue;
        }
        peak_kv = peak_kv.max(d.engine.kv_bytes() as u64);
        peak_state = peak_state.max(d.engine.state_bytes() as u64);
        let ended: Vec<(RequestId, FinishReason)> = d.engine.events()[seen..]
            .iter()
            .filter_map(|ev| match (ev.id, &ev.kind) {
                (Some(id), EventKind::Finished { reason, .. }) => Some((id, *reason)),
                _ => None,
            })
            .collect();
        seen = d.engine.events().len();
        for (id, reason) in ended {
            finished_tasks += d.on_finished(id, reason)?;
            progress(finished_tasks, total);
        }
    }
    let events = d.engine.events().to_vec();
    let record = super::samples::round_record(&events, start, &d.done_samples(setup));
    Ok(RoundOutput {
        record,
        events,
        peak_kv_bytes: peak_kv,
        peak_state_bytes: peak_state,
        job_of: d.owner,
        peak_draft_kv_bytes: d.engine.drafter_peak_kv_bytes() as u64,
        transcripts: d.transcripts,
    })
}

impl Driver<'_, '_> {
    fn done_samples(&self, setup: &RoundSetup<'_>) -> Vec<super::samples::TaskDone> {
        self.done
            .iter()
            .map(|f| super::samples::TaskDone {
                job: f.job,
                task: setup.workload.tasks[f.task].id.clone(),
                requests: f.requests.clone(),
                result: f.result.clone(),
                hit_limit: f.hit_limit,
            })
            .collect()
    }
}
