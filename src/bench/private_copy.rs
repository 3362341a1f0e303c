//! `cold --private-copy`: the model's files copied into a private folder beside the results file
//! before the first start, so no other process maps them and they live on the results' file
//! system rather than a RAM-backed one — a model another program holds open can then be evicted
//! and cold-started. The folder is removed when the copy is dropped (also on an error).

use std::path::{Path, PathBuf};

use super::error::BenchError;
use crate::model::ModelPath;

/// A private copy of a model; removed on drop.
pub struct PrivateCopy {
    dir: PathBuf,
    /// The model as the copy (same kind, new path).
    pub model: ModelPath,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> BenchError {
    crate::error::ConfigError::flag(
        "--private-copy",
        path.display().to_string(),
        format!("{what}: {e}; free space beside the results file, or leave the flag out"),
    )
    .into()
}

impl PrivateCopy {
    /// Copies `model` (a GGUF file, or every regular file of a safetensors folder) into a new
    /// folder beside `results`.
    pub fn make(model: &ModelPath, results: &Path) -> Result<Self, BenchError> {
        let parent = results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = parent.join(format!(".tokfire-private-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, "cannot create the folder", e))?;
        // Built first, so the folder goes away if a copy below fails.
        let mut copy = Self {
            dir: dir.clone(),
            model: model.clone(),
        };
        let files: Vec<PathBuf> = match model {
            ModelPath::Gguf(p) => vec![p.clone()],
            ModelPath::Safetensors(d) => std::fs::read_dir(d)
                .map_err(|e| io(d, "cannot list the model folder", e))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect(),
        };
        for f in &files {
            let name = f.file_name().unwrap_or(f.as_os_str());
            std::fs::copy(f, dir.join(name)).map_err(|e| io(f, "cannot copy", e))?;
        }
        copy.model = match model {
            ModelPath::Gguf(p) => ModelPath::Gguf(dir.join(p.file_name().unwrap_or(p.as_os_str()))),
            ModelPath::Safetensors(_) => ModelPath::Safetensors(dir.clone()),
        };
        Ok(copy)
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
