//! The timeline picture (`nnac profile --timeline FILE.svg`): one frame as two lanes,
//! the DMA queue and the compute queue, each instruction a span coloured by its
//! layer, and below them the cycles of the critical timeline coloured by what they
//! are charged to (MAC busy, SIMD work, waiting on DMA or flags, SRAM ports, SIMD
//! unload). Host ops run between segments are drawn as labelled gaps. Spans under a
//! pixel are aggregated per pixel column (`bins.rs`), so a ResNet-50 frame of
//! thousands of instructions stays readable and small.

use crate::axes::draw_x;
use crate::bins::{draw_row, Row, Span};
use crate::charged::charged;
use crate::frame_scale::{FrameScale, HOST_GAP};
use crate::palette::{layer_colour, Cause};
use crate::roofline::clip;
use crate::scale::LinScale;
use crate::svg::{num, Anchor, Rect, Svg};
use nnac_runtime_sim::timing::{Profile, Unit};
use std::collections::BTreeMap;

const WIDTH: f64 = 1400.0;
const X0: f64 = 150.0;
const PLOT_W: f64 = 1220.0;
const LANE_H: f64 = 28.0;
const DMA_Y: f64 = 70.0;
const COMP_Y: f64 = 112.0;
const CAUSE_Y: f64 = 154.0;
const CAUSE_H: f64 = 16.0;

/// What the timeline drew (for reports and tests).
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSvg {
    pub svg: String,
    /// Spans under a pixel summed into columns.
    pub aggregated: usize,
    pub spans: usize,
}

fn lane_label(svg: &mut Svg, y: f64, h: f64, text: &str) {
    svg.text(
        (X0 - 10.0, y + h / 2.0 + 4.0),
        12.0,
        Anchor::End,
        "class=\"lane-label\" fill=\"#222222\"",
        text,
    );
}

/// The timeline of one frame of `p` as an SVG document titled `title`.
pub fn timeline_svg(title: &str, p: &Profile) -> TimelineSvg {
    let fs = FrameScale::new(p, X0, PLOT_W);
    let layer_index: BTreeMap<&str, usize> = p
        .layers
        .iter()
        .enumerate()
        .map(|(k, l)| (l.name.as_str(), k))
        .collect();
    let key_of = |i: usize| {
        p.layer_of
            .get(i)
            .and_then(|n| layer_index.get(n.as_str()))
            .copied()
            .unwrap_or(usize::MAX)
    };
    let (mut dma, mut comp, mut causes) = (Vec::new(), Vec::new(), Vec::new());
    for (k, seg) in fs.segments.iter().enumerate() {
        for t in p.timeline.instrs.iter().filter(|t| t.segment == seg.index) {
            let (stop, lane) = match t.unit {
                Unit::Dma => (t.end, &mut dma),
                Unit::Compute => (t.release, &mut comp),
                Unit::Stop => continue,
            };
            let name = p.layer_of.get(t.index).map_or("", String::as_str);
            lane.push(Span {
                x0: fs.px(k, t.start),
                x1: fs.px(k, stop),
                cycles: stop - t.start,
                key: key_of(t.index),
                title: format!(
                    "#{} {} {name}: cycles {}..{} ({})",
                    t.index,
                    p.mnemonics.get(t.index).copied().unwrap_or("?"),
                    t.start,
                    stop,
                    stop - t.start
                ),
            });
        }
        for c in charged(&p.timeline, seg.index) {
            let name = p.layer_of.get(c.instr).map_or("", String::as_str);
            causes.push(Span {
                x0: fs.px(k, c.start),
                x1: fs.px(k, c.end),
                cycles: c.end - c.start,
                key: c.cause as usize,
                title: format!(
                    "{}: {} cycles (#{} {name})",
                    c.cause.name(),
                    c.end - c.start,
                    c.instr
                ),
            });
        }
    }
    let mut svg = Svg::new(WIDTH, 330.0);
    let us = 1e6 / p.params.clock_hz as f64;
    let total_us = fs.cycles as f64 * us;
    svg.text(
        (WIDTH / 2.0, 24.0),
        15.0,
        Anchor::Middle,
        "font-weight=\"bold\" fill=\"#111111\"",
        &format!(
            "Timeline: {title}: one frame, {} cycles = {:.1} µs, {} segment(s), {} host op(s)",
            fs.cycles,
            total_us,
            fs.segments.len(),
            fs.segments
                .iter()
                .map(|s| s.host_after.len())
                .sum::<usize>()
        ),
    );
    lane_label(&mut svg, DMA_Y, LANE_H, "DMA queue");
    lane_label(&mut svg, COMP_Y, LANE_H, "compute queue");
    lane_label(&mut svg, CAUSE_Y, CAUSE_H, "cycles charged to");
    for (y, h) in [(DMA_Y, LANE_H), (COMP_Y, LANE_H), (CAUSE_Y, CAUSE_H)] {
        svg.rect(
            Rect {
                x: X0,
                y,
                w: PLOT_W,
                h,
            },
            "fill=\"#f6f6f6\"",
            None,
        );
    }
    let layer_name = |k: usize| {
        p.layers
            .get(k)
            .map_or("(no layer)".to_string(), |l| l.name.clone())
    };
    let colour = |k: usize| {
        if k == usize::MAX {
            "#999999"
        } else {
            layer_colour(k)
        }
    };
    let cause_colour = |k: usize| Cause::ALL.get(k).map_or("#999999", |c| c.colour());
    let cause_name = |k: usize| Cause::ALL.get(k).map_or("?", |c| c.name()).to_string();
    let mut aggregated = 0;
    svg.open("class=\"lane dma\"");
    aggregated += draw_row(
        &mut svg,
        &Row {
            y: DMA_Y,
            h: LANE_H,
            class: "span",
            colour: &colour,
            key_name: &layer_name,
        },
        &dma,
    );
    svg.close();
    svg.open("class=\"lane compute\"");
    aggregated += draw_row(
        &mut svg,
        &Row {
            y: COMP_Y,
            h: LANE_H,
            class: "span",
            colour: &colour,
            key_name: &layer_name,
        },
        &comp,
    );
    svg.close();
    svg.open("class=\"lane causes\"");
    aggregated += draw_row(
        &mut svg,
        &Row {
            y: CAUSE_Y,
            h: CAUSE_H,
            class: "span",
            colour: &cause_colour,
            key_name: &cause_name,
        },
        &causes,
    );
    svg.close();
    host_gaps(&mut svg, &fs);
    let axis = Rect {
        x: X0,
        y: DMA_Y,
        w: PLOT_W,
        h: CAUSE_Y + CAUSE_H - DMA_Y,
    };
    let ticks = LinScale {
        v0: 0.0,
        v1: total_us,
        p0: 0.0,
        p1: 1.0,
    }
    .ticks(10);
    draw_x(
        &mut svg,
        axis,
        &ticks,
        |v| fs.px_of_frame_cycle(v / us),
        num,
        "NNA time (µs; host-op time not modelled, drawn as gaps)",
    );
    legend(&mut svg, p);
    TimelineSvg {
        svg: svg.finish(&format!("Timeline: {title}")),
        aggregated,
        spans: dma.len() + comp.len() + causes.len(),
    }
}

