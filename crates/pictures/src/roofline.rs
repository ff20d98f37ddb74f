//! The roofline picture (`nnac profile --roofline FILE.svg`): two log-log panels,
//! attained operations per second against operations per DRAM byte (left) and per
//! SRAM byte read (right), under the configured hardware's ceilings; one marker per
//! layer (shape by kind, hover title with its figures, `data-*` attributes with the
//! numbers it is placed by), and faint markers above each dot-product layer at the
//! throughput its shape bound (and hardware bound, when known) allows.

use crate::axes::{draw_log, LogPanel};
use crate::figures::{LayerPoint, Roofline};
use crate::scale::{si, LogScale};
use crate::svg::{escape, num, Anchor, Rect, Svg};
use crate::work::Kind;

const WIDTH: f64 = 1200.0;
const HEIGHT: f64 = 640.0;
/// Pixels right of a panel where layers without traffic on its memory are drawn.
const NONE_STRIP: f64 = 22.0;

/// Which memory a panel measures intensity against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Memory {
    Dram,
    Sram,
}

impl Memory {
    fn intensity(self, p: &LayerPoint) -> Option<f64> {
        match self {
            Memory::Dram => p.dram_intensity(),
            Memory::Sram => p.sram_intensity(),
        }
    }
    fn class(self) -> &'static str {
        match self {
            Memory::Dram => "panel dram",
            Memory::Sram => "panel sram",
        }
    }
}

/// Fill colour and marker of a layer kind.
pub fn kind_colour(k: Kind) -> &'static str {
    match k {
        Kind::Dot => "#1f77b4",
        Kind::Pooled => "#ff7f0e",
        Kind::Simd => "#2ca02c",
    }
}

fn marker(svg: &mut Svg, k: Kind, title: Option<&str>) {
    let style = format!(
        "fill=\"{}\" fill-opacity=\"0.8\" stroke=\"#ffffff\" stroke-width=\"0.8\"",
        kind_colour(k)
    );
    match k {
        Kind::Dot => svg.circle((0.0, 0.0), 4.0, &style, title),
        Kind::Pooled => svg.rect(
            Rect {
                x: -4.0,
                y: -4.0,
                w: 8.0,
                h: 8.0,
            },
            &style,
            title,
        ),
        Kind::Simd => svg.polygon(&[(0.0, -5.0), (4.5, 3.5), (-4.5, 3.5)], &style, title),
    }
}

fn point_title(p: &LayerPoint, r: &Roofline) -> String {
    let mut t = format!(
        "{} ({}): {} ops in {} cycles = {}",
        p.name,
        p.kind.name(),
        p.ops,
        p.cycles,
        si(p.attained(r.clock_hz), "ops/s")
    );
    let per = |b: u64, i: Option<f64>| match i {
        Some(i) => format!("{b} B ({} ops/B)", num(i)),
        None => "none".to_string(),
    };
    t += &format!(
        "; DRAM {}; SRAM read {}",
        per(p.dram_bytes, p.dram_intensity()),
        per(p.sram_bytes, p.sram_intensity())
    );
    if let Some(b) = p.shape_bound {
        t += &format!("; shape bound {:.1}% of the MAC peak", 100.0 * b);
    }
    if let Some(b) = p.hardware_bound {
        t += &format!("; hardware bound {:.1}%", 100.0 * b);
    }
    t
}

/// A value and its neighbours by a factor of 1.5, so that no marker sits on a frame.
fn pad(v: f64) -> [f64; 2] {
    [v / 1.5, v * 1.5]
}

