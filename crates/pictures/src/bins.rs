//! A row of coloured spans that stays readable at any scale: spans at least a pixel
//! wide are drawn one by one (each with its hover title); narrower ones are summed
//! per pixel column by key, and each column takes the colour of the key with most
//! cycles in it, with runs of columns of one key merged into one rectangle.

use crate::svg::{Rect, Svg};
use std::collections::BTreeMap;

/// A span of a row: pixels `[x0, x1)`, its cycles, the key that colours it and its
/// hover title.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub x0: f64,
    pub x1: f64,
    pub cycles: u64,
    pub key: usize,
    pub title: String,
}

/// A row's vertical extent and how keys look.
pub struct Row<'a> {
    pub y: f64,
    pub h: f64,
    /// `class` of every rectangle of the row.
    pub class: &'a str,
    pub colour: &'a dyn Fn(usize) -> &'static str,
    pub key_name: &'a dyn Fn(usize) -> String,
}

/// Draws `spans` in `row`; returns how many were aggregated into columns.
pub fn draw_row(svg: &mut Svg, row: &Row, spans: &[Span]) -> usize {
    // column -> key -> (cycles, spans)
    let mut cols: BTreeMap<i64, BTreeMap<usize, (u64, usize)>> = BTreeMap::new();
    let mut aggregated = 0;
    for s in spans {
        if s.x1 - s.x0 >= 1.0 {
            svg.rect(
                Rect {
                    x: s.x0,
                    y: row.y,
                    w: s.x1 - s.x0,
                    h: row.h,
                },
                &format!("class=\"{}\" fill=\"{}\"", row.class, (row.colour)(s.key)),
                Some(&s.title),
            );
        } else {
            aggregated += 1;
            let e = cols
                .entry(s.x0.floor() as i64)
                .or_default()
                .entry(s.key)
                .or_default();
            e.0 += s.cycles.max(1);
            e.1 += 1;
        }
    }
    // Runs of adjacent columns with the same dominant key.
    let mut run: Option<(i64, i64, usize, usize, u64)> = None;
    let flush = |svg: &mut Svg, r: (i64, i64, usize, usize, u64)| {
        let (c0, c1, key, n, cycles) = r;
        svg.rect(
            Rect {
                x: c0 as f64,
                y: row.y,
                w: (c1 - c0 + 1) as f64,
                h: row.h,
            },
            &format!(
                "class=\"{} aggregate\" fill=\"{}\"",
                row.class,
                (row.colour)(key)
            ),
            Some(&format!(
                "{n} spans under a pixel each ({cycles} cycles), mostly {}",
                (row.key_name)(key)
            )),
        );
    };
    for (&c, keys) in &cols {
        let (&key, _) = keys
            .iter()
            .max_by_key(|(k, (cy, _))| (*cy, std::cmp::Reverse(**k)))
            .expect("a column has a key");
        let n: usize = keys.values().map(|v| v.1).sum();
        let cycles: u64 = keys.values().map(|v| v.0).sum();
        run = match run {
            Some((c0, c1, k, m, cy)) if c1 + 1 == c && k == key => {
                Some((c0, c, k, m + n, cy + cycles))
            }
            Some(r) => {
                flush(svg, r);
                Some((c, c, key, n, cycles))
            }
            None => Some((c, c, key, n, cycles)),
        };
    }
    if let Some(r) = run {
        flush(svg, r);
    }
    aggregated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(x0: f64, x1: f64, cycles: u64, key: usize) -> Span {
        Span {
            x0,
            x1,
            cycles,
            key,
            title: format!("k{key}"),
        }
    }

    #[test]
    fn wide_spans_are_drawn_and_narrow_ones_merged_by_dominant_key() {
        let colour = |k: usize| if k == 0 { "#000000" } else { "#ffffff" };
        let name = |k: usize| format!("layer{k}");
        let row = Row {
            y: 0.0,
            h: 10.0,
            class: "span",
            colour: &colour,
            key_name: &name,
        };
        let spans = vec![
            span(0.0, 5.0, 500, 0),
            // Column 10: key 1 has more cycles; column 11: key 1 alone -> one run.
            span(10.1, 10.3, 5, 0),
            span(10.4, 10.9, 9, 1),
            span(11.2, 11.5, 3, 1),
            // Column 20: key 0.
            span(20.0, 20.5, 2, 0),
        ];
        let mut svg = Svg::new(100.0, 10.0);
        assert_eq!(draw_row(&mut svg, &row, &spans), 4);
        let doc = svg.finish("t");
        let x = roxmltree::Document::parse(&doc).unwrap();
        let rects: Vec<_> = x
            .descendants()
            .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("span")))
            .map(|n| {
                (
                    n.attribute("x").unwrap().to_string(),
                    n.attribute("width").unwrap().to_string(),
                    n.attribute("fill").unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            rects,
            vec![
                ("0".into(), "5".into(), "#000000".into()),
                ("10".into(), "2".into(), "#ffffff".into()),
                ("20".into(), "1".into(), "#000000".into()),
            ]
        );
        assert!(doc.contains("3 spans under a pixel each (17 cycles), mostly layer1"));
    }
}
