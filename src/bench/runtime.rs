//! The bench's runtime setup: the [`Runtime`] (thread pool and kernel level) a configuration
//! asks for, built where a command starts and passed to what runs the model, and how the record
//! describes it. Nothing here is process-wide: two runtimes (the arms of an `ab`) can live side
//! by side.

use crate::config::{DeviceSpec, RuntimeConfig, RuntimeInfo};
use crate::error::ConfigError;
use crate::kernels::{self, Runtime};

/// Builds the runtime `cfg` asks for: `--threads` workers (default: candle's count, the
/// physical cores it may use) at the `--kernels` level (default: the best this CPU has).
pub(crate) fn start(cfg: &RuntimeConfig) -> Result<Runtime, ConfigError> {
    let level = cfg.kernels.unwrap_or_else(kernels::detect);
    Runtime::new(threads(cfg), level).map_err(|e| match cfg.kernels {
        Some(l) if !l.available() => ConfigError::flag("--kernels", l.to_string(), e),
        _ => ConfigError::flag("--threads", threads(cfg).to_string(), e),
    })
}

/// What the record says the engine runs with under `cfg` on `device` (the same as
/// [`start`] builds, without building it: a `cold` parent describes what its children run).
pub(crate) fn info(cfg: &RuntimeConfig, device: DeviceSpec) -> RuntimeInfo {
    let kernels = match device {
        DeviceSpec::Cpu if !cfg.candle => format!(
            "tokfire kernels {}",
            cfg.kernels.unwrap_or_else(kernels::detect)
        ),
        _ => "candle kernels".into(),
    };
    RuntimeInfo {
        device: device.to_string(),
        kernels,
        threads: threads(cfg),
    }
}

fn threads(cfg: &RuntimeConfig) -> usize {
    cfg.threads
        .unwrap_or_else(candle_core::utils::get_num_threads)
        .max(1)
}