fn host_gaps(svg: &mut Svg, fs: &FrameScale) {
    svg.open("class=\"host-ops\"");
    for (k, s) in fs.segments.iter().enumerate() {
        if s.host_after.is_empty() {
            continue;
        }
        let x = fs.px(k, s.end);
        let title = format!(
            "host op(s) after segment {}: {}",
            s.index,
            s.host_after.join("; ")
        );
        svg.rect(
            Rect {
                x: x + 2.0,
                y: DMA_Y - 4.0,
                w: HOST_GAP - 4.0,
                h: CAUSE_Y + CAUSE_H - DMA_Y + 8.0,
            },
            "class=\"host-gap\" fill=\"#fff3c4\" stroke=\"#c9a227\" stroke-width=\"1\"",
            Some(&title),
        );
        svg.text(
            (x + HOST_GAP / 2.0, DMA_Y - 8.0),
            9.0,
            Anchor::Middle,
            "fill=\"#8a6d00\"",
            "host",
        );
    }
    svg.close();
}

fn legend(svg: &mut Svg, p: &Profile) {
    svg.open("class=\"legend\"");
    let y = 240.0;
    let mut x = X0;
    svg.text(
        (X0 - 10.0, y + 9.0),
        11.0,
        Anchor::End,
        "fill=\"#222222\"",
        "causes:",
    );
    for c in Cause::ALL {
        svg.rect(
            Rect {
                x,
                y,
                w: 12.0,
                h: 12.0,
            },
            &format!("fill=\"{}\"", c.colour()),
            None,
        );
        svg.text(
            (x + 16.0, y + 10.0),
            11.0,
            Anchor::Start,
            "fill=\"#222222\"",
            c.name(),
        );
        x += 30.0 + 6.8 * c.name().len() as f64;
    }
    // The layers with most cycles.
    let mut top: Vec<(usize, u64)> = p
        .layers
        .iter()
        .enumerate()
        .map(|(k, l)| (k, l.cycles))
        .collect();
    top.sort_by_key(|&(k, c)| (std::cmp::Reverse(c), k));
    let y = 268.0;
    svg.text(
        (X0 - 10.0, y + 9.0),
        11.0,
        Anchor::End,
        "fill=\"#222222\"",
        "top layers:",
    );
    let mut x = X0;
    let mut row = 0;
    for &(k, c) in top.iter().take(12) {
        let label = format!(
            "{} {:.1}%",
            clip(&p.layers[k].name, 24),
            100.0 * c as f64 / p.total_cycles.max(1) as f64
        );
        let w = 30.0 + 6.6 * label.chars().count() as f64;
        if x + w > WIDTH - 10.0 {
            row += 1;
            x = X0;
            if row > 1 {
                break;
            }
        }
        let yy = y + 22.0 * f64::from(row);
        svg.rect(
            Rect {
                x,
                y: yy,
                w: 12.0,
                h: 12.0,
            },
            &format!("fill=\"{}\"", layer_colour(k)),
            None,
        );
        svg.text(
            (x + 16.0, yy + 10.0),
            11.0,
            Anchor::Start,
            "fill=\"#222222\"",
            &label,
        );
        x += w;
    }
    svg.close();
}
