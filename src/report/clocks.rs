//! The four clocks of one `generate` call, as text for stderr (formulas in
//! [`crate::measure::clocks`]).

use std::time::Duration;

use crate::engine::generate::Generation;
use crate::measure::{clocks, stats};
use crate::record::load::LoadSplitRecord as LoadSplit;

/// What the clock report needs besides the generation itself.
pub(crate) struct ClockContext<'a> {
    pub load: Duration,
    pub file_bytes: u64,
    pub model: &'a str,
    pub device: &'a str,
    pub dtype: &'a str,
    /// Where the load time went, when known.
    pub split: Option<&'a LoadSplit>,
}

/// Load, warm-up, prefill and decode, one line each.
pub(crate) fn text(ctx: &ClockContext, g: &Generation) -> String {
    use super::duration as d;
    let ms: Vec<f64> = g.steps.iter().map(|s| s.as_secs_f64() * 1e3).collect();
    let steady_s: Vec<f64> = ms.iter().skip(1).map(|m| m / 1e3).collect();
    let warmup = ms
        .first()
        .and_then(|f| clocks::kernel_warmup(f / 1e3, &steady_s).map(|w| (f, w)));
    let warm = match warmup {
        Some((first, w)) => format!(
            "first decode step {first:.1} ms, steady median {:.1} ms → {}",
            stats::median(&ms[1..]).unwrap_or(0.0),
            w.label()
        ),
        None => "n/a (needs at least 3 decode steps)".into(),
    };
    let prefill_rate = clocks::rate_label(
        clocks::rate(g.prompt_tokens, g.prefill.as_secs_f64()).filter(|_| !g.tokens.is_empty()),
        "tok/s",
    );
    let decode_total: Duration = g.steps.iter().sum();
    let decode = if g.steps.is_empty() {
        "n/a (too few tokens: needs at least 2 generated)".into()
    } else {
        format!(
            "{} in {} → {} (median step {:.1} ms, slowest {:.1} ms)",
            tokens(g.steps.len()),
            d(decode_total),
            clocks::rate_label(
                clocks::rate(g.steps.len(), decode_total.as_secs_f64()),
                "tok/s"
            ),
            stats::median(&ms).unwrap_or(0.0),
            stats::max(&ms).unwrap_or(0.0)
        )
    };
    let prefill = if g.tokens.is_empty() {
        "n/a (nothing generated)".to_string()
    } else {
        format!(
            "{} in {} → {prefill_rate} (time to first token)",
            tokens(g.prompt_tokens),
            d(g.prefill)
        )
    };
    let text = format!(
        "clocks    {} on {}, dtype {}, prompt of {}, {} generated{}\n  load    {} ({} file){}\n  warm-up {warm}\n  prefill {prefill}\n  decode  {decode}\n",
        ctx.model,
        ctx.device,
        ctx.dtype,
        tokens(g.prompt_tokens),
        g.tokens.len(),
        if g.stopped { ", stopped at end-of-sequence" } else { "" },
        d(ctx.load),
        super::bytes(ctx.file_bytes),
        ctx.split
            .map(|s| format!("\n          {}", split_text(s)))
            .unwrap_or_default(),
    );
    super::wrap(&text)
}

/// The load split on one line, e.g. `mmap: header 2.1 ms, tokenizer 40.0 ms, weights 5.0 ms
/// (80.1 MB mapped, 18.3 MB copied), first touch 9.2 ms`; repacking, when any, after the copies.
pub(crate) fn split_text(s: &LoadSplit) -> String {
    let ms = |x: f64| format!("{:.1} ms", x.max(0.0) * 1e3);
    format!(
        "{}: header {}, tokenizer {}, weights {} ({} mapped, {} copied{}), first touch {}",
        s.mode,
        ms(s.header_s),
        ms(s.tokenizer_s),
        ms(s.weights_s),
        super::bytes(s.mapped_bytes),
        super::bytes(s.copied_bytes),
        match s.repacked_bytes {
            0 => String::new(),
            b => format!(", {} repacked in {}", super::bytes(b), ms(s.repack_s)),
        },
        if s.mapped_bytes == 0 {
            "n/a (nothing mapped)".to_string()
        } else {
            ms(s.first_touch_s)
        },
    ) + &s.device.as_ref().map_or(String::new(), |d| {
        format!(
            "; device: open {}, file → host {}, host → device {} ({})",
            ms(d.open_s),
            ms(d.read_s),
            ms(d.upload_s),
            super::bytes(d.upload_bytes)
        )
    })
}

/// `1 token`, `5 tokens`.
fn tokens(n: usize) -> String {
    super::plural(n, "token")
}
