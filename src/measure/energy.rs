//! Energy of the device that runs the model: on the CPU the Linux powercap RAPL counter
//! (`/sys/class/powercap/intel-rapl:0/energy_uj`, package 0), on a GPU the board's counter from
//! its driver (NVML, [`super::gpu`]), when readable. Without a readable counter the meter is
//! absent and reports say "n/a" with the reason it gives: no value is ever estimated.

use std::fs;
use std::path::PathBuf;

use crate::config::DeviceSpec;

const RAPL: &str = "/sys/class/powercap/intel-rapl:0";

/// A readable energy counter.
#[derive(Debug, Clone)]
pub(crate) struct EnergyMeter {
    counter: Counter,
    /// The counter wraps at this many µJ.
    range_uj: u64,
}

#[derive(Debug, Clone)]
enum Counter {
    Rapl(PathBuf),
    Gpu(super::gpu::Gpu),
}

impl EnergyMeter {
    /// The counter of the device the model runs on, or why there is none.
    pub(crate) fn for_device(device: DeviceSpec) -> Result<Self, String> {
        match device {
            DeviceSpec::Cpu => Self::open(),
            DeviceSpec::Cuda(n) => {
                let gpu = super::gpu::Gpu::open(n)?;
                gpu.energy_mj()?;
                Ok(Self {
                    counter: Counter::Gpu(gpu),
                    range_uj: u64::MAX,
                })
            }
            DeviceSpec::Metal => Err("no energy counter is read on Metal".into()),
        }
    }

    /// Where the joules come from, for the report.
    pub(crate) fn source(&self) -> String {
        match &self.counter {
            Counter::Rapl(_) => "CPU package 0, RAPL".into(),
            Counter::Gpu(g) => format!("GPU {} board, NVML", g.index()),
        }
    }

    /// Opens the RAPL package counter, or says why there is none.
    pub(crate) fn open() -> Result<Self, String> {
        let dir = PathBuf::from(RAPL);
        let counter = dir.join("energy_uj");
        match fs::read_to_string(&counter) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("no RAPL energy counter ({RAPL} absent)"))
            }
            Err(e) => return Err(format!("RAPL counter not readable: {e}")),
        }
        let range_uj = read_u64(&dir.join("max_energy_range_uj")).unwrap_or(u64::MAX);
        Ok(Self {
            counter: Counter::Rapl(counter),
            range_uj,
        })
    }

    /// The counter now, µJ.
    pub(crate) fn read_uj(&self) -> Option<u64> {
        match &self.counter {
            Counter::Rapl(path) => read_u64(path),
            Counter::Gpu(g) => g.energy_mj().ok()?.checked_mul(1000),
        }
    }

    /// Joules between two readings, allowing one wrap of the counter.
    pub(crate) fn joules(&self, before_uj: u64, after_uj: u64) -> f64 {
        let d = if after_uj >= before_uj {
            after_uj - before_uj
        } else {
            self.range_uj - before_uj + after_uj
        };
        d as f64 / 1e6
    }
}

fn read_u64(p: &std::path::Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[cfg(test)]
#[path = "energy_tests.rs"]
mod tests;
