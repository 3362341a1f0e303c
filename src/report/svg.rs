//! A small SVG writer for the HTML report: text escaping, number formatting that never writes
//! NaN or infinity, linear scales, "nice" axis ticks (1, 2 or 5 × 10ᵏ, as in Heckbert's
//! *Nice Numbers for Graph Labels*, Graphics Gems 1990), and a chart frame with a title, axes,
//! ticks, axis labels and a legend. Styling is by `class`; the page's stylesheet gives the
//! colours. Pure: values in, markup out.

use std::fmt::Write;

/// Escapes text for XML and HTML content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate for an attribute: two decimals, and 0 for a value that is not finite.
pub(crate) fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".into()
    } else {
        s.into()
    }
}

/// Approximate width in pixels of `text` at `size` px in a sans-serif font (DejaVu Sans
/// advance widths, grouped), for laying out legends and deciding whether a label fits.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.28,
            ' ' | '(' | ')' | '[' | ']' | '/' | '-' | 'f' | 't' | 'r' => 0.37,
            'm' | 'w' | 'M' | 'W' => 0.92,
            's' | 'z' => 0.53,
            'c' | 'k' | 'v' | 'x' | 'y' => 0.58,
            c if c.is_ascii_uppercase() => 0.70,
            _ => 0.62,
        })
        .sum();
    em * size
}

