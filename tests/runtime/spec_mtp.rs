//! `--spec mtp` on tiny synthetic models with a multi-token-prediction (nextn) block in
//! llama.cpp's layout: the file still runs as a plain model (the nextn block is not part of the
//! main stack), greedy output with MTP drafting equals plain greedy token for token at 1 and 3
//! concurrent sequences with prefill chunks mixed into verify steps, drafts are proposed and
//! verified, a block built to mirror the target gets them accepted, sampled decoding completes,
//! hostile nextn metadata and tensors are refused naming what is wrong, the default model gets
//! the "no MTP layers" error, and the CLI runs it end to end.

use crate::common;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use candle_core::quantized::GgmlDType;
use candle_core::Tensor;

use common::*;
use tokfire::config::{DeviceSpec, SamplingConfig, WeightDType};
use tokfire::engine::batching::{Engine, EventKind, Request};
use tokfire::engine::scheduler::SchedulerConfig;
use tokfire::error::EngineError;
use tokfire::model::family::Model;
use tokfire::model::synthetic::{self, Spec};
use tokfire::model::synthetic_mtp::{self as mtp_file, MtpSpec, MtpWeights};
use tokfire::model::Kernels;
use tokfire::spec::mtp::MtpDrafter;
use tokfire::spec::{DraftInput, Drafter, SpecConfig, SpecMethod};

fn cfg(max_seqs: usize, max_batch_tokens: usize, prefill_chunk: usize) -> SchedulerConfig {
    SchedulerConfig {
        max_seqs,
        max_batch_tokens,
        prefill_chunk,
        kv_budget_tokens: 100_000,
        schedule: Default::default(),
        prefix_cache_tokens: 0,
    }
}

fn write(dir: &Path, name: &str, spec: &Spec, mtp: &MtpSpec) -> PathBuf {
    let path = dir.join(name);
    mtp_file::write_gguf(&path, spec, mtp).unwrap();
    path
}

fn prompts() -> Vec<Vec<u32>> {
    vec![
        vec![40, 71, 3, 200, 17, 40, 71, 3, 200, 17, 40, 71],
        vec![5, 6, 7, 5, 6, 7, 5, 6],
        (10..40).chain(10..30).collect(),
    ]
}

/// Counts from a run: proposed, accepted, verify steps, verify steps sharing a step with prefill.
#[derive(Debug, Default)]
struct Counts {
    proposed: usize,
    accepted: usize,
    verifies: usize,
    mixed: usize,
}

/// Runs `prompts` to completion, with MTP drafting of `k` tokens when given.
fn run(
    model: &Model,
    c: SchedulerConfig,
    sampling: &SamplingConfig,
    n: usize,
    k: Option<usize>,
) -> (Vec<Vec<u32>>, Counts) {
    let mut e = Engine::new(model, c, sampling.clone());
    if let Some(k) = k {
        e.set_speculation(Box::new(MtpDrafter::new(model).unwrap()), k)
            .unwrap();
    }
    let prompts = prompts();
    for (i, p) in prompts.iter().enumerate() {
        e.submit(Request {
            id: i as u64,
            prompt: p.clone(),
            max_new: n,
            stop: vec![],
        })
        .unwrap();
    }
    e.run_to_completion().unwrap();
    let mut counts = Counts::default();
    let (mut prefill, mut counted) = (false, false);
    for ev in e.events() {
        match ev.kind {
            EventKind::StepStart { prefill_tokens, .. } => {
                (prefill, counted) = (prefill_tokens > 0, false);
            }
            EventKind::Verified { proposed, accepted } => {
                counts.proposed += proposed;
                counts.accepted += accepted;
                counts.verifies += 1;
                if prefill && !counted {
                    counts.mixed += 1;
                    counted = true;
                }
            }
            _ => {}
        }
    }
    let outs = (0..prompts.len())
        .map(|i| e.output(i as u64).unwrap().to_vec())
        .collect();
    (outs, counts)
}

