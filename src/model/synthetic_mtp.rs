//! Tiny synthetic llama models with a multi-token-prediction block, laid out as llama.cpp
//! stores DeepSeek-V3 / GLM-4.5 `nextn` layers: `llama.nextn_predict_layers = 1`, `block_count`
//! = regular layers + 1, and block `layers` holding a regular transformer block plus
//! `nextn.{eh_proj, enorm, hnorm, shared_head_norm}` (and, for random weights, its own
//! `nextn.embed_tokens` and `nextn.shared_head_head`). The regular loader runs such a file as a
//! plain model; `--spec mtp` drafts with the block.
//!
//! Two kinds of block weights: random (seeded; it drafts poorly, as an untrained block would),
//! and a mirror that predicts nearly what the target predicts, so acceptance can be shown: the
//! block copies the target's last layer, `eh_proj` passes the token embedding through and drops
//! the hidden state, the embedding rows have unit RMS (so `enorm` keeps them) and
//! `shared_head_norm` copies the final norm. With a one-layer target the block then computes the
//! target's next step except that its attention never sees the first token. A third kind, the
//! echo, reads only the hidden state: `eh_proj` passes it through, the block adds nothing (zero
//! output projections) and the shared head reads it again, so its first draft is the token the
//! target chose from that hidden state: the sequence's last token, exactly when the drafter
//! was handed the right row.

use std::path::Path;

use candle_core::quantized::gguf_file::Value;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::synthetic::{tensors, vocab, write_gguf_with, Spec, Weights};
use super::weights::Names;

/// What the nextn block's weights are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtpWeights {
    /// Seeded random, with its own embedding and head.
    Random,
    /// Predicts what the target predicts (see the module docs); shares embedding and head.
    Mirror,
    /// Repeats the token the target chose from the hidden state it is handed.
    Echo,
}

/// A synthetic MTP model: the block's weights, and deliberate faults for hostile-file tests.
#[derive(Debug, Clone)]
pub struct MtpSpec {
    pub weights: MtpWeights,
    /// `llama.nextn_predict_layers` as written (1 block is written whatever it says).
    pub declared: u32,
    /// `llama.block_count` as written (default: the regular layers + `declared`).
    pub block_count: Option<u32>,
    /// A tensor of the nextn block left out, by its name after `blk.N.` (e.g. `nextn.hnorm`).
    pub omit: Option<String>,
    /// Input width of `nextn.eh_proj` (default: twice the hidden size, as it must be).
    pub eh_proj_inputs: Option<usize>,
}

impl Default for MtpSpec {
    fn default() -> Self {
        Self {
            weights: MtpWeights::Random,
            declared: 1,
            block_count: None,
            omit: None,
            eh_proj_inputs: None,
        }
    }
}

/// Writes `spec` with a nextn block as `mtp` asks to a GGUF file at `path`.
pub fn write_gguf(path: &Path, spec: &Spec, mtp: &MtpSpec) -> candle_core::Result<()> {
    let names = Names::Gguf;
    let mut weights = tensors(spec, &names);
    let i = spec.layers;
    let h = spec.hidden;
    let mut rng = StdRng::seed_from_u64(spec.seed ^ 0x6d7470);
    let mut block = Vec::new();
    match mtp.weights {
        MtpWeights::Random => {
            // A regular block's weights from a model one layer deeper, renamed to block i.
            let deeper = Spec {
                layers: i + 1,
                seed: spec.seed + 1,
                ..spec.clone()
            };
            let prefix = format!("blk.{i}.");
            block.extend(
                tensors(&deeper, &names)
                    .into_iter()
                    .filter(|(n, _, _)| n.starts_with(&prefix)),
            );
            let v = vocab().0.len();
            let cols = mtp.eh_proj_inputs.unwrap_or(2 * h);
            block.push(random(nextn(i, "eh_proj"), h, cols, &mut rng));
            block.push(random(nextn(i, "embed_tokens"), v, h, &mut rng));
            block.push(random(nextn(i, "shared_head_head"), v, h, &mut rng));
            for part in ["enorm", "hnorm", "shared_head_norm"] {
                let w = (0..h).map(|_| 1.0 + rng.random_range(-0.2..0.2)).collect();
                block.push((nextn(i, part), w, (1, h)));
            }
        }
        MtpWeights::Mirror => mirror(&mut weights, &mut block, spec, mtp),
        MtpWeights::Echo => echo(&weights, &mut block, spec),
    }
    if let Some(omit) = &mtp.omit {
        let name = format!("blk.{i}.{omit}.weight");
        block.retain(|(n, _, _)| *n != name);
    }
    weights.extend(block);
    let blocks = mtp
        .block_count
        .map_or(i + mtp.declared as usize, |b| b as usize);
    let meta = vec![(
        format!("{}.nextn_predict_layers", spec.arch),
        Value::U32(mtp.declared),
    )];
    write_gguf_with(path, spec, weights, blocks, meta)
}

