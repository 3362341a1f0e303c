//! How `compare` names one grid cell's change between two runs (prefill and spec-cost cells):
//! `same` within `--min-effect`, `faster` or `slower` only when the two runs' sample ranges do
//! not overlap, else `within spread`. Pure.

/// A cell's change, judged on medians and sample ranges (lower is faster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Same,
    WithinSpread,
    Faster,
    Slower,
}

impl Change {
    /// `new` against `old`: (median, (min, max)) each.
    pub fn of(old: (f64, (f64, f64)), new: (f64, (f64, f64)), min_effect: f64) -> Self {
        let ratio = new.0 / old.0;
        if (ratio - 1.0).abs() < min_effect {
            Self::Same
        } else if new.1 .1 < old.1 .0 {
            Self::Faster
        } else if new.1 .0 > old.1 .1 {
            Self::Slower
        } else {
            Self::WithinSpread
        }
    }

    /// The table's word for it.
    pub fn label(self, min_effect: f64) -> String {
        match self {
            Self::Same => format!("same (within {:.0} %)", min_effect * 100.0),
            Self::WithinSpread => "within spread".into(),
            Self::Faster => "faster".into(),
            Self::Slower => "slower".into(),
        }
    }
}

/// The verdict line over a table of changes.
pub fn verdict(changes: &[Change], what: &str, left_out: bool) -> String {
    let count = |c: Change| changes.iter().filter(|&&x| x == c).count();
    let same = count(Change::Same) + count(Change::WithinSpread);
    format!(
        "verdict: {} cells faster, {} slower, {same} unchanged or within the spread ({what}; \
         faster or slower only when the sample ranges do not overlap){}\n",
        count(Change::Faster),
        count(Change::Slower),
        match left_out {
            true => "; cells in one run only or without samples are left out",
            false => "",
        }
    )
}

#[cfg(test)]
#[path = "change_tests.rs"]
mod tests;