const LEVELS: [(&str, (usize, usize, usize)); 3] = [
    ("1 seq", (1, 512, 512)),
    ("3 seqs", (3, 512, 512)),
    ("3 seqs, chunked", (3, 16, 5)),
];

#[test]
fn a_file_with_a_nextn_block_decodes_like_the_same_model_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec::default();
    let with = write(dir.path(), "mtp.gguf", &spec, &MtpSpec::default());
    let without = dir.path().join("plain.gguf");
    synthetic::write_gguf(&without, &spec).unwrap();
    let (a, b) = (load(&with, WeightDType::Q), load(&without, WeightDType::Q));
    let l = a.model.as_llama().unwrap();
    assert_eq!((l.cfg.layers, l.cfg.nextn), (2, 1));
    assert!(l.has_nextn() && !b.model.as_llama().unwrap().has_nextn());
    let s = SamplingConfig::default();
    let (x, _) = run(&a.model, cfg(3, 512, 512), &s, 16, None);
    let (y, _) = run(&b.model, cfg(3, 512, 512), &s, 16, None);
    assert_eq!(x, y, "the nextn block leaked into the main stack");
}

#[test]
fn mtp_greedy_equals_plain_greedy_and_drafts_are_verified() {
    mtp_greedy_on(Kernels::Ours, DeviceSpec::Cpu);
}

/// The same on candle's path (the code a GPU runs), on `TOKFIRE_TEST_DEVICE` (default: the CPU).
#[test]
fn mtp_greedy_equals_plain_greedy_on_the_device() {
    mtp_greedy_on(Kernels::Candle, test_device());
}

/// The default synthetic MTP model on `kernels` and `device`: MTP greedy is plain greedy.
fn mtp_greedy_on(kernels: Kernels, device: DeviceSpec) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mtp.gguf",
        &Spec::default(),
        &MtpSpec::default(),
    );
    mtp_greedy_equals_plain_greedy(&load_on(&path, WeightDType::Q, kernels, device).model);
}

/// Qwen3.5's own MTP block (a gated attention block with its own KV) drafting for its hybrid
/// trunk, whose recurrent state rolls back through snapshots: greedy output is plain greedy,
/// and the file runs without the block exactly as the same trunk written without it.
#[test]
fn qwen35_mtp_greedy_equals_plain_greedy_and_the_block_stays_out_of_the_trunk() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, mtp: bool| {
        let path = dir.path().join(name);
        let spec = Qwen35Spec {
            mtp,
            ..Qwen35Spec::default()
        };
        write_qwen35_gguf(&path, &spec).unwrap();
        load(&path, WeightDType::Q)
    };
    let (with, without) = (write("mtp.gguf", true), write("plain.gguf", false));
    let q = with.model.as_qwen35().unwrap();
    assert!(q.has_mtp() && !without.model.as_qwen35().unwrap().has_mtp());
    let s = SamplingConfig::default();
    let (x, _) = run(&with.model, cfg(3, 512, 512), &s, 16, None);
    let (y, _) = run(&without.model, cfg(3, 512, 512), &s, 16, None);
    assert_eq!(x, y, "the MTP block leaked into the trunk");
    mtp_greedy_equals_plain_greedy(&with.model);
}

/// A Qwen3.5 mirror model (a bigram trunk and an MTP block that predicts exactly what it will):
/// every MTP draft is accepted, as llama.cpp's `draft-mtp` accepts every one on the same file.
#[test]
fn qwen35_mtp_drafts_of_a_mirror_block_are_all_accepted() {
    use tokfire::model::synthetic_qwen35::{write_qwen35_gguf, Qwen35Spec};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mirror.gguf");
    let spec = Qwen35Spec {
        mtp: true,
        mirror: true,
        seed: 38,
        ..Qwen35Spec::default()
    };
    write_qwen35_gguf(&path, &spec).unwrap();
    let m = load(&path, WeightDType::Q).model;
    let s = SamplingConfig::default();
    let (plain, _) = run(&m, cfg(3, 512, 512), &s, 24, None);
    let (spec, c) = run(&m, cfg(3, 512, 512), &s, 24, Some(3));
    assert_eq!(spec, plain);
    assert!(c.proposed > 20 && c.accepted == c.proposed, "{c:?}");
}