/// The decades of both axes of a panel.
fn decades(r: &Roofline, m: Memory, bw: f64) -> ((i32, i32), (i32, i32)) {
    let c = &r.ceilings;
    let ys = r
        .points
        .iter()
        .flat_map(|p| {
            let bounds = [p.shape_bound, p.hardware_bound]
                .into_iter()
                .flatten()
                .map(|b| b * c.mac_ops_per_s);
            std::iter::once(p.attained(r.clock_hz)).chain(bounds)
        })
        .chain([c.mac_ops_per_s, c.simd_ops_per_s]);
    let y = LogScale::covering(ys.flat_map(pad), 3);
    let xs = r
        .points
        .iter()
        .filter_map(|p| m.intensity(p))
        .chain([c.mac_ops_per_s / bw, c.simd_ops_per_s / bw]);
    let x = LogScale::covering(xs.flat_map(pad), 3);
    (x, y)
}

/// A roof: the memory slope `bw x` up to the ridge, then the flat `peak`.
fn roof(svg: &mut Svg, p: &LogPanel, bw: f64, peak: f64, attrs: &str) {
    let (x_lo, x_hi) = (10f64.powi(p.x.lo), 10f64.powi(p.x.hi));
    let y_lo = 10f64.powi(p.y.lo);
    let ridge = peak / bw;
    let start = x_lo.max(y_lo / bw);
    let mut pts = Vec::new();
    if start < ridge {
        pts.push(p.at(start, bw * start));
    }
    pts.push(p.at(ridge.clamp(x_lo, x_hi), peak));
    pts.push(p.at(x_hi, peak));
    svg.polyline(&pts, attrs);
}

fn panel(svg: &mut Svg, r: &Roofline, m: Memory, area: Rect) {
    let c = &r.ceilings;
    let (bw, memory) = match m {
        Memory::Dram => (c.dram_bytes_per_s, "DRAM"),
        Memory::Sram => (c.sram_bytes_per_s, "SRAM ports"),
    };
    let (x, y) = decades(r, m, bw);
    let p = LogPanel::new(area, x, y);
    svg.open(&format!("class=\"{}\"", m.class()));
    let x_title = match m {
        Memory::Dram => "operational intensity (ops per DRAM byte)",
        Memory::Sram => "operational intensity (ops per SRAM byte read)",
    };
    draw_log(svg, &p, x_title, "attained throughput (ops/s)");
    svg.text(
        (area.x, area.y - 10.0),
        13.0,
        Anchor::Start,
        "font-weight=\"bold\" fill=\"#222222\"",
        &format!("{memory}: {}", si(bw, "B/s")),
    );
    // The strip right of the panel for layers without traffic on this memory.
    let strip = area.x + area.w + NONE_STRIP / 2.0;
    svg.line(
        (strip, area.y),
        (strip, area.y + area.h),
        "class=\"no-traffic\" stroke=\"#cccccc\" stroke-dasharray=\"2 3\"",
    );
    svg.text(
        (strip, area.y - 4.0),
        9.0,
        Anchor::Middle,
        "fill=\"#666666\"",
        "none",
    );
    svg.open("class=\"roofs\"");
    roof(
        svg,
        &p,
        bw,
        c.mac_ops_per_s,
        "class=\"roof mac\" stroke=\"#b22222\" stroke-width=\"2\"",
    );
    roof(
        svg,
        &p,
        bw,
        c.simd_ops_per_s,
        "class=\"roof simd\" stroke=\"#2e8b57\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"",
    );
    let right = area.x + area.w - 4.0;
    for (peak, what, colour) in [
        (c.mac_ops_per_s, "MAC peak", "#b22222"),
        (c.simd_ops_per_s, "SIMD peak", "#2e8b57"),
    ] {
        svg.text(
            (right, p.y.px(peak) - 5.0),
            11.0,
            Anchor::End,
            &format!("fill=\"{colour}\""),
            &format!("{what} {}", si(peak, "ops/s")),
        );
    }
    svg.close();
    svg.open("class=\"points\"");
    for pt in &r.points {
        let cx = m.intensity(pt).map_or(strip, |i| p.x.px(i));
        let top = pt.attained(r.clock_hz);
        if top <= 0.0 {
            continue;
        }
        let cy = p.y.px(top);
        bounds(svg, &p, pt, c.mac_ops_per_s, (cx, cy));
        let bytes = match m {
            Memory::Dram => pt.dram_bytes,
            Memory::Sram => pt.sram_bytes,
        };
        svg.open(&format!(
            "class=\"point\" data-layer=\"{}\" data-kind=\"{}\" data-ops=\"{}\" data-cycles=\"{}\" data-bytes=\"{}\" transform=\"translate({},{})\"",
            escape(&pt.name),
            pt.kind.name(),
            pt.ops,
            pt.cycles,
            bytes,
            num(cx),
            num(cy)
        ));
        marker(svg, pt.kind, Some(&point_title(pt, r)));
        svg.close();
    }
    svg.close();
    svg.close();
}

