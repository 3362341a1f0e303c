//! Unit tests of `crate::model::manifest`.

use super::*;

#[test]
fn embedded_manifest_parses_and_has_its_default() {
    let m = manifest().unwrap();
    let d = m.get(&m.default).expect("default model is listed");
    assert_eq!(d.architecture, "llama");
    assert_eq!(d.sha256.len(), 64);
    assert!(m.known().contains("gemma3-270m-q4_k_m"));
}