fn mtp_greedy_equals_plain_greedy(m: &Model) {
    let s = SamplingConfig::default();
    for (name, (seqs, tokens, chunk)) in LEVELS {
        let (plain, _) = run(m, cfg(seqs, tokens, chunk), &s, 24, None);
        for k in [1, 3] {
            let (spec, c) = run(m, cfg(seqs, tokens, chunk), &s, 24, Some(k));
            assert_eq!(spec, plain, "{name}, k={k}: MTP output differs");
            assert!(c.proposed > 0 && c.verifies > 0, "{name}, k={k}: {c:?}");
            assert!(c.accepted <= c.proposed);
        }
    }
    let (_, c) = run(m, cfg(3, 16, 5), &s, 24, Some(3));
    assert!(c.mixed > 0, "no verify step carried a prefill chunk: {c:?}");
}

#[test]
fn a_block_that_mirrors_the_target_gets_its_drafts_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec {
        layers: 1,
        ..Spec::default()
    };
    let mirror = MtpSpec {
        weights: MtpWeights::Mirror,
        ..MtpSpec::default()
    };
    let path = write(dir.path(), "mirror.gguf", &spec, &mirror);
    let loaded = load(&path, WeightDType::Q);
    let m = &loaded.model;
    let s = SamplingConfig::default();
    for (name, (seqs, tokens, chunk)) in LEVELS {
        let (plain, _) = run(m, cfg(seqs, tokens, chunk), &s, 24, None);
        let (spec, c) = run(m, cfg(seqs, tokens, chunk), &s, 24, Some(3));
        assert_eq!(spec, plain, "{name}: MTP output differs");
        let rate = c.accepted as f64 / c.proposed as f64;
        eprintln!("mirror block, {name}, k=3: {c:?}, acceptance {rate:.3}");
        assert!(rate > 0.5, "{name}: the mirror block drafts poorly: {c:?}");
    }
}

/// The two last tokens of a sequence asking for a draft, and the proposal.
type Proposal = ([u32; 2], Vec<u32>);

/// Delegates to the MTP drafter and records each proposal.
struct Recording<'m> {
    inner: MtpDrafter<'m>,
    log: Rc<RefCell<Vec<Proposal>>>,
}

impl Drafter for Recording<'_> {
    fn propose(&mut self, seqs: &[DraftInput]) -> Result<Vec<Vec<u32>>, EngineError> {
        let out = self.inner.propose(seqs)?;
        for (s, p) in seqs.iter().zip(&out) {
            let n = s.tokens.len();
            let last = [s.tokens[n - 2], s.tokens[n - 1]];
            self.log.borrow_mut().push((last, p.clone()));
        }
        Ok(out)
    }
    fn release(&mut self, id: u64) {
        self.inner.release(id)
    }
    fn wants_hidden(&self) -> bool {
        self.inner.wants_hidden()
    }
    fn observe_hidden(&mut self, id: u64, from: usize, rows: Tensor) -> Result<(), EngineError> {
        self.inner.observe_hidden(id, from, rows)
    }
}

