//! Unit tests of `crate::model::hub`.

use super::*;

#[test]
fn parses_repo_and_file() {
    assert_eq!(
        HubRef::parse("Org/M:f.gguf"),
        Some(HubRef {
            repo: "Org/M".into(),
            file: Some("f.gguf".into())
        })
    );
    assert_eq!(
        HubRef::parse("Org/M"),
        Some(HubRef {
            repo: "Org/M".into(),
            file: None
        })
    );
    assert_eq!(HubRef::parse(""), None);
    assert_eq!(HubRef::parse("Org/M:"), None);
}

#[test]
fn finds_a_file_in_a_hand_made_cache_and_misses_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("models--Org--M");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots/abc123")).unwrap();
    std::fs::write(repo.join("refs/main"), "abc123").unwrap();
    std::fs::write(repo.join("snapshots/abc123/m.gguf"), b"GGUF").unwrap();
    std::fs::write(repo.join("snapshots/abc123/config.json"), b"{}").unwrap();
    let file = locate(&HubRef::parse("Org/M:m.gguf").unwrap(), dir.path()).unwrap();
    assert_eq!(file, repo.join("snapshots/abc123/m.gguf"));
    let snap = locate(&HubRef::parse("Org/M").unwrap(), dir.path()).unwrap();
    assert_eq!(snap, repo.join("snapshots/abc123"));
    let err = locate(&HubRef::parse("Org/M:missing.gguf").unwrap(), dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("huggingface-cli download Org/M missing.gguf"),
        "{err}"
    );
}
