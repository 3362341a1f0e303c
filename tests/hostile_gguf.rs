//! Model files are hostile input. Every crash found by trying hostile GGUF files is a named
//! regression case here, and a seeded mutation test loads thousands of mutants of small synthetic
//! models through the `generate` load path (plus `inspect` and one forward step): each must run
//! or be refused with an error that names the file — never panic, and never allocate more than
//! the bounds of this binary's counting allocator (one allocation over [`MAX_ONE`] or a live heap
//! over [`MAX_LIVE`] fails the allocation, which aborts the test; the mutant being loaded is left
//! in `target/hostile/thread-N.gguf` with its seed in `thread-N.txt`).
//!
//! The long run: `cargo test --release --test hostile_gguf -- --ignored --nocapture`
//! (`HOSTILE_MUTANTS` sets the count, default 1 000 000).

mod hostile;
#[path = "support/text.rs"]
mod text;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use tokfire::error::ModelError;
use tokfire::model::inspect::inspect_gguf;

use hostile::gguf_edit::{Gguf, Val};
use hostile::{bases, check, config, Outcome};

/// Largest single allocation allowed in this binary, in bytes.
const MAX_ONE: usize = 64 << 20;
/// Largest live heap allowed in this binary, in bytes.
const MAX_LIVE: usize = 512 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting, refusing anything over the bounds.
struct Bounded;

impl Bounded {
    fn admit(size: usize) -> bool {
        if size > MAX_ONE || LIVE.load(Ordering::Relaxed) + size > MAX_LIVE {
            return false;
        }
        LARGEST.fetch_max(size, Ordering::Relaxed);
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        true
    }
}

