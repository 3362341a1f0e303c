//! The default model (SmolLM2-135M-Instruct Q4_1, fetched into the cache if missing) against
//! references: llama.cpp's token ids, candle-transformers' stock `quantized_llama` on the same
//! file, and our own one-sequence-at-a-time runs for the batched step.

use crate::common;

use std::sync::OnceLock;

use candle_core::quantized::gguf_file;
use candle_core::Device;
use candle_transformers::models::quantized_llama;
use common::*;
use tokfire::config::WeightDType;
use tokfire::model::Loaded;

/// llama.cpp's and stock candle's greedy continuation of "The capital of France is".
const PARIS: [u32; 32] = [
    7042, 30, 198, 198, 504, 1797, 1918, 553, 253, 2155, 282, 4723, 216, 35, 33, 33, 2215, 701, 30,
    198, 198, 504, 1797, 1918, 553, 253, 2155, 282, 4723, 216, 35, 33,
];

fn model() -> &'static Loaded {
    static M: OnceLock<Loaded> = OnceLock::new();
    M.get_or_init(|| load(&default_model_path(), WeightDType::Q))
}

#[test]
fn tokenizer_matches_llama_cpp_ids_and_round_trips() {
    let tok = &model().tokenizer;
    assert_eq!(
        tok.encode("The capital of France is").unwrap(),
        [504, 3575, 282, 4649, 314]
    );
    assert_eq!(
        tok.encode("<|im_start|>user\nHi<|im_end|>").unwrap(),
        [1, 4093, 198, 26843, 2]
    );
    let text = "Hello, world! Ünïcödé 123 +\n  code()";
    let ids = tok.encode(text).unwrap();
    assert_eq!(tok.decode(&ids).unwrap(), text);
    // smollm splits digits one by one.
    assert_eq!(tok.encode("123").unwrap().len(), 3);
}

/// Top-2 gap (logits) below which a greedy step counts as a near tie.
const NEAR_TIE: f32 = 0.5;

#[test]
fn greedy_32_equals_llama_cpp_and_stock_candle() {
    // Stock candle equals llama.cpp on all 32 ids. Ours equals them up to the first step where
    // the reference is a near tie: there each layer's 8-bit re-quantization of activations
    // (see below) can flip the pick. Measured: ours takes stock's runner-up at step 14, where
    // stock's top-2 gap is under 0.5 logits (ours: 0.044), after 14 equal steps.
    let m = model();
    let prompt = m.tokenizer.encode("The capital of France is").unwrap();
    let ours = solo(&m.model, &prompt, 32);

    let path = default_model_path();
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let mut stock = quantized_llama::ModelWeights::from_gguf(ct, &mut f, &Device::Cpu).unwrap();
    let st = stock_trace(&prompt, 32, |x, pos| stock.forward(x, pos));
    assert_eq!(st.tokens, PARIS, "stock quantized_llama vs llama.cpp");
    let same = (0..32)
        .position(|i| ours.tokens[i] != PARIS[i])
        .unwrap_or(32);
    if same < 32 {
        let (second, gap) = runner_up(&st.logits[same]);
        assert!(
            same >= 5 && gap < NEAR_TIE && ours.tokens[same] == second,
            "ours vs llama.cpp differ at step {same} (reference top-2 gap {gap}): {:?}",
            ours.tokens
        );
    }
    // Our kernels quantize activations as ggml's reference does (Q8_1 `s = f16(d * sum)`);
    // stock candle rounds `s` differently (`f16(sum) * f16(d)`) and sums in another order.
    // Each layer re-quantizes its input to 8 bits, which turns such last-bit differences into
    // whole quantization steps: measured up to 1.37 logits against stock over the first steps,
    // while ours and stock are each within 0.7-1.0 of the dense f32 model.
    for (step, (a, b)) in st
        .logits
        .iter()
        .zip(&ours.logits)
        .take(same + 1)
        .enumerate()
    {
        let d = max_diff(a, b);
        assert!(d < 2.0, "step {step}: logits differ from stock by {d}");
    }
    assert_eq!(m.tokenizer.decode(&ours.tokens[..2]).unwrap(), " Paris.");
}

