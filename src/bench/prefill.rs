//! `tokfire prefill`: TTFT over a grid of prompt lengths, depths, cached shares and prefill
//! chunks, one model load. Every sample is one request on a one-request [`Engine`] of its own
//! (empty prefix cache), the engine every verb uses, so a TTFT here means what it means in
//! `run`. Depth and the cached share go into the prefix cache by an unmeasured request first:
//! the measured one then copies those KV rows and prefills the rest. Prompts are token ids drawn
//! from the model's vocabulary (special tokens left out) or cut from a workload's prompts
//! (`--prompts`), seeded per cell and sample.

use std::sync::atomic::AtomicUsize;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::error::BenchError;
use crate::config::run::RunConfig;
use crate::engine::batching::{Engine, EventKind};
use crate::engine::generate::{generate_on, GenerateParams};
use crate::engine::scheduler::SchedulerConfig;
use crate::error::EngineError;
use crate::model::prefix::BLOCK_TOKENS;
use crate::model::{self, Loaded};
use crate::record::kind::RunKind;
use crate::record::prefill::{CellRecord, PrefillRecord, PrefillSample};
use crate::record::RunRecord;
use crate::workload::Workload;

/// The grid and how each cell is sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub lengths: Vec<usize>,
    pub depths: Vec<usize>,
    pub cached_pct: Vec<u32>,
    pub chunks: Vec<usize>,
    pub samples: usize,
    pub warmup: usize,
    pub seed: u64,
    /// `--cold-start`: also time a fresh process's start on each cell's first prompt (cells
    /// with nothing in the context or the cache: a fresh process holds neither).
    pub cold_start: bool,
}

/// One cell: (length, depth, cached %, chunk).
pub type Cell = (usize, usize, u32, usize);

impl Grid {
    /// Every cell, chunks outermost, then depths, cached shares, lengths (so a curve over the
    /// lengths is measured in one stretch).
    pub fn cells(&self) -> Vec<Cell> {
        let mut out = Vec::new();
        for &chunk in &self.chunks {
            for &depth in &self.depths {
                for &pct in &self.cached_pct {
                    for &length in &self.lengths {
                        out.push((length, depth, pct, chunk));
                    }
                }
            }
        }
        out
    }
}

/// Everything a prefill run needs, validated.
pub struct PrefillPlan {
    /// The run's configuration (`verb = "prefill"`).
    pub config: RunConfig,
    /// What the record names as the workload: the generated prompts (seed and grid).
    pub workload: Workload,
    pub grid: Grid,
    /// The binary a `--cold-start` child runs (this one).
    pub exe: std::path::PathBuf,
    /// `--prompts`: the prompt tokens come from `workload`'s tasks, not the vocabulary.
    pub from_workload: bool,
}

/// Runs the grid (model steps on its runtime's workers), calling `progress` after each cell;
/// returns the saved record. A signal stops it between two samples, keeping finished cells.
pub fn run(
    plan: &PrefillPlan,
    command: Vec<String>,
    stop: Option<&AtomicUsize>,
    mut progress: impl FnMut(&CellRecord, usize, usize),
) -> Result<RunRecord, BenchError> {
    let g = &plan.grid;
    let record = RunRecord {
        kind: RunKind::Prefill(PrefillRecord {
            seed: g.seed,
            lengths: g.lengths.clone(),
            depths: g.depths.clone(),
            cached_pct: g.cached_pct.clone(),
            chunks: g.chunks.clone(),
            samples: g.samples,
            warmup: g.warmup,
            cold_start: g.cold_start,
            prompts: plan.from_workload.then(|| {
                let w = &plan.workload;
                format!("{}@{}", w.name, w.version)
            }),
            cells: Vec::new(),
        }),
        ..super::sweep::new_record(plan.config.clone(), plan.workload.clone(), command)
    };
    let kept = |r: &RunRecord| r.prefill().map_or(0, |p| p.cells.len());
    let (cfg, workload) = (&plan.config, &plan.workload);
    super::grid::run(
        cfg,
        workload,
        record,
        stop,
        kept,
        |loaded, record, writer, signal| {
            let cells = g.cells();
            let source = Source::of(loaded, plan.from_workload.then_some(workload))?;
            for (i, &cell) in cells.iter().enumerate() {
                let mut c = run_cell(loaded, &source, g, cell, signal)?;
                if g.cold_start && c.skipped.is_none() {
                    c.cold_start = cold_start(plan, loaded, &source, cell, stop)?;
                }
                let p = record.prefill_mut().expect("set above; this is a bug");
                p.cells.push(c.clone());
                writer.save(record)?;
                progress(&c, i + 1, cells.len());
            }
            Ok(())
        },
    )
}

