//! The HTML page's speculation tables, under the text screen's block: per level the acceptance
//! at each draft position (accepted ÷ proposed there; a position counts only after every one
//! before it was accepted) and the histogram of drafted tokens kept per verify, as counts and
//! shares. Reads the stored summary only.

use super::html::SheetTable;
use crate::record::summary::LevelSummary;

/// Acceptance by draft position, one row per level that drafted.
pub(crate) fn by_position(levels: &[LevelSummary]) -> Option<SheetTable> {
    let k = levels
        .iter()
        .map(|l| l.spec.spec_acceptance_by_position.len())
        .max()
        .filter(|&k| k > 0)?;
    let headers = std::iter::once("jobs".to_string())
        .chain((1..=k).map(|p| format!("position {p}")))
        .collect();
    let rows = levels
        .iter()
        .filter(|l| l.spec.spec_proposed > 0)
        .map(|l| {
            let at = &l.spec.spec_acceptance_by_position;
            std::iter::once(l.jobs.to_string())
                .chain((0..k).map(|i| super::percent(at.get(i).copied(), 0)))
                .collect()
        })
        .collect();
    Some(SheetTable { headers, rows })
}

/// Verifies by drafted tokens kept (0 … k), count and share, one row per level that drafted.
pub(crate) fn kept_histogram(levels: &[LevelSummary]) -> Option<SheetTable> {
    let width = levels
        .iter()
        .map(|l| l.spec.spec_accepted_hist.len())
        .max()
        .filter(|&n| n > 0)?;
    let headers = std::iter::once("jobs".to_string())
        .chain((0..width).map(|n| format!("{n} kept")))
        .collect();
    let rows = levels
        .iter()
        .filter(|l| !l.spec.spec_accepted_hist.is_empty())
        .map(|l| {
            let h = &l.spec.spec_accepted_hist;
            let total: u64 = h.iter().sum();
            std::iter::once(l.jobs.to_string())
                .chain((0..width).map(|n| {
                    let c = h.get(n).copied().unwrap_or(0);
                    let share = (total > 0).then(|| c as f64 / total as f64);
                    format!("{c} ({})", super::percent(share, 0))
                }))
                .collect()
        })
        .collect();
    Some(SheetTable { headers, rows })
}
