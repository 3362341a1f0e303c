//! Engine benchmark on the default model, one process, side by side: our varlen engine against
//! candle-transformers' stock `quantized_llama` on the same file and threads.
//!
//! Measures prefill tok/s (128- and 512-token prompts), single-sequence decode tok/s, and our
//! aggregate decode tok/s with 2 and 3 sequences in one step. Every case runs `--rounds` times,
//! ours and stock interleaved; the table shows medians with min–max.
//!
//! `--model NAME|FILE` benchmarks another manifest model or GGUF file; the stock column is for
//! the llama family only (candle's quantized Gemma 3 uses the wrong activation, so it is no
//! reference), other families show ours alone.
//!
//! `--depth N` adds a 512-token prefill after N tokens already in the cache (llama-bench's
//! `-p 512 -d N`). After the table: the streaming read bandwidth the bench measures on its
//! threads and the share of it single-sequence decode achieves (bytes read per token: every
//! matrix once plus the KV rows attended to), and each 512-token prefill round with what the OS
//! saw over it (steal, other processes' CPU, context switches, page faults: the sentinel's
//! figures), so a wide spread shows its cause. `--json FILE` writes every case's samples
//! (`tools/vs-llamacpp` reads it).
//!
//! `--repack auto|on|off` loads our model with that setting (the stock column is unaffected).
//! `--dtype q|f32|f16|bf16` loads our model with its matrices stored so (`q`, the default, keeps
//! the file's blocks); with a dense dtype there is no stock column and the bytes a decoded
//! token reads count every matrix at that dtype's width.
//! `--decode-only SEQS` runs nothing but our decode of SEQS sequences, `--prefill-only` nothing
//! but our 512-token prefill, at `--depth N` if given (for a profiler).
//!
//! `cargo bench --bench engine [-- --rounds N --decode N --threads N --model NAME|FILE
//! --depth N --json FILE --repack auto|on|off --dtype q|f32|f16|bf16 --decode-only SEQS
//! --prefill-only]`; `-- --help` lists the flags with examples, an unknown flag is refused.

use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use clap::ValueEnum;
use tokfire::config::{DeviceSpec, ModelConfig, Repack, WeightDType};
use tokfire::engine::sampler::argmax;
use tokfire::measure::sentinel::{RoundSentinel, Snapshot};
use tokfire::measure::stats;
use tokfire::model::family::Model;
use tokfire::model::kv::KvCache;
use tokfire::model::llama::{LogitRows, SeqInput};

#[path = "engine_bandwidth.rs"]
mod bandwidth;

const TEXT: &str = "The history of the printing press begins in the fifteenth century, when movable type made books cheaper and faster to produce. Within decades, presses spread across Europe, and pamphlets, newspapers and scientific journals followed. ";