/// One cell: its warm-up samples, then its measured ones, with the machine's reading.
fn run_cell(
    loaded: &Loaded,
    source: &Source,
    g: &Grid,
    (length, depth, pct, chunk): Cell,
    signal: &dyn Fn() -> usize,
) -> Result<CellRecord, BenchError> {
    let mut cell = CellRecord {
        length,
        depth,
        cached_pct: pct,
        chunk,
        samples: Vec::new(),
        skipped: None,
        sentinel: None,
        cold_start: None,
    };
    let limit = loaded.model.context_length();
    if depth + length + 1 > limit {
        cell.skipped = Some(format!(
            "{} tokens and the first output pass the model's {limit}-token context",
            depth + length
        ));
        return Ok(cell);
    }
    let seen = crate::measure::sentinel::Snapshot::take();
    for i in 0..g.warmup + g.samples {
        if signal() != 0 {
            return Err(EngineError::Interrupted.into());
        }
        let prompt = source.prompt(g.seed, (length, depth, pct, chunk), i);
        let cached = depth + length * pct as usize / 100;
        let s = sample(&loaded.model, &prompt, cached, chunk)?;
        if i >= g.warmup {
            cell.samples.push(s);
        }
    }
    cell.sentinel = Some(seen.until(&crate::measure::sentinel::Snapshot::take()));
    Ok(cell)
}

/// Where prompt tokens come from.
pub enum Source {
    /// Drawn from the model's vocabulary.
    Vocab(Vocab),
    /// Cut from a workload's prompts, tokenized and joined (never empty).
    Text(Vec<u32>),
}

impl Source {
    /// The workload's prompts when one is given, else the vocabulary.
    pub fn of(loaded: &Loaded, workload: Option<&Workload>) -> Result<Self, BenchError> {
        let Some(w) = workload else {
            return Ok(Self::Vocab(Vocab::of(loaded)));
        };
        let mut ids = Vec::new();
        for task in &w.tasks {
            let text = super::round::render(loaded, &task.prompt)?;
            ids.extend(loaded.tokenizer.encode(&text)?);
        }
        if ids.is_empty() {
            return Err(EngineError::Refused(format!(
                "--prompts {}: the workload's prompts encode to no tokens",
                w.name
            ))
            .into());
        }
        Ok(Self::Text(ids))
    }

    /// Sample `i`'s prompt of `cell`: depth + length ids, with the sample's own seed (drawn,
    /// or the joined prompts from a seeded offset on, repeated as needed).
    pub fn prompt(&self, seed: u64, cell: Cell, i: usize) -> Vec<u32> {
        let n = cell.1 + cell.0;
        let mut rng = StdRng::seed_from_u64(sample_seed(seed, cell, i));
        match self {
            Self::Vocab(v) => v.draw(&mut rng, n),
            Self::Text(ids) => {
                let from = rng.random_range(0..ids.len());
                ids.iter().cycle().skip(from).take(n).copied().collect()
            }
        }
    }
}

/// Longest a `--cold-start` child may take, seconds.
const COLD_START_TIMEOUT_S: u64 = 600;

/// `--cold-start`: a fresh process (this binary's `cold-child`) loads the model, warms up and
/// prefills the cell's first measured prompt with the cell's chunk, one token generated. The
/// model file is in the page cache (this process holds it); `tokfire cold` times starts from
/// disk. Cells with a depth or a cached share get none: a fresh process holds neither.
fn cold_start(
    plan: &PrefillPlan,
    loaded: &Loaded,
    source: &Source,
    cell: Cell,
    stop: Option<&AtomicUsize>,
) -> Result<Option<Box<crate::record::cold::StartRecord>>, BenchError> {
    let (_, depth, pct, chunk) = cell;
    if depth > 0 || pct > 0 {
        return Ok(None);
    }
    let g = &plan.grid;
    let mut model = plan.config.model.clone();
    model.model = loaded.path.path().display().to_string();
    let spec = super::cold_child::ChildSpec {
        model,
        runtime: plan.config.runtime,
        prompt: crate::workload::Prompt::Raw(String::new()),
        max_tokens: 1,
        sampling: Default::default(),
        ids: Some(source.prompt(g.seed, cell, g.warmup)),
        prefill_chunk: Some(chunk),
    };
    let json = serde_json::to_string(&spec).expect("specs serialize; this is a bug");
    let files = super::sweep::weight_files(&loaded.path);
    let refs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
    let residency = crate::measure::pagecache::residency(&refs);
    let timeout = std::time::Duration::from_secs(COLD_START_TIMEOUT_S);
    let Some(mut start) = super::cold::one_start(&plan.exe, &json, timeout, stop) else {
        return Err(EngineError::Interrupted.into());
    };
    start.residency = residency;
    start.kind = crate::record::cold::StartKind::Warm;
    Ok(Some(Box::new(start)))
}

