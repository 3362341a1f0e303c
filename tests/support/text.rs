//! Reading the binary's text output in tests: every screen wraps at 100 columns, and where a
//! line breaks depends on the length of temp paths, so a needle is looked for with wrapping
//! undone.

/// Whether `text` holds `needle` once line wrapping is undone (every run of whitespace, line
/// breaks and hanging indents included, read as one space).
pub fn has(text: impl AsRef<str>, needle: impl AsRef<str>) -> bool {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    flat(text.as_ref()).contains(&flat(needle.as_ref()))
}
