//! Energy from the Linux powercap RAPL counter (`/sys/class/powercap/intel-rapl:0/energy_uj`,
//! package 0), when readable. Without a readable counter the meter is absent and reports say
//! "n/a" with the reason it gives: no value is ever estimated.

use std::fs;
use std::path::PathBuf;

const RAPL: &str = "/sys/class/powercap/intel-rapl:0";

/// A readable energy counter.
#[derive(Debug, Clone)]
pub(crate) struct EnergyMeter {
    counter: PathBuf,
    /// The counter wraps at this many µJ.
    range_uj: u64,
}

impl EnergyMeter {
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
        Ok(Self { counter, range_uj })
    }

    /// The counter now, µJ.
    pub(crate) fn read_uj(&self) -> Option<u64> {
        read_u64(&self.counter)
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
