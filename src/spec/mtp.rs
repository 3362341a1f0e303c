//! `--spec mtp`: drafting with the checkpoint's own multi-token-prediction layers (the `nextn`
//! layers of DeepSeek-V3 and GLM-4.5 style checkpoints), counted from the GGUF metadata key
//! `ARCH.nextn_predict_layers`. A model without them is refused with an error that names the
//! missing key and the families that carry such layers. This build reads the count only: the
//! nextn forward itself is not implemented, and a model that has the layers is refused saying so.

use std::path::Path;

use crate::error::{EngineError, ModelError};
use crate::model::gguf::Gguf;
use crate::model::ModelPath;

/// Model families whose checkpoints carry multi-token-prediction layers.
pub const FAMILIES: &str = "DeepSeek-V3, GLM-4.5, MiMo and Qwen3-Next";

/// The metadata key of the nextn layer count for architecture `arch`.
pub fn key(arch: &str) -> String {
    format!("{arch}.nextn_predict_layers")
}

/// The number of nextn layers a GGUF file declares (0 when the key is absent).
pub fn nextn_layers(path: &Path) -> Result<(String, u64), ModelError> {
    let g = Gguf::open(path)?;
    let arch = g.architecture()?;
    let n = g
        .get(&key(&arch))
        .and_then(|v| v.to_u32().map(u64::from).or_else(|_| v.to_u64()).ok())
        .unwrap_or(0);
    Ok((arch, n))
}

/// Checks that the target `name` at `path` has nextn layers; the error says what is missing.
pub fn check(name: &str, path: &ModelPath) -> Result<(), EngineError> {
    let missing = |what: String| {
        EngineError::Invalid(format!(
            "--spec mtp: --model {name} has no multi-token-prediction layers ({what}); checkpoints of {FAMILIES} carry them; use --spec layerskip:L, --spec lookup or --spec draft:MODEL"
        ))
    };
    match path {
        ModelPath::Safetensors(dir) => Err(missing(format!(
            "{} is a safetensors folder; nextn layers are read from GGUF metadata",
            dir.display()
        ))),
        ModelPath::Gguf(p) => {
            let (arch, n) = nextn_layers(p).map_err(|e| EngineError::Invalid(e.to_string()))?;
            if n == 0 {
                return Err(missing(format!("GGUF key {} absent or 0", key(&arch))));
            }
            Err(not_available())
        }
    }
}

/// The refusal for a model that has nextn layers: this build cannot run them.
pub fn not_available() -> EngineError {
    EngineError::Invalid(
        "--spec mtp: drafting with nextn layers is not available in this build; use --spec layerskip:L, --spec lookup or --spec draft:MODEL".into(),
    )
}
