//! Mapped loading against copied loading: the same greedy tokens and the same logits, bit for
//! bit, on real weights (the default model and Gemma 3) and on synthetic files; the load split
//! says what was mapped and what was copied (and repacked); truncated files are refused in both
//! modes.

use crate::common;

use std::path::{Path, PathBuf};

use candle_core::quantized::GgmlDType;
use common::*;
use tokfire::config::{LoadMode, Repack, WeightDType};
use tokfire::model::{self, Loaded};

fn load_mode(path: &Path, dtype: WeightDType, mode: LoadMode, repack: Repack) -> Loaded {
    let mut cfg = model_config(path, dtype);
    cfg.load = mode;
    cfg.repack = repack;
    model::load(&cfg, model::Kernels::Ours).unwrap()
}

/// Greedy `n` tokens after `prompt` with both modes; asserts tokens and logits are equal and
/// returns the two loads.
fn same_output(path: &Path, prompt: &str, n: usize, repack: Repack) -> (Loaded, Loaded) {
    let mapped = load_mode(path, WeightDType::Q, LoadMode::Mmap, repack);
    let copied = load_mode(path, WeightDType::Q, LoadMode::Copy, repack);
    let ids = mapped.tokenizer.encode(prompt).unwrap();
    let a = solo(&mapped.model, &ids, n);
    let b = solo(&copied.model, &ids, n);
    assert_eq!(
        a.tokens, b.tokens,
        "greedy tokens differ between mmap and copy"
    );
    assert_eq!(a.logits, b.logits, "logits differ between mmap and copy");
    assert_eq!(a.tokens.len(), n);
    (mapped, copied)
}

fn check_split(mapped: &Loaded, copied: &Loaded) {
    let m = mapped.split.as_ref().expect("a GGUF load has a split");
    let c = copied.split.as_ref().expect("a GGUF load has a split");
    assert_eq!((m.mode, c.mode), (LoadMode::Mmap, LoadMode::Copy));
    assert!(m.mapped_bytes > 0, "{m:?}");
    assert_eq!(c.mapped_bytes, 0, "{c:?}");
    assert_eq!(c.first_touch_s, 0.0);
    // Each tensor read is either mapped or copied; the header is neither.
    assert_eq!(m.mapped_bytes + m.copied_bytes, c.copied_bytes);
    assert!(m.mapped_bytes <= mapped.file_bytes);
    // The tied embedding is the head's own blocks: nothing large is copied beside the mapping.
    assert!(m.copied_bytes * 20 < m.mapped_bytes, "{m:?}");
    for s in [m, c] {
        for t in [s.header_s, s.tokenizer_s, s.weights_s, s.first_touch_s] {
            assert!(t >= 0.0 && t.is_finite(), "{s:?}");
        }
    }
}

#[test]
fn default_model_mapped_equals_copied() {
    let (m, c) = same_output(
        &default_model_path(),
        "The capital of France is",
        24,
        Repack::Off,
    );
    check_split(&m, &c);
}

#[test]
fn default_model_repacked_mapped_equals_copied_and_owns_its_tiles() {
    let path = default_model_path();
    let (m, c) = same_output(&path, "The capital of France is", 8, Repack::On);
    let (ms, cs) = (m.split.as_ref().unwrap(), c.split.as_ref().unwrap());
    // Every matrix of the default model has whole tiles: none borrows the mapping.
    assert_eq!(ms.mapped_bytes, 0, "{ms:?}");
    assert!(ms.repacked_bytes > 0 && ms.repacked_bytes == cs.repacked_bytes);
    assert_eq!(ms.copied_bytes + ms.repacked_bytes, cs.copied_bytes);
    for s in [ms, cs] {
        assert!(s.repack_s > 0.0 && s.repack_s <= s.weights_s, "{s:?}");
    }
}

#[test]
fn gemma_mapped_equals_copied() {
    let path = {
        let m = tokfire::model::manifest::manifest().unwrap();
        m.get("gemma3-270m-q4_k_m")
            .unwrap()
            .ensure(&cache_dir())
            .expect("fetching gemma3-270m-q4_k_m (models/fetch) failed")
    };
    let (m, c) = same_output(&path, "The capital of France is", 16, Repack::Off);
    check_split(&m, &c);
}

#[test]
fn synthetic_models_mapped_equal_copied() {
    let dir = tempfile::tempdir().unwrap();
    for (quant, tied) in [
        (GgmlDType::Q8_0, false),
        (GgmlDType::Q4_0, true),
        (GgmlDType::F32, false),
    ] {
        let path = synthetic_gguf(dir.path(), quant, tied);
        let mapped = load_mode(&path, WeightDType::Q, LoadMode::Mmap, Repack::Off);
        let copied = load_mode(&path, WeightDType::Q, LoadMode::Copy, Repack::Off);
        let prompt = [1u32, 5, 9, 2];
        let a = solo(&mapped.model, &prompt, 8);
        let b = solo(&copied.model, &prompt, 8);
        assert_eq!(a.tokens, b.tokens, "{quant:?} tied={tied}");
        assert_eq!(a.logits, b.logits, "{quant:?} tied={tied}");
        let split = mapped.split.unwrap();
        // f32 matrices are not our kernels' blocks: nothing is mapped, all is copied.
        assert_eq!(
            split.mapped_bytes == 0,
            quant == GgmlDType::F32,
            "{split:?}"
        );
    }
}

#[test]
fn dense_dtype_copies_even_when_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = synthetic_gguf(dir.path(), GgmlDType::Q8_0, false);
    let l = load_mode(&path, WeightDType::F32, LoadMode::Mmap, Repack::Auto);
    let split = l.split.unwrap();
    assert_eq!(split.mapped_bytes, 0, "{split:?}");
    assert!(split.copied_bytes > 0);
}

fn truncated(dir: &Path, cut: u64) -> PathBuf {
    let src = synthetic_gguf(dir, GgmlDType::Q8_0, false);
    let bytes = std::fs::read(&src).unwrap();
    let path = dir.join(format!("truncated-{cut}.gguf"));
    std::fs::write(&path, &bytes[..bytes.len() - cut as usize]).unwrap();
    path
}

#[test]
fn truncated_files_are_refused_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    for cut in [1u64, 100, 4000] {
        let path = truncated(dir.path(), cut);
        for mode in [LoadMode::Mmap, LoadMode::Copy] {
            let mut cfg = model_config(&path, WeightDType::Q);
            cfg.load = mode;
            let err = match model::load(&cfg, model::Kernels::Ours) {
                Ok(_) => panic!("a file cut by {cut} bytes loaded with {mode}"),
                Err(e) => e.to_string(),
            };
            assert!(
                err.contains(&path.display().to_string()),
                "{mode}, cut {cut}: {err}"
            );
        }
    }
}
