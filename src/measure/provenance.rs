//! Where a result came from: the build (version, git commit, features, rustc, target CPU
//! features) and the machine (CPU model and flags, cores, threads used, memory, OS, device).

use serde::{Deserialize, Serialize};

use super::memory;

/// This binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Build {
    pub version: String,
    /// Git commit the binary was built from ("unknown" outside a checkout).
    pub git_commit: String,
    /// Cargo features compiled in (cuda, metal).
    pub features: Vec<String>,
    pub rustc: String,
    /// Whether it was built with optimizations.
    pub optimized: bool,
    /// CPU features the compiler could assume (target-cpu / target-feature).
    pub target_features: Vec<String>,
}

/// The machine the run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    /// The CPU flags that matter to the kernels (SIMD levels).
    pub cpu_flags: Vec<String>,
    /// Logical CPUs available to this process.
    pub logical_cpus: usize,
    /// Total physical memory, bytes (none where unreadable).
    pub memory_bytes: Option<u64>,
    /// OS name and version, kernel release.
    pub os: String,
    pub arch: String,
}

impl Build {
    pub(crate) fn current() -> Self {
        let mut features = Vec::new();
        if cfg!(feature = "cuda") {
            features.push("cuda".to_string());
        }
        if cfg!(feature = "metal") {
            features.push("metal".to_string());
        }
        let mut target_features = Vec::new();
        for (on, name) in [
            (cfg!(target_feature = "avx2"), "avx2"),
            (cfg!(target_feature = "fma"), "fma"),
            (cfg!(target_feature = "avx512f"), "avx512f"),
            (cfg!(target_feature = "neon"), "neon"),
        ] {
            if on {
                target_features.push(name.to_string());
            }
        }
        Self {
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("TOKFIRE_GIT_COMMIT").into(),
            features,
            rustc: env!("TOKFIRE_RUSTC").into(),
            optimized: !cfg!(debug_assertions),
            target_features,
        }
    }
}

/// CPU flags worth recording, as `/proc/cpuinfo` names them.
const FLAGS: &[&str] = &[
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_int8",
    "asimd",
    "asimddp",
    "sve",
];

impl Machine {
    pub(crate) fn current() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let line = |key: &str| {
            cpuinfo
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let cpu_model = line("model name")
            .or_else(|| line("Model"))
            .unwrap_or_else(|| "unknown".into());
        let flags = line("flags")
            .or_else(|| line("Features"))
            .unwrap_or_default();
        let cpu_flags = FLAGS
            .iter()
            .filter(|f| flags.split_whitespace().any(|x| x == **f))
            .map(|f| f.to_string())
            .collect();
        Self {
            cpu_model,
            cpu_flags,
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: memory::total_memory_bytes(),
            os: os_name(),
            arch: std::env::consts::ARCH.into(),
        }
    }
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        Ok(k) => format!("{pretty}, kernel {}", k.trim()),
        Err(_) => pretty,
    }
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
