//! The prefix-cache block of a run's report (`--prefix-cache on` only): the cache's budget, then
//! per level cold and cached prompts apart (count and median TTFT), prompt tokens computed vs
//! reused and the hit rate, in text and as the HTML page's table. Reads only the record's
//! summary.

use std::fmt::Write;

use super::columns::PREFIX_COLUMNS;
use super::{plural, secs};
use crate::record::summary::LevelSummary;
use crate::record::RunRecord;

/// One level's line: cold, cached, tokens and hit rate.
fn line(s: &LevelSummary) -> String {
    format!("  {:<7} {}", plural(s.jobs, "job") + ":", figures(s))
}

/// Cold and cached prompts with their median TTFTs, prompt tokens computed vs reused, hit rate.
pub(crate) fn figures(s: &LevelSummary) -> String {
    let f = &s.prefix;
    let faster = match (f.prefix_ttft_cold_s, f.prefix_ttft_cached_s) {
        (Some(c), Some(h)) if h > 0.0 => format!(" ({:.1}x faster)", c / h),
        _ => String::new(),
    };
    format!(
        "cold {}, TTFT med {} · cached {}, TTFT med {}{faster} · prompt tokens {} computed, {} reused ({} hit)",
        plural(f.prefix_cold_prompts as usize, "prompt"),
        secs(f.prefix_ttft_cold_s),
        plural(f.prefix_cached_prompts as usize, "prompt"),
        secs(f.prefix_ttft_cached_s),
        f.prefix_tokens_computed,
        f.prefix_tokens_reused,
        f.prefix_hit_rate
            .map_or("n/a".into(), |h| super::percent(Some(h), 0)),
    )
}

/// What the cache was, or none when the run had no prefix cache.
pub(crate) fn budget_line(run: &RunRecord) -> Option<String> {
    let tokens = run.scheduler.prefix_cache_tokens;
    let blocks = run
        .scheduler
        .prefix_block_tokens
        .map_or("blocks of a size this record does not hold".into(), |b| {
            format!("{b}-token blocks")
        });
    // A hybrid model's sequence resumes from a block that carries a copy of its recurrent state.
    let copied = match run.levels.iter().any(|l| l.peak_state_bytes > 0) {
        true => "KV rows and the recurrent state at the block's end restored into each sequence",
        false => "rows copied into each sequence",
    };
    (tokens > 0).then(|| {
        format!(
            "--prefix-cache on; {tokens} of {} KV tokens = {}, {blocks}, {copied}; emptied at \
             every round's start",
            run.scheduler.kv_budget_tokens,
            super::bytes(tokens as u64 * run.model.kv_bytes_per_token),
        )
    })
}

/// The block, or nothing when the run had no prefix cache.
pub(crate) fn section(run: &RunRecord, levels: &[LevelSummary]) -> String {
    let Some(budget) = budget_line(run) else {
        return String::new();
    };
    let mut out = format!("prefix cache ({budget}):\n");
    for s in levels {
        let _ = writeln!(out, "{}", line(s));
    }
    out
}

/// The prefix-cache columns as a table: headers, then one row per level.
pub(crate) fn cells(levels: &[LevelSummary]) -> (Vec<String>, Vec<Vec<String>>) {
    let headers = std::iter::once("jobs".to_string())
        .chain(PREFIX_COLUMNS.iter().map(|c| c.header.to_string()))
        .collect();
    let rows = levels
        .iter()
        .map(|s| {
            std::iter::once(s.jobs.to_string())
                .chain(PREFIX_COLUMNS.iter().map(|c| (c.text)(s)))
                .collect()
        })
        .collect();
    (headers, rows)
}