#[test]
fn the_drafter_reads_the_hidden_state_that_chose_the_last_token() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec {
        quant: GgmlDType::F32,
        ..Spec::default()
    };
    let echo = MtpSpec {
        weights: MtpWeights::Echo,
        ..MtpSpec::default()
    };
    let path = write(dir.path(), "echo.gguf", &spec, &echo);
    let loaded = load(&path, WeightDType::Q);
    let m = &loaded.model;
    for (name, (seqs, tokens, chunk)) in LEVELS {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut e = Engine::new(m, cfg(seqs, tokens, chunk), SamplingConfig::default());
        let inner = MtpDrafter::new(m).unwrap();
        e.set_speculation(
            Box::new(Recording {
                inner,
                log: log.clone(),
            }),
            3,
        )
        .unwrap();
        for (i, p) in prompts().into_iter().enumerate() {
            let r = Request {
                id: i as u64,
                prompt: p,
                max_new: 24,
                stop: vec![],
            };
            e.submit(r).unwrap();
        }
        e.run_to_completion().unwrap();
        let log = log.borrow();
        assert!(log.len() > 10, "{name}: {} proposals", log.len());
        for (last, p) in log.iter() {
            assert_eq!(
                p[0], last[1],
                "{name}: the first draft did not echo the last token"
            );
        }
        // Where the last two tokens differ, a row off by one would have shown.
        let telling = log.iter().filter(|(l, _)| l[0] != l[1]).count();
        assert!(telling > 5, "{name}: only {telling} telling proposals");
    }
}

#[test]
fn sampled_mtp_runs_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "mtp.gguf",
        &Spec::default(),
        &MtpSpec::default(),
    );
    let loaded = load(&path, WeightDType::Q);
    let s = SamplingConfig {
        temperature: 0.8,
        seed: 7,
        ..SamplingConfig::default()
    };
    let (outs, c) = run(&loaded.model, cfg(3, 16, 5), &s, 20, Some(3));
    assert!(outs.iter().all(|o| o.len() == 20), "{outs:?}");
    assert!(c.proposed > 0, "{c:?}");
}

/// Loads a file and returns the load error's text.
fn refused(path: &Path) -> String {
    let e = tokfire::model::load(
        &model_config(path, WeightDType::Q),
        tokfire::model::Kernels::Ours,
    )
    .err()
    .expect("a hostile file loaded");
    format!("{e:#}")
}

#[test]
fn hostile_nextn_metadata_and_tensors_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Spec::default();
    let bad = |name: &str, mtp: MtpSpec| refused(&write(dir.path(), name, &spec, &mtp));
    let e = bad(
        "count.gguf",
        MtpSpec {
            declared: 9,
            block_count: Some(3),
            ..MtpSpec::default()
        },
    );
    assert!(
        e.contains("llama.nextn_predict_layers") && e.contains("fewer than the 3 blocks"),
        "{e}"
    );
    // Three nextn blocks declared, one written: block 3 is missing.
    let e = bad(
        "absent.gguf",
        MtpSpec {
            declared: 3,
            ..MtpSpec::default()
        },
    );
    assert!(
        e.contains("found 5 (2 layers + 3 nextn blocks of llama.nextn_predict_layers)")
            && e.contains("expected 3"),
        "{e}"
    );
    let e = bad(
        "hnorm.gguf",
        MtpSpec {
            omit: Some("nextn.hnorm".into()),
            ..MtpSpec::default()
        },
    );
    assert!(
        e.contains("blk.2.nextn.hnorm.weight") && e.contains("missing"),
        "{e}"
    );
    let e = bad(
        "shape.gguf",
        MtpSpec {
            eh_proj_inputs: Some(64),
            ..MtpSpec::default()
        },
    );
    assert!(
        e.contains("blk.2.nextn.eh_proj.weight") && e.contains("[64, 128]"),
        "{e}"
    );
}

