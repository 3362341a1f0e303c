//! The four clocks of one `generate` call, as text for stderr.

use std::time::Duration;

use crate::engine::generate::Generation;
use crate::measure::stats;

/// What the clock report needs besides the generation itself.
pub struct ClockContext<'a> {
    pub load: Duration,
    pub file_bytes: u64,
    pub model: &'a str,
    pub device: &'a str,
    pub dtype: &'a str,
}

/// Load, warm-up, prefill and decode, one line each.
pub fn text(ctx: &ClockContext, g: &Generation) -> String {
    use super::duration as d;
    let ms: Vec<f64> = g.steps.iter().map(|s| s.as_secs_f64() * 1e3).collect();
    let steady = stats::median(ms.get(1..).unwrap_or(&[]));
    let warm = match (ms.first(), steady) {
        (Some(first), Some(med)) => format!(
            "first decode step {first:.1} ms, steady median {med:.1} ms → {:+.1} ms",
            first - med
        ),
        _ => "n/a (needs at least 2 decode steps)".into(),
    };
    let prefill_rate = g.prompt_tokens as f64 / g.prefill.as_secs_f64().max(1e-9);
    let decode_total: Duration = g.steps.iter().sum();
    let decode = if g.steps.is_empty() {
        "n/a (needs at least 2 generated tokens)".into()
    } else {
        format!(
            "{} tokens in {} → {:.1} tok/s (median step {:.1} ms, slowest {:.1} ms)",
            g.steps.len(),
            d(decode_total),
            g.steps.len() as f64 / decode_total.as_secs_f64().max(1e-9),
            stats::median(&ms).unwrap_or(0.0),
            stats::max(&ms).unwrap_or(0.0)
        )
    };
    format!(
        "clocks    {} on {}, dtype {}, {} prompt tokens, {} generated{}\n  load    {} ({} read)\n  warm-up {warm}\n  prefill {} tokens in {} → {prefill_rate:.1} tok/s (time to first token)\n  decode  {decode}\n",
        ctx.model,
        ctx.device,
        ctx.dtype,
        g.prompt_tokens,
        g.tokens.len(),
        if g.stopped { ", stopped at end-of-sequence" } else { "" },
        d(ctx.load),
        super::bytes(ctx.file_bytes),
        g.prompt_tokens,
        d(g.prefill),
    )
}