// SAFETY: every call is forwarded to `System` with the same layout; only counts are added.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !Self::admit(l.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc(l);
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !Self::admit(l.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(l);
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if !Self::admit(new) {
            return std::ptr::null_mut();
        }
        let q = System.realloc(p, l, new);
        if q.is_null() {
            LIVE.fetch_sub(new, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Bounded = Bounded;

/// Mutants in the CI run.
const CI_MUTANTS: u64 = 4000;

fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mutation_run(count: u64, name: &str) {
    let dir = work_dir(name);
    let bases = bases(&dir);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u64);
    let start = Instant::now();
    let tally = hostile::run(&bases, 0..count, threads, &dir);
    eprintln!(
        "{} mutants in {:.1} s on {threads} threads: {} ran, {} refused, {} failed; peak live heap {} MiB, largest allocation {} KiB",
        tally.mutants,
        start.elapsed().as_secs_f64(),
        tally.ran,
        tally.refused,
        tally.failures.len(),
        PEAK.load(Ordering::Relaxed) >> 20,
        LARGEST.load(Ordering::Relaxed) >> 10,
    );
    for (seed, what, err) in &tally.failures {
        eprintln!("seed {seed} ({what}): {err}");
    }
    assert!(
        tally.failures.is_empty(),
        "some mutants panicked or gave unnamed errors"
    );
    assert_eq!(tally.mutants, count);
}

#[test]
fn thousands_of_mutants_run_or_are_refused() {
    mutation_run(CI_MUTANTS, "ci");
}

#[test]
#[ignore = "long: a million mutants; run with --ignored"]
fn a_million_mutants_run_or_are_refused() {
    let n = std::env::var("HOSTILE_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    mutation_run(n, "long");
}

// ---- regression cases: each crash class found by hand ----

/// The llama Q8_0 base: 2 layers, hidden 32, 4 heads / 2 kv heads, ffn 64, vocab 265.
fn base() -> Gguf {
    let dir = tempfile::tempdir().unwrap();
    bases(dir.path()).remove(0).parts
}

/// Writes `g` as `name`.gguf and returns its path.
fn write(g: &Gguf, name: &str) -> PathBuf {
    let path = work_dir("cases").join(format!("{name}.gguf"));
    std::fs::write(&path, g.write().0).unwrap();
    path
}

/// Asserts the file is refused by the load path with a message naming the file and `needle`,
/// that `inspect` reports it (a problem or an error), and that nothing panics.
fn refused(g: &Gguf, name: &str, needle: &str) -> String {
    let path = write(g, name);
    let msg = match check(&path, false) {
        Ok(Outcome::Refused(msg)) => msg,
        other => panic!("{name}: expected a refusal, got {other:?}"),
    };
    assert!(
        msg.contains(needle),
        "{name}: {msg:?} does not mention {needle:?}"
    );
    match inspect_gguf(&path) {
        Ok(r) => assert!(!r.problems.is_empty(), "{name}: inspect lists no problem"),
        Err(e) => assert!(e.to_string().contains(needle), "{name}: inspect error {e}"),
    }
    msg
}

#[test]
fn the_bases_load_and_run() {
    let dir = tempfile::tempdir().unwrap();
    for (i, b) in bases(dir.path()).iter().enumerate() {
        let path = write(&b.parts, &format!("base-{i}"));
        assert!(matches!(check(&path, false), Ok(Outcome::Ran)), "base {i}");
        assert!(inspect_gguf(&path).unwrap().problems.is_empty());
    }
}

#[test]
fn alignment_zero_or_three() {
    for a in [0, 3] {
        let mut g = base();
        g.set("general.alignment", Val::u32(a));
        let msg = refused(&g, &format!("alignment-{a}"), "general.alignment");
        assert!(msg.contains("power of two"), "{msg}");
    }
}

#[test]
fn head_count_kv_changed() {
    for (kv, needle) in [
        (4, "blk.0.attn_k.weight shape"),
        (1, "blk.0.attn_k.weight shape"),
        (3, "divisor"),
    ] {
        let mut g = base();
        g.set("llama.attention.head_count_kv", Val::u32(kv));
        refused(&g, &format!("kv-heads-{kv}"), needle);
    }
}

#[test]
fn zero_dimension_on_attn_q_or_attn_k() {
    for t in ["blk.0.attn_q.weight", "blk.1.attn_k.weight"] {
        let mut g = base();
        g.tensor(t).dims[1] = 0;
        refused(&g, &format!("zero-dim-{t}"), &format!("{t} dimensions"));
    }
}

#[test]
fn block_count_2_31_minus_1() {
    let mut g = base();
    g.set("llama.block_count", Val::u32((1 << 31) - 1));
    refused(&g, "block-count", "llama.block_count");
    let path = write(&g, "block-count");
    let out = Command::cargo_bin("tokfire")
        .unwrap()
        .args(["inspect", path.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text::has(&stdout, "problems") && text::has(&stdout, "llama.block_count"),
        "{stdout}"
    );
}

#[test]
fn token_embd_dims_2_32_by_2_32() {
    let mut g = base();
    g.tensor("token_embd.weight").dims = vec![1 << 32, 1 << 32];
    refused(&g, "embd-2-32", "token_embd.weight dimensions");
    let r = inspect_gguf(&write(&g, "embd-2-32")).unwrap();
    assert!(
        r.parameters < 1_000_000,
        "parameters {} counted from wrapped dims",
        r.parameters
    );
}

#[test]
fn no_vocab_size_and_zero_dimension_token_embd() {
    let mut g = base();
    assert!(g.kv("llama.vocab_size").is_none());
    for (dims, name) in [(vec![], "no-dims"), (vec![32, 0], "zero-rows")] {
        g.tensor("token_embd.weight").dims = dims;
        refused(&g, &format!("embd-{name}"), "token_embd.weight");
    }
}

#[test]
fn rms_epsilon_nan_or_negative() {
    for x in [f32::NAN, -1e-5, 0.0, f32::INFINITY] {
        let mut g = base();
        g.set("llama.attention.layer_norm_rms_epsilon", Val::f32(x));
        refused(&g, &format!("eps-{x}"), "layer_norm_rms_epsilon");
    }
}

#[test]
fn rope_freq_base_zero_nan_or_negative() {
    for x in [0.0, f64::NAN, -10_000.0] {
        let mut g = base();
        g.set("llama.rope.freq_base", Val::f64(x));
        refused(&g, &format!("rope-{x}"), "rope.freq_base");
    }
}

#[test]
fn matrix_retyped_so_its_size_no_longer_matches() {
    let mut g = base();
    g.tensor("blk.0.attn_q.weight").dtype = 2; // Q8_0 → Q4_0
    refused(&g, "retyped-middle", "offset");
    let mut g = base();
    let last = g.tensors.last_mut().unwrap();
    last.dtype = 1; // f32 → f16: half the bytes, the rest of the file left over
    refused(&g, "retyped-last", "tensor data");
}

#[test]
fn bos_token_id_2_40() {
    let mut g = base();
    g.set("tokenizer.ggml.bos_token_id", Val::u64(1 << 40));
    refused(&g, "bos-2-40", "bos_token_id");
}

#[test]
fn duplicated_missing_and_extra_tensors_and_keys() {
    let mut g = base();
    let t = g.tensors[3].clone();
    g.tensors.push(t);
    refused(&g, "dup-tensor", "declared twice");
    let mut g = base();
    g.tensors.retain(|t| t.name != "blk.1.ffn_down.weight");
    refused(&g, "missing-tensor", "blk.1.ffn_down.weight");
    let mut g = base();
    let mut t = g.tensor("blk.1.attn_q.weight").clone();
    t.name = "blk.7.attn_q.weight".into();
    g.tensors.insert(0, t);
    refused(&g, "extra-layer", "llama.block_count");
    let mut g = base();
    let kv = g.kvs[2].clone();
    g.kvs.push(kv);
    refused(&g, "dup-key", "present twice");
}

#[test]
fn counts_and_lengths_beyond_the_file() {
    let (bytes, _) = base().write();
    for (at, x) in [
        (8usize, u64::MAX),
        (8, 1 << 32),
        (16, (1 << 31) - 1),
        (16, 1 << 63),
    ] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&x.to_le_bytes());
        let path = work_dir("cases").join(format!("count-{at}-{x}.gguf"));
        std::fs::write(&path, &b).unwrap();
        let err = tokfire::model::load(&config(&path, false), tokfire::model::Kernels::Ours)
            .err()
            .expect("refused");
        assert!(matches!(err, ModelError::BadGguf { .. }), "{err}");
        assert!(err.to_string().contains("bytes"), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn fifo_and_devices_are_refused_before_open_blocks() {
    let fifo = work_dir("cases").join("model.fifo");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo failed"
    );
    for (path, kind) in [(fifo.to_str().unwrap(), "FIFO"), ("/dev/zero", "device")] {
        for verb in [
            &["inspect", path][..],
            &["generate", "--model", path, "--prompt", "hi"],
        ] {
            let out = Command::cargo_bin("tokfire")
                .unwrap()
                .args(verb)
                .timeout(Duration::from_secs(30))
                .assert()
                .failure()
                .code(1);
            let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
            assert!(
                text::has(&err, kind) && text::has(&err, "not a regular file"),
                "{err}"
            );
        }
    }
}

#[test]
fn errors_carry_no_backtrace() {
    let inner = candle_core::Error::Msg("boom".into());
    let e = candle_core::Error::WithBacktrace {
        inner: Box::new(inner),
        backtrace: Box::new(std::backtrace::Backtrace::force_capture()),
    };
    let e = ModelError::candle("reading tensor x")(e);
    assert_eq!(e.to_string(), "reading tensor x: boom");

    let mut g = base();
    g.set("general.alignment", Val::u32(0));
    let path = write(&g, "backtrace");
    let out = Command::cargo_bin("tokfire")
        .unwrap()
        .args([
            "generate",
            "--model",
            path.to_str().unwrap(),
            "--prompt",
            "hi",
        ])
        .env("RUST_BACKTRACE", "1")
        .timeout(Duration::from_secs(60))
        .assert()
        .failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    // One message, wrapped to 100 columns under `Error: `: no backtrace lines after it.
    assert!(
        err.lines().skip(1).all(|l| l.starts_with("       ")) && !err.contains("backtrace:"),
        "{err}"
    );
    assert!(
        err.starts_with("Error: ") && err.contains("general.alignment"),
        "{err}"
    );
}

#[test]
fn what_the_family_does_not_read_is_refused_by_name() {
    // A tensor the family does not read: a Llama-3 scaling tensor on qwen2 would be ignored.
    let mut g = base();
    let mut t = g.tensor("blk.0.attn_norm.weight").clone();
    t.name = "blk.0.attn_q_norm.weight".into();
    g.tensors.push(t);
    let msg = refused(&g, "unused-tensor", "blk.0.attn_q_norm.weight");
    assert!(msg.contains("q/k RMSNorm"), "{msg}");
    // Keys that change the computation: a sliding window, LongRoPE scaling on llama, a cos/sin
    // scale without YaRN, partial rotary.
    for (key, val, needle) in [
        (
            "llama.attention.sliding_window",
            Val::u32(4),
            "llama.attention.sliding_window",
        ),
        (
            "llama.rope.scaling.type",
            Val::str("longrope"),
            "none, linear or yarn",
        ),
        (
            "llama.rope.scaling.attn_factor",
            Val::f64(2.0),
            "rope.scaling.attn_factor",
        ),
        ("llama.rope.dimension_count", Val::u32(4), "partial rotary"),
    ] {
        let mut g = base();
        g.set(key, val);
        refused(&g, &format!("key-{key}"), needle);
    }
    // A key llama.cpp requires is not guessed either.
    let mut g = base();
    g.remove("llama.attention.layer_norm_rms_epsilon");
    refused(&g, "no-rms-eps", "layer_norm_rms_epsilon");
    // A pre-tokenizer llama.cpp splits differently: refused by its value, not guessed.
    let mut g = base();
    g.set("tokenizer.ggml.pre", Val::str("made-up-pre"));
    let path = write(&g, "unknown-pre");
    match check(&path, false) {
        Ok(Outcome::Refused(msg)) => assert!(msg.contains("made-up-pre"), "{msg}"),
        other => panic!("unknown pre-tokenizer: expected a refusal, got {other:?}"),
    }
    assert!(!inspect_gguf(&path).unwrap().problems.is_empty());
}