/// The mirror block: the target's last layer, a pass-through `eh_proj`, unit norms and the
/// target's final norm; rescales the embedding rows to unit RMS.
fn mirror(weights: &mut [Weights], block: &mut Vec<Weights>, spec: &Spec, mtp: &MtpSpec) {
    let (i, h) = (spec.layers, spec.hidden);
    let names = Names::Gguf;
    for (name, data, (_, cols)) in weights.iter_mut() {
        if name == names.embed() {
            for row in data.chunks_mut(*cols) {
                let rms = (row.iter().map(|x| x * x).sum::<f32>() / *cols as f32).sqrt();
                row.iter_mut().for_each(|x| *x /= rms.max(1e-6));
            }
        }
    }
    let last = format!("blk.{}.", i - 1);
    for (name, data, shape) in weights.iter() {
        if let Some(part) = name.strip_prefix(&last) {
            block.push((format!("blk.{i}.{part}"), data.clone(), *shape));
        }
        if name == names.norm() {
            block.push((nextn(i, "shared_head_norm"), data.clone(), *shape));
        }
    }
    let cols = mtp.eh_proj_inputs.unwrap_or(2 * h);
    let eh: Vec<f32> = (0..h * cols)
        .map(|k| f32::from(k / cols == k % cols))
        .collect();
    block.push((nextn(i, "eh_proj"), eh, (h, cols)));
    for part in ["enorm", "hnorm"] {
        block.push((nextn(i, part), vec![1.0; h], (1, h)));
    }
}

/// The echo block: the hidden state through `eh_proj`, a block whose output projections are
/// zero, unit norms.
fn echo(weights: &[Weights], block: &mut Vec<Weights>, spec: &Spec) {
    let (i, h) = (spec.layers, spec.hidden);
    let last = format!("blk.{}.", i - 1);
    for (name, data, shape) in weights {
        if let Some(part) = name.strip_prefix(&last) {
            let zero = part.starts_with("attn_output") || part.starts_with("ffn_down");
            let data = if zero {
                vec![0.0; data.len()]
            } else {
                data.clone()
            };
            block.push((format!("blk.{i}.{part}"), data, *shape));
        }
    }
    let eh: Vec<f32> = (0..h * 2 * h)
        .map(|k| f32::from(k % (2 * h) == h + k / (2 * h)))
        .collect();
    block.push((nextn(i, "eh_proj"), eh, (h, 2 * h)));
    for part in ["enorm", "hnorm", "shared_head_norm"] {
        block.push((nextn(i, part), vec![1.0; h], (1, h)));
    }
}

fn nextn(i: usize, part: &str) -> String {
    format!("blk.{i}.nextn.{part}.weight")
}

fn random(name: String, rows: usize, cols: usize, rng: &mut StdRng) -> Weights {
    let s = 1.0 / (cols as f32).sqrt();
    let data = (0..rows * cols)
        .map(|_| rng.random_range(-s..s) * 1.7)
        .collect();
    (name, data, (rows, cols))
}
