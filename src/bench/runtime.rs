//! The bench's runtime setup: the [`Runtime`] (thread pool and kernel level) a configuration
//! asks for, built where a command starts and passed to what runs the model, and how the record
//! describes it. Nothing here is process-wide: two runtimes (the arms of an `ab`) can live side
//! by side.

use super::kernel_choice;
use crate::config::{DeviceSpec, RuntimeConfig, RuntimeInfo};
use crate::error::ConfigError;
use crate::kernels::Runtime;

/// Builds the runtime `cfg` asks for: `--threads` workers (default: candle's count, the
/// physical cores it may use) at the `--kernels` level (default: the level measured fastest
/// on this CPU, [`kernel_choice`]).
pub(crate) fn start(cfg: &RuntimeConfig) -> Result<Runtime, ConfigError> {
    let level = cfg.kernels.unwrap_or_else(kernel_choice::auto_level);
    Runtime::new(threads(cfg), level).map_err(|e| match cfg.kernels {
        Some(l) if !l.available() => ConfigError::flag("--kernels", l.to_string(), e),
        _ => ConfigError::flag("--threads", threads(cfg).to_string(), e),
    })
}

/// What the record says the engine runs with under `cfg` on `device` (the same as
/// [`start`] builds, without building it: a `cold` parent describes what its children run).
pub(crate) fn info(cfg: &RuntimeConfig, device: DeviceSpec) -> RuntimeInfo {
    let (kernels, level_by) = match (device, cfg.candle, cfg.kernels) {
        (DeviceSpec::Cpu, false, Some(l)) => {
            (format!("tokfire kernels {l}"), "set by --kernels".into())
        }
        (DeviceSpec::Cpu, false, None) => {
            let (choice, _) = kernel_choice::current();
            let kernels = format!("tokfire kernels {}", choice.chosen);
            (kernels, choice.line())
        }
        _ => ("candle kernels".into(), String::new()),
    };
    RuntimeInfo {
        device: device.to_string(),
        kernels,
        threads: threads(cfg),
        level_by,
    }
}

fn threads(cfg: &RuntimeConfig) -> usize {
    cfg.threads
        .unwrap_or_else(candle_core::utils::get_num_threads)
        .max(1)
}
