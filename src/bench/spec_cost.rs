//! `tokfire spec-cost`: what a verify step costs. For each (jobs, k) a fresh [`Engine`] runs
//! `jobs` sequences of `context` generated prompt tokens; with `k > 0` a drafter proposes `k`
//! random vocabulary tokens per sequence and step, so every decode step is a real verify step
//! (a batched forward of `jobs × (k + 1)` tokens, then acceptance) whose drafts are almost all
//! rejected: the cost is measured, not the gain. `k = 0` is the plain decode step. Step times
//! come from the engine's own step events, after the prefill and `warmup` decode steps.

use std::sync::atomic::AtomicUsize;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::error::BenchError;
use super::prefill::Vocab;
use crate::config::run::RunConfig;
use crate::engine::batching::{Engine, EventKind, Request};
use crate::engine::scheduler::SchedulerConfig;
use crate::error::EngineError;
use crate::model::Loaded;
use crate::record::kind::RunKind;
use crate::record::spec_cost::{SpecCostRecord, VerifyCell};
use crate::record::RunRecord;
use crate::spec::{DraftInput, Drafter};
use crate::workload::Workload;

/// Everything a spec-cost run needs, validated.
pub struct SpecCostPlan {
    /// The run's configuration (`verb = "spec-cost"`).
    pub config: RunConfig,
    pub workload: Workload,
    pub jobs: Vec<usize>,
    pub ks: Vec<usize>,
    pub context: usize,
    pub steps: usize,
    pub warmup: usize,
    pub seed: u64,
}

/// Runs every (jobs, k) cell, calling `progress` after each; returns the saved record. A
/// signal stops it between two cells, keeping those finished.
pub fn run(
    plan: &SpecCostPlan,
    command: Vec<String>,
    stop: Option<&AtomicUsize>,
    mut progress: impl FnMut(&VerifyCell, usize, usize),
) -> Result<RunRecord, BenchError> {
    let record = RunRecord {
        kind: RunKind::SpecCost(SpecCostRecord {
            context: plan.context,
            steps: plan.steps,
            warmup: plan.warmup,
            seed: plan.seed,
            jobs: plan.jobs.clone(),
            ks: plan.ks.clone(),
            cells: Vec::new(),
        }),
        ..super::sweep::new_record(plan.config.clone(), plan.workload.clone(), command)
    };
    let kept = |r: &RunRecord| r.spec_cost().map_or(0, |c| c.cells.len());
    let (cfg, workload) = (&plan.config, &plan.workload);
    super::grid::run(
        cfg,
        workload,
        record,
        stop,
        kept,
        |loaded, record, writer, signal| {
            let cells: Vec<(usize, usize)> = (plan.jobs.iter())
                .flat_map(|&j| plan.ks.iter().map(move |&k| (j, k)))
                .collect();
            for (i, &(jobs, k)) in cells.iter().enumerate() {
                if signal() != 0 {
                    return Err(EngineError::Interrupted.into());
                }
                let c = run_cell(loaded, plan, jobs, k)?;
                let r = record.spec_cost_mut().expect("set above; this is a bug");
                r.cells.push(c.clone());
                writer.save(record)?;
                progress(&c, i + 1, cells.len());
            }
            Ok(())
        },
    )
}

/// Proposes `k` random vocabulary tokens for every sequence: a drafter that costs nothing and
/// is almost never right, so each decode step verifies `k` tokens and keeps one.
struct Noise<'v> {
    vocab: &'v Vocab,
    rng: StdRng,
}

impl Drafter for Noise<'_> {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        Ok(seqs
            .iter()
            .map(|s| self.vocab.draw(&mut self.rng, s.k))
            .collect())
    }
}

/// One cell: a fresh engine, `jobs` prompts prefilled, then the measured decode steps.
fn run_cell(
    loaded: &Loaded,
    plan: &SpecCostPlan,
    jobs: usize,
    k: usize,
) -> Result<VerifyCell, BenchError> {
    let vocab = Vocab::of(loaded);
    let seed = super::prefill::sample_seed(plan.seed, (plan.context, jobs, 0, k), 0);
    let mut rng = StdRng::seed_from_u64(seed);
    // Room for the steps that do not count: the first token (from the prefill), steps that
    // still prefill another sequence, and the last ones, offered fewer drafts.
    let max_new = plan.warmup + plan.steps + 1 + jobs + k;
    let per_seq = plan.context + max_new + k + 1;
    let d = crate::config::run::EngineSettings::default();
    let cfg = SchedulerConfig {
        max_seqs: jobs,
        max_batch_tokens: d.max_batch_tokens.max(jobs * (k + 1)),
        prefill_chunk: d.prefill_chunk,
        kv_budget_tokens: jobs * per_seq,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    };
    let mut engine = Engine::new(&loaded.model, cfg, Default::default());
    if k > 0 {
        let noise = Noise {
            vocab: &vocab,
            rng: StdRng::seed_from_u64(rng.random()),
        };
        engine.set_speculation(Box::new(noise), k)?;
    }
    for id in 0..jobs {
        engine.submit(Request {
            id: id as u64,
            prompt: vocab.draw(&mut rng, plan.context),
            max_new,
            stop: Vec::new(),
        })?;
    }
    let seen = crate::measure::sentinel::Snapshot::take();
    engine.run_to_completion()?;
    let sentinel = seen.until(&crate::measure::sentinel::Snapshot::take());
    let steps: Vec<(f64, usize, usize)> = decode_steps(engine.events(), jobs, k)
        .into_iter()
        .skip(plan.warmup)
        .take(plan.steps)
        .collect();
    let step_s = steps.iter().map(|s| s.0).collect();
    let proposed = steps.iter().map(|s| s.1).sum();
    let accepted = steps.iter().map(|s| s.2).sum();
    Ok(VerifyCell {
        jobs,
        k,
        step_s,
        proposed,
        accepted,
        sentinel: Some(sentinel),
    })
}

/// Every step in which all `jobs` sequences decode, none prefills and each verifies `k`
/// drafts (near its output limit a sequence is offered fewer): its wall time (from its start
/// to its last event, the tokens kept), in order, with the drafts proposed and accepted in it.
fn decode_steps(
    events: &[crate::engine::batching::Event],
    jobs: usize,
    k: usize,
) -> Vec<(f64, usize, usize)> {
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::StepStart { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    for (n, &i) in starts.iter().enumerate() {
        let EventKind::StepStart {
            seqs,
            prefill_tokens,
            ..
        } = events[i].kind
        else {
            continue;
        };
        if seqs != jobs || prefill_tokens != 0 {
            continue;
        }
        let end = starts.get(n + 1).copied().unwrap_or(events.len());
        let (mut p, mut a) = (0, 0);
        for e in &events[i..end] {
            if let EventKind::Verified {
                proposed: dp,
                accepted: da,
            } = e.kind
            {
                p += dp;
                a += da;
            }
        }
        if p != jobs * k {
            continue;
        }
        let wall = events[end - 1]
            .at
            .duration_since(events[i].at)
            .as_secs_f64();
        out.push((wall, p, a));
    }
    out
}
