//! The HTML page of the record kinds that have no charts of their own — cold starts, a session,
//! an A/B pair: the run page's style and structure (a title, a one-sentence lead, then sections)
//! with the same tables and notes the text rendering shows, as HTML tables and preformatted
//! text. Self-contained like the run page; it only reads what the text renderers read.

use std::fmt::Write;

use super::html::{table, SheetTable, CSS};
use super::svg::esc;

/// One part of a section.
pub(crate) enum Block {
    Table(SheetTable),
    /// Text as the terminal shows it (already wrapped to its width).
    Pre(String),
    /// A chart, as [`super::svg::Chart::finish`] wrote it (escaped there).
    Svg(String),
}

/// A page titled `title` opening with `lead`, then each `(heading, blocks)` section.
pub(crate) fn page(title: &str, lead: &str, sections: Vec<(&str, Vec<Block>)>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n\
         <meta charset=\"utf-8\"/>\n<title>TokFire report: {t}</title>\n<style>\n{CSS}\n</style>\n\
         </head>\n<body>\n<h1>TokFire report: {t}</h1>\n<p class=\"lead\">{}</p>\n",
        esc(lead),
        t = esc(title),
    );
    for (heading, blocks) in sections {
        let _ = writeln!(out, "<h2>{}</h2>", esc(heading));
        for b in blocks {
            match b {
                Block::Table(t) => out.push_str(&table(&t)),
                Block::Pre(text) => {
                    let _ = writeln!(out, "<pre>{}</pre>", esc(text.trim_end()));
                }
                Block::Svg(svg) => {
                    let _ = writeln!(out, "<div class=\"chart\">{svg}</div>");
                }
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Headers and rows as a table.
pub(crate) fn cells(headers: &[&str], rows: &[Vec<String>]) -> Block {
    Block::Table(SheetTable {
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: rows.to_vec(),
    })
}