/// A linear map from a data domain to a pixel range. A domain of zero or non-finite span is
/// widened to one unit so no division by zero happens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    /// Maps `[d0, d1]` onto `[r0, r1]`.
    pub(crate) fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Self {
        let d0 = if d0.is_finite() { d0 } else { 0.0 };
        let d1 = if d1.is_finite() && d1 > d0 {
            d1
        } else {
            d0 + 1.0
        };
        Self { d0, d1, r0, r1 }
    }

    /// The pixel position of `v` (values outside the domain extrapolate; NaN maps to `r0`).
    pub(crate) fn at(&self, v: f64) -> f64 {
        if !v.is_finite() {
            return self.r0;
        }
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// Most decimals a tick label shows.
const MAX_DECIMALS: usize = 9;

/// Roughly `n` round tick values covering `[lo, hi]`, and the decimals their labels need.
/// The first tick is ≤ `lo` and the last ≥ `hi`, so a domain set from them holds all data.
pub(crate) fn nice_ticks(lo: f64, hi: f64, n: usize) -> (Vec<f64>, usize) {
    let lo = if lo.is_finite() { lo } else { 0.0 };
    // A span too narrow to divide (a crafted record's subnormal values) plots as a span of 1.
    let hi = if hi.is_finite() && hi - lo > 1e-9 * lo.abs().max(1.0) {
        hi
    } else {
        lo + 1.0
    };
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let count = ((hi - first) / step).ceil().max(1.0) as usize;
    let ticks = (0..=count).map(|i| first + i as f64 * step).collect();
    let decimals = ((-step.log10().floor()).max(0.0) as usize).min(MAX_DECIMALS);
    (ticks, decimals)
}

/// One legend entry: a CSS class for the swatch, its shape, and the label.
#[derive(Debug, Clone)]
pub(crate) struct Key {
    /// Class of the swatch (also the class of the marks it stands for).
    pub(crate) class: String,
    /// Drawn as a dot rather than a box.
    pub(crate) dot: bool,
    /// What the swatch stands for.
    pub(crate) label: String,
}

impl Key {
    /// A box swatch.
    pub(crate) fn bar(class: &str, label: &str) -> Self {
        let (class, label, dot) = (class.into(), label.into(), false);
        Self { class, dot, label }
    }

    /// A dot swatch.
    pub(crate) fn dot(class: &str, label: &str) -> Self {
        let (class, label, dot) = (class.into(), label.into(), true);
        Self { class, dot, label }
    }
}

/// Axis tick positions with their labels.
#[derive(Debug, Clone, Default)]
pub(crate) struct Axis {
    /// Axis title, with its unit.
    pub(crate) label: String,
    /// (value, label) pairs.
    pub(crate) ticks: Vec<(f64, String)>,
}

impl Axis {
    /// Ticks labelled with `decimals` decimals.
    pub(crate) fn numeric(label: &str, ticks: &[f64], decimals: usize) -> Self {
        let ticks = ticks
            .iter()
            .map(|&t| (t, format!("{t:.decimals$}")))
            .collect();
        Self {
            label: label.into(),
            ticks,
        }
    }
}

/// A chart under construction: an `<svg>` of a fixed size with a plot area inside margins.
/// Marks are appended with the helpers; [`Chart::finish`] closes the element.
pub(crate) struct Chart {
    out: String,
    /// Left edge of the plot area, pixels.
    pub(crate) left: f64,
    /// Top edge of the plot area, pixels.
    pub(crate) top: f64,
    /// Right edge of the plot area, pixels.
    pub(crate) right: f64,
    /// Bottom edge of the plot area (the x axis), pixels.
    pub(crate) bottom: f64,
}

impl Chart {
    /// Opens an `<svg>` of `width` × `height` pixels with a title line above the plot area.
    /// `id` names the element (for the test and for links).
    pub(crate) fn new(id: &str, width: f64, height: f64, title: &str) -> Self {
        let mut out = String::new();
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\" class=\"plot\" width=\"{w}\" \
             height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">\n<title>{t}</title>\n\
             <text class=\"title\" x=\"12\" y=\"22\">{t}</text>\n",
            esc(id),
            w = num(width),
            h = num(height),
            t = esc(title),
        );
        Self {
            out,
            left: 70.0,
            top: 64.0,
            right: width - 20.0,
            bottom: height - 50.0,
        }
    }

    /// Draws the frame, grid lines, ticks and labels. `x` and `y` map data to pixels.
    pub(crate) fn axes(&mut self, x: &Scale, xa: &Axis, y: &Scale, ya: &Axis) {
        let (l, t, r, b) = (self.left, self.top, self.right, self.bottom);
        for (v, label) in &ya.ticks {
            let py = y.at(*v);
            self.line(l, py, r, py, "grid");
            self.line(l - 5.0, py, l, py, "axis");
            self.text(l - 8.0, py + 4.0, "end", "tick", label);
        }
        for (v, label) in &xa.ticks {
            let px = x.at(*v);
            self.line(px, b, px, b + 5.0, "axis");
            self.text(px, b + 18.0, "middle", "tick", label);
        }
        self.line(l, b, r, b, "axis");
        self.line(l, t, l, b, "axis");
        self.text((l + r) / 2.0, b + 38.0, "middle", "label", &xa.label);
        let (cx, cy) = (16.0, (t + b) / 2.0);
        let _ = writeln!(
            self.out,
            "<text class=\"label\" text-anchor=\"middle\" transform=\"translate({},{}) \
             rotate(-90)\">{}</text>",
            num(cx),
            num(cy),
            esc(&ya.label)
        );
    }

    /// Writes the legend under the title, aligned with the plot area's left edge, in as many
    /// rows as its keys need; rows past the first move the plot area down (call it before the
    /// scales are made from `top`).
    pub(crate) fn legend(&mut self, keys: &[Key]) {
        let (mut x, mut y) = (self.left, 40.0);
        for k in keys {
            let w = 34.0 + text_width(&k.label, 12.0);
            if x > self.left && x + w > self.right {
                (x, y) = (self.left, y + 18.0);
                self.top += 18.0;
            }
            let class = format!("{} key", k.class);
            if k.dot {
                self.circle(x + 6.0, y, 5.0, &class, None);
            } else {
                self.rect(x, y - 6.0, 12.0, 12.0, &class, None);
            }
            self.text(x + 17.0, y + 4.0, "start", "legend", &k.label);
            x += w;
        }
    }

    /// A rectangle with an optional `<title>` tooltip. Negative sizes are drawn as zero.
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
            esc(class),
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
        self.close("rect", tip);
    }

    /// A circle with an optional tooltip.
    pub(crate) fn circle(&mut self, cx: f64, cy: f64, r: f64, class: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            "<circle class=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\"",
            esc(class),
            num(cx),
            num(cy),
            num(r)
        );
        self.close("circle", tip);
    }

    /// A line segment.
    pub(crate) fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let _ = writeln!(
            self.out,
            "<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            esc(class),
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
    }

    /// A polyline through `points` (pixels).
    pub(crate) fn polyline(&mut self, points: &[(f64, f64)], class: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
            .collect();
        let _ = writeln!(
            self.out,
            "<polyline class=\"{}\" points=\"{}\"/>",
            esc(class),
            pts.join(" ")
        );
    }

    /// Text anchored `start`, `middle` or `end` at (x, y).
    pub(crate) fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>",
            esc(class),
            num(x),
            num(y),
            esc(anchor),
            esc(text)
        );
    }

    /// A centred note in the plot area, for a chart with nothing to draw.
    pub(crate) fn empty(&mut self, note: &str) {
        let (x, y) = (
            (self.left + self.right) / 2.0,
            (self.top + self.bottom) / 2.0,
        );
        self.text(x, y, "middle", "note", note);
    }

    /// Closes the `<svg>` element and returns its markup.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }

    fn close(&mut self, tag: &str, tip: Option<&str>) {
        match tip {
            Some(t) => {
                let _ = writeln!(self.out, "><title>{}</title></{tag}>", esc(t));
            }
            None => self.out.push_str("/>\n"),
        }
    }
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
