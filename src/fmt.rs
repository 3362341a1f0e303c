//! How numbers read everywhere: counts with their word, bytes, seconds, durations,
//! percentages without a negative zero, and hash prefixes. A leaf module any layer may use, so
//! each rule is written once.

/// Bytes as a short human figure (decimal units: kB, MB, GB).
pub(crate) fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} MB", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} kB", n / 1e3)
    } else {
        format!("{n} B")
    }
}

/// "1 job", "3 jobs": a count and its word, plural when it is not 1.
pub(crate) fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// Seconds with three decimals and their unit, or "n/a" when unmeasured.
pub(crate) fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |s| format!("{s:.3} s"))
}

/// `v` with `digits` decimals, never as a negative zero: a value that rounds to zero prints
/// unsigned (`-0.0001` with one decimal is `0.0`, not `-0.0`).
pub(crate) fn fixed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// A fraction as a percentage with `digits` decimals (`0.125` → `12.5 %`), or "n/a".
pub(crate) fn percent(v: Option<f64>, digits: usize) -> String {
    v.map_or("n/a".into(), |v| format!("{} %", fixed(v * 100.0, digits)))
}

/// A duration in the unit that reads best (µs, ms, s).
pub(crate) fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The first 12 characters of a hash (by character: a record is hostile input).
pub(crate) fn hash_prefix(hash: &str) -> String {
    hash.chars().take(12).collect()
}
