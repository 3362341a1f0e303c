//! The version lock: `workloads/workloads.lock` records the content hash of every shipped
//! workload name and version (old versions keep their lines), so results stay comparable and a
//! task edited without a version bump is caught at load time.

use super::error::WorkloadError;
use std::collections::BTreeMap;

/// The lock shipped with this build.
pub(crate) const EMBEDDED: &str = include_str!("../../workloads/workloads.lock");

/// Parsed lock: (name, version) → sha256 hex.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    pub entries: BTreeMap<(String, u32), String>,
}

impl Lock {
    /// Parses `NAME VERSION SHA256` lines; `#` starts a comment; blank lines are skipped.
    pub fn parse(text: &str, source_name: &str) -> Result<Lock, WorkloadError> {
        let mut entries = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let err = |reason: String| WorkloadError::Lock {
                source_name: source_name.to_string(),
                line: i + 1,
                reason,
            };
            let parts: Vec<&str> = line.split_whitespace().collect();
            let [name, version, hash] = parts[..] else {
                return Err(err(format!("expected 3 fields, found {}", parts.len())));
            };
            let version: u32 = version
                .parse()
                .map_err(|_| err(format!("version {version:?} is not a whole number")))?;
            if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(err(format!("{hash:?} is not a sha256 hex digest")));
            }
            let key = (name.to_string(), version);
            if let Some(old) = entries.insert(key, hash.to_lowercase()) {
                if old != hash.to_lowercase() {
                    return Err(err(format!(
                        "{name} {version} is listed twice with different hashes"
                    )));
                }
            }
        }
        Ok(Lock { entries })
    }

    /// The embedded lock.
    pub(crate) fn embedded() -> Lock {
        Lock::parse(EMBEDDED, "workloads/workloads.lock (embedded)")
            .expect("the embedded workloads.lock is checked by a test; this is a bug")
    }

    /// Adds `other`'s entries (used to merge a lock file beside a workload with the embedded one).
    pub(crate) fn merge(&mut self, other: Lock) {
        self.entries.extend(other.entries);
    }

    /// The recorded hash for `name` `version`, if any.
    pub(crate) fn get(&self, name: &str, version: u32) -> Option<&str> {
        self.entries
            .get(&(name.to_string(), version))
            .map(String::as_str)
    }
}

/// The lock line for a workload, as it should appear in `workloads.lock`.
pub(crate) fn line(name: &str, version: u32, hash: &str) -> String {
    format!("{name} {version} {hash}")
}
