//! A GPU's own figures, from its driver: board energy and the device memory this process holds,
//! read through NVML (`nvml-wrapper` loads `libnvidia-ml.so.1` at run time, so a build with the
//! `cuda` feature starts where no driver is installed). Without the feature, without the
//! library or without a counter on the board, each figure is absent with the reason: never
//! estimated.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the peak-memory poller asks the driver.
const POLL: Duration = Duration::from_millis(10);

/// One GPU's driver counters.
#[derive(Clone)]
pub(crate) struct Gpu {
    #[cfg(feature = "cuda")]
    nvml: Arc<nvml_wrapper::Nvml>,
    index: u32,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gpu({})", self.index)
    }
}

impl Gpu {
    /// GPU `index` through NVML, or why its figures cannot be read.
    #[cfg(feature = "cuda")]
    pub(crate) fn open(index: usize) -> Result<Self, String> {
        let index = u32::try_from(index).map_err(|_| format!("no GPU {index}"))?;
        let nvml = nvml_wrapper::Nvml::init()
            .map_err(|e| format!("NVML (libnvidia-ml.so.1) not usable: {e}"))?;
        nvml.device_by_index(index)
            .map_err(|e| format!("NVML has no GPU {index}: {e}"))?;
        Ok(Self {
            nvml: Arc::new(nvml),
            index,
        })
    }

    /// Without the `cuda` feature there is no GPU to read.
    #[cfg(not(feature = "cuda"))]
    pub(crate) fn open(index: usize) -> Result<Self, String> {
        let _ = index;
        Err("this build has no CUDA support (cargo build --features cuda)".into())
    }

    /// The GPU's index (as `--device cuda:N` names it).
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The board's energy counter, millijoules since the driver loaded (Volta and later).
    pub(crate) fn energy_mj(&self) -> Result<u64, String> {
        #[cfg(feature = "cuda")]
        {
            self.nvml
                .device_by_index(self.index)
                .and_then(|d| d.total_energy_consumption())
                .map_err(|e| format!("NVML energy counter of GPU {}: {e}", self.index))
        }
        #[cfg(not(feature = "cuda"))]
        Err("this build has no CUDA support".into())
    }

    /// Device memory this process holds on the GPU now, bytes (none where the driver does not
    /// say: not listed yet, or the value is unavailable).
    pub(crate) fn process_memory_bytes(&self) -> Option<u64> {
        #[cfg(feature = "cuda")]
        {
            use nvml_wrapper::enums::device::UsedGpuMemory;
            let me = std::process::id();
            let d = self.nvml.device_by_index(self.index).ok()?;
            let procs = d.running_compute_processes().ok()?;
            procs
                .iter()
                .find(|p| p.pid == me)
                .and_then(|p| match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                })
        }
        #[cfg(not(feature = "cuda"))]
        None
    }

    /// Starts polling this process's device memory every [`POLL`]; `stop` gives the largest
    /// value seen.
    pub(crate) fn watch_peak(&self) -> PeakWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (gpu, flag) = (self.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("tokfire-gpu-memory".into())
            .spawn(move || {
                let mut peak = gpu.process_memory_bytes();
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(POLL);
                    peak = peak.max(gpu.process_memory_bytes());
                }
                peak.max(gpu.process_memory_bytes())
            })
            .ok();
        PeakWatch { stop, handle }
    }
}

/// A running device-memory poller.
pub(crate) struct PeakWatch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Option<u64>>>,
}

impl PeakWatch {
    /// The largest device memory the process held while watched, bytes.
    pub(crate) fn stop(self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.and_then(|h| h.join().ok().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_gpu_the_figures_are_absent_with_a_reason() {
        // On a machine with an NVIDIA driver and the cuda feature this opens; elsewhere it
        // must say why, and nothing may be invented.
        match Gpu::open(0) {
            Ok(g) => {
                let w = g.watch_peak();
                assert!(w.stop().is_none_or(|b| b > 0));
            }
            Err(why) => assert!(why.contains("CUDA") || why.contains("NVML"), "{why}"),
        }
    }
}
