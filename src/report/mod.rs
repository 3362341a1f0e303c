//! What the user reads: text renderings of results. Reports only read values they are given;
//! they never measure.

pub mod ab;
pub(crate) mod baseline;
pub(crate) mod change;
pub(crate) mod clocks;
pub mod cold;
pub(crate) mod columns;
pub mod html;
pub(crate) mod html_plain;
pub(crate) mod html_sched;
pub(crate) mod html_spec;
pub(crate) mod inspect;
pub(crate) mod layout;
pub mod prefill;
pub(crate) mod prefill_cold;
pub(crate) mod prefix;
pub(crate) mod profile;
pub mod session;
pub mod spec_cost;
pub(crate) mod summary;
pub(crate) mod svg;
pub mod text;

/// `text` with every line inside the screen width (see [`layout::wrap`]).
pub fn wrap(text: &str) -> String {
    layout::wrap(text, layout::WIDTH)
}

/// `text` safe to print on a terminal: control characters other than newline and tab (an escape
/// sequence stored in a record could move the cursor, retitle the window or hide lines) become
/// U+FFFD. What the tool prints from records goes through this.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    match text.chars().any(bad) {
        false => std::borrow::Cow::Borrowed(text),
        true => text
            .chars()
            .map(|c| if bad(c) { '\u{fffd}' } else { c })
            .collect::<String>()
            .into(),
    }
}

pub(crate) use crate::fmt::{bytes, duration, fixed, percent, plural, secs};

#[cfg(test)]
mod tests;
