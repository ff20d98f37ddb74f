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