/// The faint markers of a layer's shape and hardware bounds above its point.
fn bounds(svg: &mut Svg, p: &LogPanel, pt: &LayerPoint, peak: f64, (cx, cy): (f64, f64)) {
    let marks = [
        (pt.shape_bound, "bound shape", "#888888", ""),
        (
            pt.hardware_bound,
            "bound hardware",
            "#b22222",
            " stroke-dasharray=\"2 1\"",
        ),
    ];
    let mut top = cy;
    for (b, class, colour, dash) in marks {
        let Some(b) = b.filter(|b| *b > 0.0) else {
            continue;
        };
        let y = p.y.px(b * peak);
        top = top.min(y);
        svg.line(
            (cx - 5.0, y),
            (cx + 5.0, y),
            &format!(
                "class=\"{class}\" data-layer=\"{}\" stroke=\"{colour}\" stroke-opacity=\"0.55\" stroke-width=\"1.5\"{dash}",
                escape(&pt.name)
            ),
        );
    }
    if top < cy {
        svg.line(
            (cx, top),
            (cx, cy),
            "stroke=\"#999999\" stroke-opacity=\"0.3\" stroke-width=\"0.8\"",
        );
    }
}

fn legend(svg: &mut Svg, r: &Roofline, y: f64) {
    svg.open("class=\"legend\"");
    let mut x = 90.0;
    for k in [Kind::Dot, Kind::Pooled, Kind::Simd] {
        let n = r.points.iter().filter(|p| p.kind == k).count();
        svg.open(&format!(
            "transform=\"translate({},{})\"",
            num(x),
            num(y - 4.0)
        ));
        marker(svg, k, None);
        svg.close();
        let label = format!("{} ({n})", k.name());
        svg.text(
            (x + 10.0, y),
            11.0,
            Anchor::Start,
            "fill=\"#222222\"",
            &label,
        );
        x += 40.0 + 6.5 * label.len() as f64;
    }
    let hw = r.points.iter().any(|p| p.hardware_bound.is_some());
    let bounds = [
        ("stroke=\"#888888\" stroke-width=\"1.5\"", "shape bound"),
        (
            "stroke=\"#b22222\" stroke-width=\"1.5\" stroke-dasharray=\"2 1\"",
            if hw {
                "hardware bound"
            } else {
                "hardware bound (not in this report)"
            },
        ),
    ];
    for (stroke, label) in bounds {
        svg.line((x, y - 4.0), (x + 14.0, y - 4.0), stroke);
        svg.text(
            (x + 18.0, y),
            11.0,
            Anchor::Start,
            "fill=\"#222222\"",
            label,
        );
        x += 110.0;
    }
    let note = if r.without_compute.is_empty() {
        "one marker per layer of one frame; hover for its figures".to_string()
    } else {
        format!(
            "one marker per layer of one frame; hover for its figures; not drawn (no compute): {}",
            r.without_compute.join(", ")
        )
    };
    svg.text(
        (90.0, y + 20.0),
        10.0,
        Anchor::Start,
        "fill=\"#555555\"",
        &clip(&note, 190),
    );
    svg.close();
}