#[test]
fn a_model_without_nextn_layers_gets_the_clear_error() {
    let spec = SpecConfig {
        method: SpecMethod::Mtp,
        ..SpecConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.gguf");
    synthetic::write_gguf(&plain, &Spec::default()).unwrap();
    for path in [plain, default_model_path()] {
        let loaded = load(&path, WeightDType::Q);
        let e = tokfire::spec::drafter(&spec, &loaded.model)
            .err()
            .expect("a model without nextn layers drafted")
            .to_string();
        assert!(
            e.contains("llama.nextn_predict_layers")
                && e.contains("DeepSeek-V3")
                && e.contains("--spec layerskip:L"),
            "{e}"
        );
    }
}

/// `tokfire ARGS --model MODEL --workload … --out OUT`; stdout after checking success.
fn cli(args: &[&str], model: &Path, wl: &Path, out: &Path) -> String {
    let mut c = assert_cmd::Command::cargo_bin("tokfire").unwrap();
    c.env_remove("TOKFIRE_CACHE").env("TOKFIRE_LOG", "error");
    let res = c
        .args(args)
        .args(["--model", model.to_str().unwrap()])
        .args(["--workload", wl.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    String::from_utf8_lossy(&res.stdout).into_owned()
}

fn results(out: &Path) -> tokfire::record::ResultsFile {
    tokfire::record::io::read(out).unwrap()
}

#[test]
fn the_cli_runs_mtp_end_to_end_and_records_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "mtp.gguf",
        &Spec::default(),
        &MtpSpec::default(),
    );
    let wl = dir.path().join("tiny.toml");
    std::fs::write(&wl, WORKLOAD).unwrap();
    let out = dir.path().join("mtp.json");
    let few = ["--rounds", "2", "--warmup", "1", "--allow-few-rounds"];
    let mut a = vec!["run", "--spec", "mtp", "--spec-k", "3", "--jobs", "3"];
    a.extend(few);
    let stdout = cli(&a, &m, &wl, &out);
    eprintln!("{stdout}");
    assert!(
        crate::text::has(&stdout, "--spec mtp --spec-k 3"),
        "{stdout}"
    );
    let file = results(&out);
    let run = &file.runs[0];
    assert_eq!(run.config.spec.method, SpecMethod::Mtp);
    assert_eq!(run.config.spec.k, 3);
    assert_eq!(run.drafter.as_ref().unwrap().spec, "mtp");
    let d = run.drafter.as_ref().unwrap();
    assert!(d.peak_kv_bytes > 0 && d.weight_bytes > 0, "{d:?}");
    assert!(
        crate::text::has(&stdout, "the checkpoint's nextn block ("),
        "{stdout}"
    );
    let l = &run.summary.as_ref().unwrap().levels[0];
    assert_eq!(l.spec.baseline.spec_outputs_identical, "yes");
    assert!(l.spec.spec_proposed > 0, "{:?}", l.spec);
    assert!(l.spec.spec_acceptance.is_some() && l.spec.spec_accepted_len.is_some());

    // The mirror block at 1 and 3 jobs: acceptance well above the random block's.
    let spec = Spec {
        layers: 1,
        ..Spec::default()
    };
    let mirror = MtpSpec {
        weights: MtpWeights::Mirror,
        ..MtpSpec::default()
    };
    let m = write(dir.path(), "mirror.gguf", &spec, &mirror);
    let out = dir.path().join("mirror.json");
    let a = [
        "sweep", "--spec", "mtp", "--spec-k", "3", "--jobs", "1,3", "--rounds", "5",
    ];
    let stdout = cli(&a, &m, &wl, &out);
    eprintln!("{stdout}");
    for l in &results(&out).runs[0].summary.as_ref().unwrap().levels {
        assert_eq!(l.spec.baseline.spec_outputs_identical, "yes");
        assert!(
            l.spec.spec_acceptance.is_some_and(|a| a > 0.5),
            "{:?}",
            l.spec
        );
    }
}

const WORKLOAD: &str = r#"
name = "tiny"
version = 1
use_case = "test"
description = "Two small tasks for the synthetic model."

[criteria]
label = "test targets"
ttft_max_s = 30.0
pass_rate_min = 0.0

[[tasks]]
id = "raw-one"
raw = "once upon a time"
max_tokens = 12
checks = [{ kind = "not_contains", value = "zzz-never" }]

[[tasks]]
id = "chat-two"
user = "count to three"
max_tokens = 10
checks = [{ kind = "regex", pattern = "." }]
"#;
