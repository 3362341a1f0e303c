//! `prefill --cold-start` for people: per cell that had one, a fresh process's start on the
//! cell's first prompt — when `main` ran, the model was loaded, the warm-up forward done and
//! the first token out, all after the spawn — and its prefill (warm-up → first token) beside
//! the same cell's median TTFT in the long-lived process. Reads only the record.

use crate::record::prefill::{CellRecord, PrefillRecord};

const HEADERS: [&str; 8] = [
    "prompt tokens",
    "chunk",
    "main",
    "loaded",
    "warm",
    "first token",
    "fresh TTFT",
    "warm TTFT",
];

fn secs(v: f64) -> String {
    format!("{v:.3} s")
}

fn row(c: &CellRecord) -> Option<Vec<String>> {
    let start = c.cold_start.as_ref()?;
    let mut r = vec![c.length.to_string(), c.chunk.to_string()];
    match (&start.failure, start.clocks) {
        (None, Some(k)) => r.extend([
            secs(k.main_s),
            secs(k.loaded_s),
            secs(k.warm_s),
            secs(k.first_token_s),
            // Both clocks are the parent's; the difference of two later stamps is never
            // negative unless a stamp is missing (NaN), shown as n/a.
            match k.first_token_s - k.warm_s {
                d if d >= 0.0 => secs(d),
                _ => "n/a".into(),
            },
        ]),
        (Some(why), _) => r.extend([format!("failed: {why}"), String::new(), String::new()]),
        (None, None) => r.extend(["n/a (no clocks)".to_string(), String::new(), String::new()]),
    }
    r.resize(7, String::new());
    r.push(c.ttft_median().map_or("n/a".into(), secs));
    Some(r)
}

/// The section, or nothing for a run without `--cold-start`.
pub fn section(p: &PrefillRecord) -> String {
    if !p.cold_start {
        return String::new();
    }
    let rows: Vec<Vec<String>> = p.cells.iter().filter_map(row).collect();
    let mut out = String::from(
        "cold starts (--cold-start): a fresh process per cell at depth 0, nothing cached, on the \
         cell's first prompt with the model file in the page cache; seconds after the spawn; \
         fresh TTFT = warm -> first token, warm TTFT = this process's median\n",
    );
    if rows.is_empty() {
        out += "  n/a: no cell at depth 0 with nothing cached was run\n";
        return out;
    }
    let shape = super::layout::Shape { keys: 2, left: 0 };
    out += &super::layout::table(&HEADERS, &rows, shape, super::layout::WIDTH);
    out
}