/// A sample's own seed: the run's seed, the cell and the sample index mixed (SplitMix64's
/// finalizer), so every prompt differs and a rerun with the seed draws the same ones.
pub fn sample_seed(seed: u64, (length, depth, pct, chunk): Cell, i: usize) -> u64 {
    let cell = [length, depth, pct as usize, chunk, i];
    crate::seed::mix_all(seed, &cell.map(|v| v as u64))
}

/// The token ids prompts are drawn from: the vocabulary less its added (special) tokens.
pub struct Vocab {
    ids: Vec<u32>,
}

impl Vocab {
    pub fn of(loaded: &Loaded) -> Self {
        let inner = loaded.tokenizer.inner();
        let added = inner.get_added_tokens_decoder();
        let n = loaded.tokenizer.info.vocab_size as u32;
        Self {
            ids: (0..n).filter(|id| !added.contains_key(id)).collect(),
        }
    }

    /// `n` ids drawn uniformly (with repeats) from the vocabulary.
    pub fn draw(&self, rng: &mut StdRng, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| self.ids[rng.random_range(0..self.ids.len())])
            .collect()
    }
}

/// One measured request: `prompt` with its first `cached` tokens (whole blocks) put in the
/// prefix cache first by an unmeasured request, then the whole prompt, one token generated.
/// On a model with recurrent state the budgets also hold the state (the sequence's and the
/// cache's copy at the last cached block end).
pub fn sample(
    model: &model::family::Model,
    prompt: &[u32],
    cached: usize,
    chunk: usize,
) -> Result<PrefillSample, EngineError> {
    let blocks = cached / BLOCK_TOKENS;
    let per_token = model.kv_shape().bytes_per_token().max(1);
    let state = model.state_bytes_per_seq();
    let state_tokens = state.div_ceil(per_token);
    let state_blocks = state.div_ceil(per_token * BLOCK_TOKENS);
    let prefix_tokens = match blocks {
        0 => 0,
        b => (b + 1 + state_blocks) * BLOCK_TOKENS,
    };
    let cfg = SchedulerConfig {
        max_seqs: 1,
        max_batch_tokens: chunk,
        prefill_chunk: chunk,
        kv_budget_tokens: prompt.len() + 1 + state_tokens + prefix_tokens,
        schedule: Default::default(),
        prefix_cache_tokens: prefix_tokens,
    };
    let mut engine = Engine::new(model, cfg, Default::default());
    let params = GenerateParams {
        max_new: 1,
        sampling: Default::default(),
        stop: Vec::new(),
    };
    if blocks > 0 {
        // One token past the blocks: the last of them then ends before the request's final
        // token, where a sequence copies its recurrent state for the cache (models with one).
        let warm = (blocks * BLOCK_TOKENS + 1).min(prompt.len());
        generate_on(&mut engine, 0, &prompt[..warm], &params, |_, _| {})?;
    }
    let seen = engine.events().len();
    let g = generate_on(&mut engine, 1, prompt, &params, |_, _| {})?;
    let (mut forward_us, mut steps) = (0u64, 0usize);
    for ev in &engine.events()[seen..] {
        match ev.kind {
            EventKind::StepEnd { forward_us: us } => forward_us += us,
            EventKind::StepStart { .. } => steps += 1,
            _ => {}
        }
    }
    Ok(PrefillSample {
        ttft_s: g.prefill.as_secs_f64(),
        reused_tokens: g.reused_tokens,
        prefilled_tokens: prompt.len() - g.reused_tokens,
        forward_s: forward_us as f64 / 1e6,
        steps,
    })
}

#[cfg(test)]
#[path = "prefill_tests.rs"]
mod tests;
