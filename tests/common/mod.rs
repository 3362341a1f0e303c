//! Helpers shared by the integration tests: model fixtures and a greedy driver that runs several
//! sequences through one forward per step, staggered and with chunked prefill.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use tokfire::config::{DeviceSpec, ModelConfig, WeightDType};
use tokfire::engine::sampler::argmax;
use tokfire::model::family::Model;
use tokfire::model::llama::{LogitRows, SeqInput};
use tokfire::model::synthetic::{self, Spec};
use tokfire::model::{self, Loaded};

/// The default model, fetched into the cache if missing.
pub fn default_model_path() -> PathBuf {
    let m = tokfire::model::manifest::manifest().unwrap();
    let entry = m.get(&m.default).unwrap();
    entry
        .ensure(&cache_dir())
        .expect("fetching the default model (models/fetch) failed")
}

pub fn cache_dir() -> PathBuf {
    std::env::var_os("TOKFIRE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(tokfire::config::default_cache_dir)
}

pub fn model_config(path: &Path, dtype: WeightDType) -> ModelConfig {
    ModelConfig {
        model: path.to_string_lossy().into_owned(),
        cache_dir: cache_dir(),
        hf_cache_dir: std::env::temp_dir(),
        dtype,
        device: DeviceSpec::Cpu,
        chat_template: None,
        load: Default::default(),
        repack: Default::default(),
    }
}

pub fn load(path: &Path, dtype: WeightDType) -> Loaded {
    load_with(path, dtype, model::Kernels::Ours)
}

/// [`load`] with GGUF row layouts (`--repack off`), for comparisons with candle's kernels: ours
/// on rows round as candle's do (its lanes, its order), repacked tiles round each block once
/// more or less, and a quantized activation that lands on the other side of a rounding step
/// then moves a tiny random model's logits by 0.04 and can flip its greedy ids. Repacking's
/// numerics are tested against their own reference in `tests/kernels.rs`.
pub fn load_rows(path: &Path, dtype: WeightDType) -> Loaded {
    let mut cfg = model_config(path, dtype);
    cfg.repack = tokfire::config::Repack::Off;
    model::load(&cfg, model::Kernels::Ours).unwrap()
}

/// [`load`] with the matmuls and attention run by `kernels` (candle's: the device-generic path).
pub fn load_with(path: &Path, dtype: WeightDType, kernels: model::Kernels) -> Loaded {
    model::load(&model_config(path, dtype), kernels).unwrap()
}

/// The device the device tests run on: `TOKFIRE_TEST_DEVICE` (cpu, cuda, cuda:N, metal), else
/// the CPU.
pub fn test_device() -> DeviceSpec {
    match std::env::var("TOKFIRE_TEST_DEVICE") {
        Ok(s) if !s.is_empty() => {
            DeviceSpec::parse(&s).unwrap_or_else(|e| panic!("TOKFIRE_TEST_DEVICE={s}: {e}"))
        }
        _ => DeviceSpec::Cpu,
    }
}

/// [`load_with`] onto `device`.
pub fn load_on(
    path: &Path,
    dtype: WeightDType,
    kernels: model::Kernels,
    device: DeviceSpec,
) -> Loaded {
    let cfg = ModelConfig {
        device,
        ..model_config(path, dtype)
    };
    model::load(&cfg, kernels).unwrap_or_else(|e| panic!("loading onto {device}: {e}"))
}

/// A synthetic GGUF in `dir` (Q8_0 matrices, separate head unless `tied`).
pub fn synthetic_gguf(dir: &Path, quant: GgmlDType, tied: bool) -> PathBuf {
    let path = dir.join(format!("tiny-{quant:?}-{tied}.gguf"));
    synthetic::write_gguf(
        &path,
        &Spec {
            quant,
            tied,
            ..Spec::default()
        },
    )
    .unwrap();
    path
}

/// Tokens and every step's logits of one sequence.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    pub tokens: Vec<u32>,
    pub logits: Vec<Vec<f32>>,
}

/// Greedy generation of `n` tokens for one sequence alone.
pub fn solo(model: &Model, prompt: &[u32], n: usize) -> Trace {
    batched(
        model,
        &[Plan {
            prompt: prompt.to_vec(),
            start: 0,
            chunk: usize::MAX,
        }],
        n,
    )
    .pop()
    .unwrap()
}

/// How one sequence enters a batched run: at which step, with what prefill chunk size.
#[derive(Clone)]
pub struct Plan {
    pub prompt: Vec<u32>,
    pub start: usize,
    pub chunk: usize,
}

/// Greedy generation for several sequences sharing each forward step.
pub fn batched(model: &Model, plans: &[Plan], n: usize) -> Vec<Trace> {
    let mut caches: Vec<_> = plans
        .iter()
        .map(|p| model.new_cache(p.prompt.len() + n).unwrap())
        .collect();
    let mut fed = vec![0usize; plans.len()];
    let mut traces = vec![Trace::default(); plans.len()];
    for step in 0.. {
        let active: Vec<usize> = (0..plans.len())
            .filter(|&i| plans[i].start <= step && traces[i].tokens.len() < n)
            .collect();
        if active.is_empty() && (0..plans.len()).all(|i| traces[i].tokens.len() >= n) {
            break;
        }
        if active.is_empty() {
            continue;
        }
        let mut feeds = Vec::new();
        for &i in &active {
            let p = &plans[i];
            if fed[i] < p.prompt.len() {
                let take = p.chunk.min(p.prompt.len() - fed[i]);
                let rows = if fed[i] + take == p.prompt.len() {
                    LogitRows::Last
                } else {
                    LogitRows::None
                };
                feeds.push((i, p.prompt[fed[i]..fed[i] + take].to_vec(), rows));
                fed[i] += take;
            } else {
                feeds.push((i, vec![*traces[i].tokens.last().unwrap()], LogitRows::Last));
            }
        }
        let inputs: Vec<SeqInput> = feeds
            .iter()
            .map(|(_, t, r)| SeqInput {
                tokens: t,
                logits: *r,
            })
            .collect();
        let mut refs: Vec<_> = caches
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| active.contains(i))
            .map(|(_, c)| c)
            .collect();
        let logits = model
            .forward(&inputs, &mut refs)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let mut rows = logits.into_iter();
        for (i, _, r) in &feeds {
            if *r == LogitRows::Last {
                let row = rows.next().unwrap();
                traces[*i].tokens.push(argmax(&row));
                traces[*i].logits.push(row);
            }
        }
        assert!(rows.next().is_none(), "more logit rows than requested");
    }
    traces
}

/// Largest absolute difference between two logit rows.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Greedy trace of a stock candle model driven as its examples do: the whole prompt at position
/// 0, then one token at a time; `forward(input [1, s], index_pos)` returns `[1, vocab]` logits.
pub fn stock_trace(
    prompt: &[u32],
    steps: usize,
    mut forward: impl FnMut(&candle_core::Tensor, usize) -> candle_core::Result<candle_core::Tensor>,
) -> Trace {
    let mut trace = Trace::default();
    let (mut input, mut pos) = (prompt.to_vec(), 0);
    for _ in 0..steps {
        let x = candle_core::Tensor::new(input.as_slice(), &candle_core::Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let row = forward(&x, pos)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        pos += input.len();
        let next = argmax(&row);
        trace.tokens.push(next);
        trace.logits.push(row);
        input = vec![next];
    }
    trace
}
