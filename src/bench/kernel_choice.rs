//! The kernel level `--kernels auto` runs on this machine: [`crate::kernels::probe`]'s
//! measurement, made the first time a process needs it and kept per CPU model and tokfire
//! version (`kernel-choice.json` in the model cache directory; another CPU, version or probe
//! set measures again), shown by `tokfire kernels` and recorded with every run
//! (`runtime.level_by`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::kernels::probe::{self, Timing, PROBE_VERSION};
use crate::kernels::{self, Level};

/// The saved measurement and the level it chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub tokfire_kernel_choice: u32,
    pub tokfire_version: String,
    pub cpu_model: String,
    pub measured_utc: String,
    /// The widest level CPUID reports (what `auto` ran before it measured).
    pub widest: Level,
    pub chosen: Level,
    /// The probe matmuls, in the order of each level's times.
    pub probes: Vec<String>,
    pub levels: Vec<LevelTime>,
}

/// One level's probe times, microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelTime {
    pub level: Level,
    pub total_us: f64,
    pub probes_us: Vec<f64>,
}

/// Where the choice a process uses came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Read from this file, measured by an earlier process.
    Cached(PathBuf),
    /// Measured now and saved to this file.
    Measured(PathBuf),
    /// Measured now; saving it failed (the reason), so the next process measures again.
    NotSaved(String),
}

/// The file the choice is kept in.
pub fn path() -> PathBuf {
    crate::config::kernel_choice_path()
}

/// The choice this process runs `--kernels auto` at: read or measured once.
pub fn current() -> &'static (Choice, Source) {
    static CURRENT: OnceLock<(Choice, Source)> = OnceLock::new();
    CURRENT.get_or_init(|| load_or_measure(&path(), false))
}

/// The level `--kernels auto` runs at.
pub fn auto_level() -> Level {
    current().0.chosen
}

/// The saved choice at `path` when it holds for this CPU, version and probe set, else a new
/// measurement (saved there); `fresh` measures whatever is saved.
pub fn load_or_measure(path: &Path, fresh: bool) -> (Choice, Source) {
    if !fresh {
        if let Some(c) = load(path) {
            return (c, Source::Cached(path.to_path_buf()));
        }
    }
    let c = measure();
    let source = match save(path, &c) {
        Ok(()) => Source::Measured(path.to_path_buf()),
        Err(e) => Source::NotSaved(format!("{}: {e}", path.display())),
    };
    (c, source)
}

/// The choice at `path`, if it parses and was measured on this CPU by this version with this
/// probe set (anything else, a hostile file included, is measured again).
fn load(path: &Path) -> Option<Choice> {
    let text = crate::files::read_text(path, crate::files::MAX_INPUT_BYTES).ok()?;
    let c: Choice = serde_json::from_str(&text).ok()?;
    let mine = c.tokfire_kernel_choice == PROBE_VERSION
        && c.tokfire_version == env!("CARGO_PKG_VERSION")
        && c.cpu_model == cpu_model()
        && c.widest == kernels::detect()
        && c.chosen.available()
        && c.levels.iter().all(|l| l.probes_us.len() == c.probes.len());
    mine.then_some(c)
}

fn save(path: &Path, c: &Choice) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::files::check_writable(path)?;
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(c)? + "\n")?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Probes every SIMD level this CPU has and decides.
pub fn measure() -> Choice {
    let timings = probe::measure();
    let widest = kernels::detect();
    Choice {
        tokfire_kernel_choice: PROBE_VERSION,
        tokfire_version: env!("CARGO_PKG_VERSION").into(),
        cpu_model: cpu_model(),
        measured_utc: super::sweep::now_utc(),
        widest,
        chosen: probe::decide(&timings, widest),
        probes: probe::probe_names(),
        levels: timings.iter().map(level_time).collect(),
    }
}

fn level_time(t: &Timing) -> LevelTime {
    LevelTime {
        level: t.level,
        total_us: t.total_us(),
        probes_us: t.probes_us.clone(),
    }
}

fn cpu_model() -> String {
    crate::measure::provenance::Machine::current().cpu_model
}

impl Choice {
    /// One line for the record: how the level was chosen and the times behind it, e.g.
    /// `measured 2026-12-06: avx512-vnni 812 µs, avx2 1004 µs (1.24×) per probe set`.
    pub fn line(&self) -> String {
        if self.levels.is_empty() {
            return format!("{}: the only level this CPU has", self.chosen);
        }
        let best = self
            .levels
            .iter()
            .map(|l| l.total_us)
            .fold(f64::INFINITY, f64::min);
        let times: Vec<String> = self
            .levels
            .iter()
            .rev()
            .map(|l| match l.total_us / best {
                r if r > 1.0 => format!("{} {:.0} µs ({r:.2}×)", l.level, l.total_us),
                _ => format!("{} {:.0} µs", l.level, l.total_us),
            })
            .collect();
        let date = self.measured_utc.get(..10).unwrap_or(&self.measured_utc);
        format!("measured {date}: {} per probe set", times.join(", "))
    }
}

#[cfg(test)]
#[path = "kernel_choice_tests.rs"]
mod tests;