fn three_prompts(m: &Loaded) -> [Vec<u32>; 3] {
    let enc = |s: &str| m.tokenizer.encode(s).unwrap();
    let chat = m.chat.as_ref().unwrap();
    [
        enc("The capital of France is"),
        enc(&chat
            .render(
                &[tokfire::model::chat::Message::new(
                    "user",
                    "Name three colours.",
                )],
                true,
            )
            .unwrap()),
        enc("def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ]
}

/// The runner-up of a row and its gap to the largest logit.
fn runner_up(row: &[f32]) -> (u32, f32) {
    let (mut a, mut b, mut ib) = (f32::NEG_INFINITY, f32::NEG_INFINITY, 0);
    let mut ia = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > a {
            (b, ib) = (a, ia);
            (a, ia) = (v, i);
        } else if v > b {
            (b, ib) = (v, i);
        }
    }
    (ib as u32, a - b)
}

/// Runs the three prompts staggered in shared steps and each alone; asserts equal greedy tokens
/// and logits within `tol`; returns the largest logit difference seen.
fn check_batched(m: &Loaded, chunks: [usize; 3], tol: f32) -> f32 {
    let prompts = three_prompts(m);
    let plans: Vec<Plan> = prompts
        .iter()
        .zip([0, 1, 4])
        .zip(chunks)
        .map(|((p, start), chunk)| Plan {
            prompt: p.clone(),
            start,
            chunk,
        })
        .collect();
    let n = 16;
    let together = batched(&m.model, &plans, n);
    let mut worst = 0.0f32;
    for (p, t) in prompts.iter().zip(&together) {
        let alone = solo(&m.model, p, n);
        assert_eq!(t.tokens, alone.tokens, "batched tokens differ from alone");
        for (i, (a, b)) in t.logits.iter().zip(&alone.logits).enumerate() {
            let d = max_diff(a, b);
            worst = worst.max(d);
            assert!(
                d <= tol,
                "step {i}: batched logits differ from alone by {d} > {tol}"
            );
        }
    }
    worst
}

#[test]
fn three_sequences_batched_equal_each_alone() {
    // Staggered starts put one sequence's prefill in the same step as others' decode tokens.
    // Every row of a quantized matmul is computed on its own, and each sequence's attention has
    // the same shape as when it runs alone, so the logits are identical.
    check_batched(model(), [usize::MAX; 3], 0.0);
}

#[test]
fn chunked_prefill_gives_the_same_tokens() {
    // With dense f32 weights candle's gemm rounds differently per matmul shape, so chunking a
    // prompt moves logits by ~1e-4. With quantized weights on the CPU every op of the step is
    // per row (our kernels, RMSNorm, RoPE, SiLU·mul) or per query over exactly its own keys
    // in a fixed order (our attention), so chunked prefill is bit-identical to whole.
    let dense = load(&default_model_path(), WeightDType::F32);
    check_batched(&dense, [usize::MAX, 16, 7], 1e-3);
    check_batched(model(), [usize::MAX, 16, 7], 0.0);
}

#[test]
fn dense_half_weights_on_our_kernels_equal_candles_and_batch_bit_identically() {
    // `--dtype f16|bf16` runs our dense kernels: every output row on its own in f32, so batched
    // and chunked steps give each sequence the bits it gets alone. Against candle's gemm (which
    // rounds the activations to the weight's type too) the greedy ids agree and the logits stay
    // close (measured: 0.042 logits at most for f16, 0.38 for bf16, whose activations candle
    // rounds to 8 mantissa bits).
    let path = default_model_path();
    let prompt = model()
        .tokenizer
        .encode("The capital of France is")
        .unwrap();
    for (dtype, tol) in [(WeightDType::F16, 0.25), (WeightDType::Bf16, 1.0)] {
        let ours = load(&path, dtype);
        let want = format!("dense {dtype:?}").to_lowercase();
        assert_eq!(ours.model.storage(), (want.clone(), want));
        check_batched(&ours, [usize::MAX, 16, 7], 0.0);
        let candle = load_with(&path, dtype, tokfire::model::Kernels::Candle);
        let (a, b) = (
            solo(&ours.model, &prompt, 12),
            solo(&candle.model, &prompt, 12),
        );
        assert_eq!(a.tokens, b.tokens, "{dtype:?}: ours against candle's gemm");
        let d = a.logits.iter().zip(&b.logits).map(|(x, y)| max_diff(x, y));
        let worst = d.fold(0f32, f32::max);
        assert!(
            worst < tol,
            "{dtype:?}: logits differ from candle's by {worst}"
        );
    }
}

#[test]
fn engine_runs_three_jobs_in_shared_steps_with_the_same_output_as_alone() {
    use tokfire::config::SamplingConfig;
    use tokfire::engine::batching::{Engine, EventKind, Request};
    use tokfire::engine::generate::{generate, GenerateParams};
    use tokfire::engine::scheduler::SchedulerConfig;
    let m = model();
    let eos: Vec<u32> = m.tokenizer.info.eos_id.into_iter().collect();
    let cfg = SchedulerConfig {
        max_seqs: 3,
        max_batch_tokens: 2048,
        prefill_chunk: 2048,
        kv_budget_tokens: 8192,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    };
    let mut e = Engine::new(&m.model, cfg, SamplingConfig::default());
    let prompts = three_prompts(m);
    for (i, p) in prompts.iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p.clone(),
            max_new: 24,
            stop: eos.clone(),
        })
        .unwrap();
    }
    e.run_to_completion().unwrap();
    for (i, p) in prompts.iter().enumerate() {
        let params = GenerateParams {
            max_new: 24,
            sampling: SamplingConfig::default(),
            stop: eos.clone(),
        };
        let alone = generate(&m.model, p, &params, |_, _| {}).unwrap();
        assert_eq!(
            e.output(i as u64).unwrap(),
            alone.tokens.as_slice(),
            "request {i}"
        );
    }
    let three = e
        .events()
        .iter()
        .filter(|ev| matches!(ev.kind, EventKind::StepStart { seqs: 3, .. }))
        .count();
    assert!(three > 0, "no step carried all 3 sequences");
}
