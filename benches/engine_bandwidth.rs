//! What decode speed means against the memory: this machine's streaming read bandwidth on the
//! bench's threads, and the bytes one decoded token reads (every matrix once, plus the KV rows
//! attended to), so the bench can say which share of the bandwidth a decode step achieves.

use std::path::Path;
use std::time::Instant;

use candle_core::quantized::gguf_file;
use rayon::prelude::*;

/// Bytes streamed per measurement: well past any last-level cache.
const BUFFER_BYTES: usize = 1 << 30;

/// The best of `passes` parallel sums over a 1 GiB buffer (touched first), bytes per second.
pub fn streaming_read(passes: usize) -> f64 {
    let words = BUFFER_BYTES / 8;
    let buf: Vec<u64> = (0..words as u64).collect();
    let chunk = words / rayon::current_num_threads().max(1) / 16;
    let mut best = 0f64;
    for _ in 0..passes {
        let t = Instant::now();
        let sum: u64 = buf
            .par_chunks(chunk.max(1))
            .map(|c| c.iter().fold(0u64, |a, &x| a.wrapping_add(x)))
            .reduce(|| 0, u64::wrapping_add);
        let s = t.elapsed().as_secs_f64();
        std::hint::black_box(sum);
        best = best.max(BUFFER_BYTES as f64 / s);
    }
    best
}

/// Bytes of the GGUF's tensors one decode step reads: every tensor, except a token-embedding
/// table that is not also the output head (a step gathers one row of it). With `dense` bytes
/// per element, every matrix counts at that width and every vector as f32 (how `--dtype`
/// loads them).
pub fn weight_bytes_per_token(path: &Path, dense: Option<usize>) -> u64 {
    let mut f = std::fs::File::open(path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let untied = ct.tensor_infos.contains_key("output.weight");
    ct.tensor_infos
        .iter()
        .filter(|(name, _)| !(untied && name.as_str() == "token_embd.weight"))
        .map(|(_, t)| {
            let d = t.ggml_dtype;
            let n = t.shape.elem_count();
            match dense {
                Some(b) if t.shape.rank() >= 2 => (n * b) as u64,
                Some(_) => (n * 4) as u64,
                None => (n / d.block_size() * d.type_size()) as u64,
            }
        })
        .sum()
}