/// Engine benchmark: our engine against candle's stock quantized_llama on one model file.
#[derive(clap::Parser)]
#[command(
    name = "engine",
    about = "Engine benchmark: prefill, decode and batched decode, ours against candle's stock \
             quantized_llama, medians and ranges",
    after_help = "Examples:\n  cargo bench --bench engine -- --rounds 5\n  \
                  cargo bench --bench engine -- --model gemma3-270m-q4_k_m --depth 4096\n  \
                  cargo bench --bench engine -- --dtype f16 --prefill-only --rounds 8\n  \
                  cargo bench --bench engine -- --decode-only 3 --decode 128"
)]
struct Args {
    /// Measured rounds per case.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Tokens decoded per decode case.
    #[arg(long, default_value_t = 64)]
    decode: usize,
    /// Threads of the pool (default: the physical cores).
    #[arg(long)]
    threads: Option<usize>,
    /// A manifest model name or a GGUF file (default: the manifest's default model).
    #[arg(long)]
    model: Option<String>,
    /// Tokens already cached before a further 512-token prefill (llama-bench's -d).
    #[arg(long, default_value_t = 0)]
    depth: usize,
    /// Write every case's samples, and the OS's figures per prefill round, to this file.
    #[arg(long)]
    json: Option<String>,
    /// Repack our quantized matrices at load.
    #[arg(long, value_enum, default_value_t = Repack::Auto)]
    repack: Repack,
    /// How our model holds its matrices (q keeps the file's blocks).
    #[arg(long, value_enum, default_value_t = WeightDType::Q)]
    dtype: WeightDType,
    /// Run nothing but our decode of SEQS sequences (for a profiler).
    #[arg(long, value_name = "SEQS")]
    decode_only: Option<usize>,
    /// Run nothing but our 512-token prefill, at --depth if given (for a profiler).
    #[arg(long)]
    prefill_only: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn args() -> Args {
    <Args as clap::Parser>::parse()
}

fn stock_model(path: &std::path::Path) -> ModelWeights {
    let mut f = std::fs::File::open(path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    ModelWeights::from_gguf(ct, &mut f, &Device::Cpu).unwrap()
}

fn stock_prefill(m: &mut ModelWeights, prompt: &[u32]) -> (f64, u32) {
    let x = Tensor::new(prompt, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let t = Instant::now();
    let row = m
        .forward(&x, 0)
        .unwrap()
        .squeeze(0)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    (t.elapsed().as_secs_f64(), argmax(&row))
}

fn stock_decode(m: &mut ModelWeights, prompt: &[u32], n: usize) -> f64 {
    let (_, mut next) = stock_prefill(m, prompt);
    let t = Instant::now();
    for i in 0..n {
        let x = Tensor::new(&[next], &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        next = argmax(
            &m.forward(&x, prompt.len() + i)
                .unwrap()
                .squeeze(0)
                .unwrap()
                .to_vec1::<f32>()
                .unwrap(),
        );
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn step(m: &Model, tokens: &[Vec<u32>], caches: &mut [KvCache]) -> Vec<u32> {
    let inputs: Vec<SeqInput> = tokens
        .iter()
        .map(|t| SeqInput {
            tokens: t,
            logits: LogitRows::Last,
        })
        .collect();
    let mut refs: Vec<&mut KvCache> = caches.iter_mut().collect();
    let rows = m
        .forward(&inputs, &mut refs)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    rows.iter().map(|r| argmax(r)).collect()
}

fn ours_prefill(m: &Model, prompt: &[u32]) -> f64 {
    let mut caches = vec![m.new_cache(prompt.len() + 1).unwrap()];
    let t = Instant::now();
    step(m, &[prompt.to_vec()], &mut caches);
    t.elapsed().as_secs_f64()
}

/// Seconds to prefill `prompt` after `depth` (untimed, in 512-token chunks as llama-bench's
/// micro-batches) already in the cache.
fn ours_prefill_at(m: &Model, depth: &[u32], prompt: &[u32]) -> f64 {
    let mut caches = vec![m.new_cache(depth.len() + prompt.len() + 1).unwrap()];
    for chunk in depth.chunks(512) {
        step(m, &[chunk.to_vec()], &mut caches);
    }
    let t = Instant::now();
    step(m, &[prompt.to_vec()], &mut caches);
    t.elapsed().as_secs_f64()
}

/// Aggregate decode tok/s of `seqs` sequences sharing every step.
fn ours_decode(m: &Model, prompt: &[u32], seqs: usize, n: usize) -> f64 {
    let mut caches: Vec<KvCache> = (0..seqs)
        .map(|_| m.new_cache(prompt.len() + n + 1).unwrap())
        .collect();
    let mut next: Vec<u32> = caches
        .iter_mut()
        .map(|c| step(m, &[prompt.to_vec()], std::slice::from_mut(c))[0])
        .collect();
    let t = Instant::now();
    for _ in 0..n {
        let tokens: Vec<Vec<u32>> = next.iter().map(|&x| vec![x]).collect();
        next = step(m, &tokens, &mut caches);
    }
    (seqs * n) as f64 / t.elapsed().as_secs_f64()
}

/// `--decode-only SEQS`: our decode of SEQS sequences alone, `--rounds` times after one
/// warm-up, each round's aggregate printed and the best last (a profiling aid: under
/// `perf record` the step is all there is).
fn decode_only(m: &Model, prompt: &[u32], seqs: usize, a: &Args) {
    ours_decode(m, prompt, seqs, 4);
    let rates: Vec<f64> = (0..a.rounds)
        .map(|_| ours_decode(m, prompt, seqs, a.decode))
        .inspect(|r| println!("decode, {seqs} sequences: {r:.1} tok/s (aggregate)"))
        .collect();
    let best = rates.iter().copied().fold(0f64, f64::max);
    println!("best of {}: {best:.1} tok/s", a.rounds);
}

/// What the OS saw over one timed case: the figures that widen a spread (CPU taken by other
/// processes or the hypervisor, threads descheduled, pages faulted in).
fn os_line(r: &RoundSentinel) -> String {
    let s = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.2} s"));
    let n = |v: Option<u64>| v.map_or("n/a".into(), |v| v.to_string());
    format!(
        "steal {}, other processes {}, cores busy {}, switches {} vol / {} invol, {} minor faults",
        s(r.steal_s),
        s(r.other_cpu_s),
        r.cores_busy.map_or("n/a".into(), |v| format!("{v:.2}")),
        n(r.voluntary_switches),
        n(r.involuntary_switches),
        n(r.minor_faults),
    )
}

fn prompt_of(tok: &tokfire::model::tokenizer::Tokenizer, n: usize) -> Vec<u32> {
    let ids = tok.encode(&TEXT.repeat(n / 20 + 2)).unwrap();
    ids[..n].to_vec()
}

fn row(name: &str, ours: &[f64], stock: Option<&[f64]>) {
    let fmt = |v: &[f64]| {
        format!(
            "{:.1} ({:.1}–{:.1})",
            stats::median(v).unwrap(),
            stats::min(v).unwrap(),
            stats::max(v).unwrap()
        )
    };
    match stock {
        Some(s) => println!(
            "| {name} | {} | {} | {:.2}× |",
            fmt(ours),
            fmt(s),
            stats::median(ours).unwrap() / stats::median(s).unwrap()
        ),
        None => println!("| {name} | {} | – | – |", fmt(ours)),
    }
}

/// Qwen3.5: where a 512-token prefill and single-sequence decode spend their time (one run of
/// each after the table's rounds).
fn cost_split(
    m: &Model,
    q: &tokfire::model::qwen35::Qwen35,
    p512: &[u32],
    short: &[u32],
    n: usize,
) {
    q.take_cost_split();
    let prefill = ours_prefill(m, p512);
    let pre = q.take_cost_split();
    ours_decode(m, short, 1, n);
    let dec = q.take_cost_split();
    let show = |name: &str, parts: &[(&str, f64)]| {
        let total: f64 = parts.iter().map(|p| p.1).sum();
        let shares: Vec<String> = parts
            .iter()
            .map(|(k, v)| format!("{k} {:.0} %", 100.0 * v / total.max(1e-12)))
            .collect();
        println!(
            "cost split, {name} ({:.3} s in steps): {}",
            total,
            shares.join(", ")
        );
    };
    show(&format!("prefill 512 ({:.3} s)", prefill), &pre);
    show(&format!("decode {n} tokens, 1 sequence"), &dec);
}

fn main() {
    let a = args();
    if let Some(n) = a.threads {
        // Before any thread exists: rayon's global pool (ours and candle's work runs on it
        // here) and candle's gemm both take their count from these.
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    }
    // Our model steps run on a runtime's workers, as under every verb of the CLI.
    let rt =
        tokfire::kernels::Runtime::new(tokfire::kernels::threads(), tokfire::kernels::detect())
            .unwrap();
    let _in = rt.enter();
    let m = tokfire::model::manifest::manifest().unwrap();
    let cache = std::env::var_os("TOKFIRE_CACHE")
        .map(Into::into)
        .unwrap_or_else(tokfire::config::default_cache_dir);
    let name = a.model.clone().unwrap_or_else(|| m.default.clone());
    let path = match m.get(&name) {
        Some(entry) => entry.ensure(&cache).unwrap(),
        None => std::path::PathBuf::from(&name),
    };
    let cfg = ModelConfig {
        model: path.to_string_lossy().into(),
        cache_dir: cache,
        hf_cache_dir: std::env::temp_dir(),
        dtype: a.dtype,
        device: DeviceSpec::Cpu,
        chat_template: None,
        load: Default::default(),
        repack: a.repack,
    };
    let ours = tokfire::model::load(&cfg, tokfire::model::Kernels::Ours).unwrap();
    let quantized = a.dtype == WeightDType::Q;
    let mut stock = (quantized && ours.model.as_llama().is_some()).then(|| stock_model(&path));
    let (p128, p512) = (
        prompt_of(&ours.tokenizer, 128),
        prompt_of(&ours.tokenizer, 512),
    );
    let short = &p128[..16];
    let deep = prompt_of(&ours.tokenizer, a.depth + 512);
    let (deep, after) = deep.split_at(a.depth);
    let (mut o, mut s): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (vec![vec![]; 6], vec![vec![]; 3]);
    if a.prefill_only {
        ours_prefill(&ours.model, &p128);
        for _ in 0..a.rounds {
            let before = Snapshot::take();
            let (case, s) = match a.depth {
                0 => ("prefill 512".to_string(), ours_prefill(&ours.model, &p512)),
                d => (
                    format!("prefill 512 at depth {d}"),
                    ours_prefill_at(&ours.model, deep, after),
                ),
            };
            let os = os_line(&before.until(&Snapshot::take()));
            println!("{case}: {:.1} tok/s · {os}", 512.0 / s);
        }
        return;
    }
    if let Some(seqs) = a.decode_only {
        return decode_only(&ours.model, short, seqs, &a);
    }
    // One untimed warm-up of every shape for both engines.
    ours_prefill(&ours.model, &p128);
    ours_decode(&ours.model, short, 3, 4);
    if let Some(st) = stock.as_mut() {
        stock_prefill(st, &p128);
        stock_decode(st, short, 4);
    }
    let mut os512 = Vec::new();
    for r in 0..a.rounds {
        eprintln!("round {}/{}", r + 1, a.rounds);
        o[0].push(128.0 / ours_prefill(&ours.model, &p128));
        let before = Snapshot::take();
        o[1].push(512.0 / ours_prefill(&ours.model, &p512));
        os512.push(os_line(&before.until(&Snapshot::take())));
        o[2].push(ours_decode(&ours.model, short, 1, a.decode));
        if let Some(st) = stock.as_mut() {
            s[0].push(128.0 / stock_prefill(st, &p128).0);
            s[1].push(512.0 / stock_prefill(st, &p512).0);
            s[2].push(stock_decode(st, short, a.decode));
        }
        o[3].push(ours_decode(&ours.model, short, 2, a.decode));
        o[4].push(ours_decode(&ours.model, short, 3, a.decode));
        if a.depth > 0 {
            o[5].push(512.0 / ours_prefill_at(&ours.model, deep, after));
        }
    }
    let repacked = ours.split.as_ref().map_or(0, |s| s.repacked_bytes);
    println!("engine benchmark: {} | {}, dtype {}, repack {} ({:.1} MB repacked) | {} rounds, median (min–max) tok/s | decode {} tokens after a 16-token prompt", path.display(), tokfire::kernels::describe(), a.dtype.to_possible_value().unwrap().get_name(), a.repack, repacked as f64 / 1e6, a.rounds, a.decode);
    println!("| case | ours | stock quantized_llama | ours ÷ stock |");
    println!("|---|---|---|---|");
    let stock_col = |i: usize| stock.is_some().then_some(s[i].as_slice());
    row("prefill 128", &o[0], stock_col(0));
    row("prefill 512", &o[1], stock_col(1));
    row("decode, 1 sequence", &o[2], stock_col(2));
    row("decode, 2 sequences (aggregate)", &o[3], None);
    row("decode, 3 sequences (aggregate)", &o[4], None);
    if a.depth > 0 {
        row(&format!("prefill 512 at depth {}", a.depth), &o[5], None);
    }
    println!("prefill 512, round by round, with what the OS saw:");
    for (i, (v, os)) in o[1].iter().zip(&os512).enumerate() {
        println!("  {}: {v:.1} tok/s · {os}", i + 1);
    }
    let one = stats::median(&o[2]).unwrap();
    println!(
        "aggregate ÷ single-sequence decode: 2 seqs {:.2}×, 3 seqs {:.2}×",
        stats::median(&o[3]).unwrap() / one,
        stats::median(&o[4]).unwrap() / one
    );
    if let Some(q) = ours.model.as_qwen35() {
        cost_split(&ours.model, q, &p512, short, a.decode);
    }
    let stream = bandwidth::streaming_read(5);
    let kv = ours.model.kv_shape().bytes_per_token() as f64 * (16.0 + a.decode as f64 / 2.0);
    let dense_bytes = match a.dtype {
        WeightDType::Q => None,
        WeightDType::F32 => Some(4),
        WeightDType::F16 | WeightDType::Bf16 => Some(2),
    };
    let per_token = bandwidth::weight_bytes_per_token(&path, dense_bytes) as f64 + kv;
    let achieved = per_token * one;
    println!(
        "bandwidth: decode, 1 sequence reads {:.1} MB/token ({:.1} MB of KV) × {one:.1} tok/s = \
         {:.2} GB/s, {:.0} % of this machine's streaming read ({:.2} GB/s, best of 5 over 1 GiB)",
        per_token / 1e6,
        kv / 1e6,
        achieved / 1e9,
        100.0 * achieved / stream,
        stream / 1e9
    );
    if let Some(file) = &a.json {
        let cases = [
            "prefill_128",
            "prefill_512",
            "decode_1",
            "decode_2_aggregate",
            "decode_3_aggregate",
            "prefill_512_at_depth",
        ];
        let mut out = serde_json::Map::new();
        for (name, v) in cases.iter().zip(&o).filter(|(_, v)| !v.is_empty()) {
            out.insert(
                name.to_string(),
                serde_json::json!({"median": stats::median(v), "samples": v}),
            );
        }
        let doc = serde_json::json!({
            "model": path, "kernels": tokfire::kernels::describe(), "depth": a.depth,
            "repack": a.repack.to_string(), "repacked_bytes": repacked,
            "dtype": a.dtype.to_possible_value().unwrap().get_name(),
            "decode_tokens": a.decode, "tok_s": out, "stream_read_bytes_s": stream,
            "prefill_512_os": os512,
            "decode_bytes_per_token": per_token,
        });
        std::fs::write(file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