/// `s` cut to `n` characters with an ellipsis.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// The roofline as an SVG document.
pub fn roofline_svg(r: &Roofline) -> String {
    let mut svg = Svg::new(WIDTH, HEIGHT);
    svg.text(
        (WIDTH / 2.0, 24.0),
        15.0,
        Anchor::Middle,
        "font-weight=\"bold\" fill=\"#111111\"",
        &format!("Roofline: {}", r.title),
    );
    let area = |x| Rect {
        x,
        y: 70.0,
        w: 460.0,
        h: 440.0,
    };
    panel(&mut svg, r, Memory::Dram, area(100.0));
    panel(&mut svg, r, Memory::Sram, area(700.0));
    legend(&mut svg, r, HEIGHT - 42.0);
    svg.finish(&format!("Roofline: {}", r.title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::Ceilings;

    fn point(name: &str, kind: Kind, hardware_bound: Option<f64>) -> LayerPoint {
        LayerPoint {
            name: name.into(),
            kind,
            ops: 2_000_000,
            macs: 1_000_000,
            cycles: 1000,
            dram_bytes: 0,
            sram_bytes: 40_000,
            shape_bound: (kind != Kind::Simd).then_some(0.5),
            hardware_bound,
        }
    }

    fn figures(points: Vec<LayerPoint>) -> Roofline {
        Roofline {
            title: "t <&>".into(),
            clock_hz: 2_000_000_000,
            ceilings: Ceilings {
                mac_ops_per_s: 36.864e12,
                simd_ops_per_s: 192e9,
                dram_bytes_per_s: 34e9,
                sram_bytes_per_s: 448e9,
            },
            points,
            without_compute: vec!["input".into()],
        }
    }

    fn marks<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .collect()
    }

    #[test]
    fn hardware_bound_is_drawn_when_known_and_between_point_and_shape_bound() {
        let r = figures(vec![
            point("a", Kind::Dot, Some(0.25)),
            point("b", Kind::Pooled, None),
            point("c", Kind::Simd, None),
        ]);
        let svg = roofline_svg(&r);
        let doc = roxmltree::Document::parse(&svg).expect("well-formed");
        // Two panels: one hardware mark each (layer a), two shape marks (a, b).
        let hw = marks(&doc, "bound hardware");
        assert_eq!(hw.len(), 2);
        assert!(hw.iter().all(|n| n.attribute("data-layer") == Some("a")));
        assert_eq!(marks(&doc, "bound shape").len(), 4);
        let y = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
        let shape_a = marks(&doc, "bound shape")
            .into_iter()
            .find(|n| n.attribute("data-layer") == Some("a"))
            .unwrap();
        // 0.25 x peak lies below 0.5 x peak: a larger y; both above the point
        // (2e6 ops in 1000 cycles at 2 GHz = 4 Tops/s < 9.2 Tops/s).
        assert!(y(&hw[0], "y1") > y(&shape_a, "y1"));
        let pt = doc
            .descendants()
            .find(|n| n.attribute("data-layer") == Some("a") && n.has_tag_name("g"))
            .unwrap();
        let t = pt.attribute("transform").unwrap();
        let cy: f64 = t
            .trim_end_matches(')')
            .split(',')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(y(&hw[0], "y1") < cy);
        assert!(svg.contains(">hardware bound</text>"));
        assert_eq!(marks(&doc, "point").len(), 6);
    }

    #[test]
    fn without_hardware_bounds_the_legend_says_so() {
        let svg = roofline_svg(&figures(vec![point("a", Kind::Dot, None)]));
        roxmltree::Document::parse(&svg).expect("well-formed");
        assert!(svg.contains("hardware bound (not in this report)"));
        assert!(svg.contains("Roofline: t &lt;&amp;&gt;"));
    }

    #[test]
    fn an_empty_profile_still_draws_axes() {
        let svg = roofline_svg(&figures(Vec::new()));
        let doc = roxmltree::Document::parse(&svg).expect("well-formed");
        assert!(marks(&doc, "point").is_empty());
        assert!(doc
            .descendants()
            .any(|n| n.attribute("class") == Some("tick x major")));
    }
}
