//! `hf:REPO[:FILE]` models read from a local Hugging Face hub cache with the `hf-hub` crate
//! (`models--Org--Name/{refs,snapshots,blobs}`). This build reads the cache only; download
//! with `huggingface-cli download REPO [FILE]` where the hub is reachable.

use std::path::{Path, PathBuf};

use hf_hub::{Cache, Repo, RepoType};

use crate::error::ModelError;

/// A parsed `hf:` model reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HubRef {
    pub repo: String,
    pub file: Option<String>,
}

impl HubRef {
    /// Parses the part after `hf:`: `Org/Name` or `Org/Name:file.gguf`.
    pub(crate) fn parse(spec: &str) -> Option<Self> {
        let (repo, file) = match spec.split_once(':') {
            Some((r, f)) => (r, Some(f.to_string())),
            None => (spec, None),
        };
        (!repo.is_empty() && file.as_deref() != Some("")).then(|| Self {
            repo: repo.into(),
            file,
        })
    }
}

/// The local path of `r` in the hub cache at `cache_dir`: the file itself, or for a repo without
/// a file, its snapshot directory (which must hold `config.json`).
pub(crate) fn locate(r: &HubRef, cache_dir: &Path) -> Result<PathBuf, ModelError> {
    let cache = Cache::new(cache_dir.to_path_buf());
    let repo = cache.repo(Repo::new(r.repo.clone(), RepoType::Model));
    let wanted = r.file.as_deref().unwrap_or("config.json");
    match repo.get(wanted) {
        Some(path) if r.file.is_some() => Ok(path),
        Some(path) => Ok(path.parent().expect("a cached file has a snapshot folder; this is a bug").to_path_buf()),
        None => Err(ModelError::Invalid {
            path: cache_dir.to_path_buf(),
            detail: format!(
                "hf:{}: {wanted} is not in this hub cache (this build reads the cache offline); run `huggingface-cli download {} {wanted}` or set HF_HOME",
                r.repo, r.repo
            ),
        }),
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
