//! A minimal SVG document writer: elements are appended in drawing order, text and
//! attribute values are escaped, coordinates are written with two decimals so that
//! the output is deterministic and small.

use std::fmt::Write;

/// An SVG document being written.
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
    depth: usize,
}

/// Escapes `&`, `<`, `>`, `"` and `'` for XML text and attribute values, and drops
/// characters XML 1.0 does not allow (control characters other than tab and newlines).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A coordinate or length with at most two decimals (`-0` written as `0`).
pub fn num(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == 0.0 || !r.is_finite() {
        return "0".into();
    }
    let s = format!("{r:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Text anchoring of a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A rectangle in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Svg {
    /// An empty `width` x `height` pixel document with a white background.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut s = Svg {
            width,
            height,
            body: String::new(),
            depth: 1,
        };
        s.rect(
            Rect {
                x: 0.0,
                y: 0.0,
                w: width,
                h: height,
            },
            "fill=\"#ffffff\"",
            None,
        );
        s
    }

    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.body.push_str("  ");
        }
    }

    /// Opens a group `<g attrs>`; close it with [`Svg::close`].
    pub fn open(&mut self, attrs: &str) {
        self.indent();
        let _ = writeln!(self.body, "<g {attrs}>");
        self.depth += 1;
    }

    /// Closes the innermost open group.
    pub fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1).max(1);
        self.indent();
        self.body.push_str("</g>\n");
    }

    fn element(&mut self, tag: &str, geometry: &str, attrs: &str, title: Option<&str>) {
        self.indent();
        let sep = if attrs.is_empty() { "" } else { " " };
        match title {
            Some(t) => {
                let _ = writeln!(
                    self.body,
                    "<{tag} {geometry}{sep}{attrs}><title>{}</title></{tag}>",
                    escape(t)
                );
            }
            None => {
                let _ = writeln!(self.body, "<{tag} {geometry}{sep}{attrs}/>");
            }
        }
    }

    /// A rectangle; `attrs` are extra attributes (already escaped), `title` a hover
    /// label.
    pub fn rect(&mut self, r: Rect, attrs: &str, title: Option<&str>) {
        let g = format!(
            "x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
            num(r.x),
            num(r.y),
            num(r.w.max(0.0)),
            num(r.h.max(0.0))
        );
        self.element("rect", &g, attrs, title);
    }

    /// A straight line from `(x1, y1)` to `(x2, y2)`.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &str) {
        let g = format!(
            "x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"",
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
        self.element("line", &g, attrs, None);
    }

    /// A circle of radius `r` centred at `(cx, cy)`.
    pub fn circle(&mut self, (cx, cy): (f64, f64), r: f64, attrs: &str, title: Option<&str>) {
        let g = format!("cx=\"{}\" cy=\"{}\" r=\"{}\"", num(cx), num(cy), num(r));
        self.element("circle", &g, attrs, title);
    }

    /// A polygon through `points`.
    pub fn polygon(&mut self, points: &[(f64, f64)], attrs: &str, title: Option<&str>) {
        let p: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let g = format!("points=\"{}\"", p.join(" "));
        self.element("polygon", &g, attrs, title);
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], attrs: &str) {
        let p: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let g = format!("points=\"{}\" fill=\"none\"", p.join(" "));
        self.element("polyline", &g, attrs, None);
    }

    /// A text label at `(x, y)` (baseline), `size` pixels high.
    pub fn text(&mut self, (x, y): (f64, f64), size: f64, anchor: Anchor, attrs: &str, s: &str) {
        self.indent();
        let sep = if attrs.is_empty() { "" } else { " " };
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\"{sep}{attrs}>{}</text>",
            num(x),
            num(y),
            num(size),
            anchor.name(),
            escape(s)
        );
    }

    /// The document: XML declaration, the `<svg>` root with its size and view box, a
    /// `<title>`, and the elements.
    pub fn finish(mut self, title: &str) -> String {
        while self.depth > 1 {
            self.close();
        }
        let (w, h) = (num(self.width), num(self.height));
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n  <title>{}</title>\n{}</svg>\n",
            escape(title),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_control_characters() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn numbers_have_two_decimals_at_most() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.256), "1.26");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn document_is_well_formed() {
        let mut s = Svg::new(100.0, 50.0);
        s.open("class=\"g\"");
        s.circle((1.0, 2.0), 3.0, "fill=\"red\"", Some("conv<1> & relu"));
        s.text((5.0, 5.0), 10.0, Anchor::Middle, "", "x < y");
        let doc = s.finish("t");
        let x = roxmltree::Document::parse(&doc).unwrap();
        let c = x.descendants().find(|n| n.has_tag_name("circle")).unwrap();
        assert_eq!(c.attribute("cx"), Some("1"));
        let t = c.children().find(|n| n.has_tag_name("title")).unwrap();
        assert_eq!(t.text(), Some("conv<1> & relu"));
    }
}
