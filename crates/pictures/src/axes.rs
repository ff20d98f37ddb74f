//! Axes of a plot panel: frame, grid, ticks with labels, axis titles. Every tick is a
//! `<line class="tick">` carrying its value in `data-value`, so that a reader (and the
//! tests) can map pixels back to values.

use crate::scale::{decade_label, LogScale};
use crate::svg::{num, Anchor, Rect, Svg};

/// A log-log plot area.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogPanel {
    pub area: Rect,
    pub x: LogScale,
    pub y: LogScale,
}

impl LogPanel {
    /// A panel over `area` with the decades `x` and `y` (pixels filled in).
    pub fn new(area: Rect, x: (i32, i32), y: (i32, i32)) -> LogPanel {
        LogPanel {
            area,
            x: LogScale {
                lo: x.0,
                hi: x.1,
                p0: area.x,
                p1: area.x + area.w,
            },
            y: LogScale {
                lo: y.0,
                hi: y.1,
                p0: area.y + area.h,
                p1: area.y,
            },
        }
    }

    /// Pixel of the data point `(x, y)`.
    pub fn at(&self, x: f64, y: f64) -> (f64, f64) {
        (self.x.px(x), self.y.px(y))
    }
}

const GRID: &str = "stroke=\"#e4e4e4\" stroke-width=\"1\"";
const FRAME: &str = "fill=\"none\" stroke=\"#444444\" stroke-width=\"1\"";
const TICK: &str = "stroke=\"#444444\" stroke-width=\"1\"";
const LABEL: &str = "fill=\"#222222\"";

/// Which axis of a panel a tick belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    X,
    Y,
}

fn tick(svg: &mut Svg, a: Rect, side: Side, p: f64, value: f64, major: bool) {
    let len = if major { 6.0 } else { 3.0 };
    let cls = match (side, major) {
        (Side::X, true) => "tick x major",
        (Side::X, false) => "tick x minor",
        (Side::Y, true) => "tick y major",
        (Side::Y, false) => "tick y minor",
    };
    let attrs = format!("class=\"{cls}\" data-value=\"{value:e}\" {TICK}");
    match side {
        Side::X => {
            if major {
                svg.line((p, a.y), (p, a.y + a.h), GRID);
            }
            svg.line((p, a.y + a.h), (p, a.y + a.h + len), &attrs);
        }
        Side::Y => {
            if major {
                svg.line((a.x, p), (a.x + a.w, p), GRID);
            }
            svg.line((a.x - len, p), (a.x, p), &attrs);
        }
    }
}

/// The ticks of one log axis: every decade labelled, 2..9 times it not.
fn log_ticks(svg: &mut Svg, a: Rect, side: Side, s: &LogScale) {
    for (e, v) in (s.lo..=s.hi).zip(s.decades()) {
        let p = s.px(v);
        tick(svg, a, side, p, v, true);
        let (at, anchor) = match side {
            Side::X => ((p, a.y + a.h + 18.0), Anchor::Middle),
            Side::Y => ((a.x - 9.0, p + 4.0), Anchor::End),
        };
        svg.text(at, 11.0, anchor, LABEL, &decade_label(e, ""));
    }
    for v in s.minor() {
        tick(svg, a, side, s.px(v), v, false);
    }
}

/// Draws a log-log panel's grid, frame, ticks (decades labelled, 2..9 unlabelled) and
/// the axis titles `x_title` (below) and `y_title` (left, rotated).
pub fn draw_log(svg: &mut Svg, p: &LogPanel, x_title: &str, y_title: &str) {
    let a = p.area;
    svg.open("class=\"axes\"");
    log_ticks(svg, a, Side::X, &p.x);
    log_ticks(svg, a, Side::Y, &p.y);
    svg.rect(a, FRAME, None);
    titles(svg, a, x_title, y_title, 36.0);
    svg.close();
}

/// Axis titles: `x_title` centred below the area, `y_title` rotated left of it
/// (`gap` pixels from the frame).
fn titles(svg: &mut Svg, a: Rect, x_title: &str, y_title: &str, gap: f64) {
    svg.text(
        (a.x + a.w / 2.0, a.y + a.h + gap),
        12.0,
        Anchor::Middle,
        "class=\"axis-title x\" fill=\"#222222\"",
        x_title,
    );
    if !y_title.is_empty() {
        let (x, y) = (a.x - 52.0, a.y + a.h / 2.0);
        let rot = format!(
            "class=\"axis-title y\" fill=\"#222222\" transform=\"rotate(-90 {} {})\"",
            num(x),
            num(y)
        );
        svg.text((x, y), 12.0, Anchor::Middle, &rot, y_title);
    }
}

/// Draws an x axis under `a` with a tick at every value of `ticks`, placed at
/// `px(value)` and labelled `label(value)`, and the title `x_title`.
pub fn draw_x(
    svg: &mut Svg,
    a: Rect,
    ticks: &[f64],
    px: impl Fn(f64) -> f64,
    label: impl Fn(f64) -> String,
    x_title: &str,
) {
    svg.open("class=\"axes\"");
    for &v in ticks {
        let x = px(v);
        tick(svg, a, Side::X, x, v, true);
        svg.text(
            (x, a.y + a.h + 18.0),
            11.0,
            Anchor::Middle,
            LABEL,
            &label(v),
        );
    }
    titles(svg, a, x_title, "", 36.0);
    svg.close();
}
