//! The files of a run: `results.json`, `front.csv`, `front.svg` and one HwConfig
//! TOML per front point (`hw/front-NN.toml`, ready for `nnac compile --hw`), and the
//! text summary.

use crate::objective::{Metrics, ModelMetrics};
use crate::results::{CostTier, Exact, PointRecord, Results};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The metrics a point is reported by: exact when known, else analytical.
fn reported(p: &PointRecord) -> (&Metrics, &'static str) {
    match p.exact.as_ref().and_then(Exact::metrics) {
        Some(m) => (m, "exact"),
        None => (&p.analytic, "analytic"),
    }
}

/// The front as CSV: one row per front point.
pub fn front_csv(r: &Results) -> String {
    let mut s = String::from("rank,point,values,model,latency_ms,fps,area_mm2,energy_mj,edp_mj_ms,sram_bytes,analytic_latency_ms,config\n");
    for (k, &i) in r.front.iter().enumerate() {
        let p = &r.points[i];
        let (m, tier) = reported(p);
        let _ = writeln!(
            s,
            "{k},{},\"{}\",{tier},{:.6},{:.3},{:.4},{:.6},{:.9},{},{:.6},hw/front-{k:02}.toml",
            p.point
                .0
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(":"),
            p.values,
            m.latency_s * 1e3,
            m.fps,
            m.area_mm2,
            m.energy_j * 1e3,
            m.edp * 1e6,
            m.sram_bytes,
            p.analytic.latency_s * 1e3,
        );
    }
    s
}

/// The HwConfig TOML of a front point, with its figures and knobs as comments.
pub fn hw_toml(r: &Results, i: usize) -> String {
    let p = &r.points[i];
    let d = r.config.space.design(&p.point);
    let (m, tier) = reported(p);
    let mut s = String::new();
    let _ = writeln!(s, "# nnac tune front point: {}", p.values);
    let _ = writeln!(
        s,
        "# {tier}: {:.4} ms per mix frame, {:.1} frames/s, {:.2} mm^2, {:.4} mJ per frame",
        m.latency_s * 1e3,
        m.fps,
        m.area_mm2,
        m.energy_j * 1e3
    );
    let _ = writeln!(
        s,
        "# compile with: nnac compile MODEL --hw THIS.toml --resident-weights {}",
        if d.knobs.resident_weights {
            "auto"
        } else {
            "off"
        }
    );
    if d.knobs.mapping {
        let turned: Vec<&ModelMetrics> = m
            .models
            .iter()
            .filter(|mm| !mm.channels_on_rows.is_empty())
            .collect();
        if turned.is_empty() {
            s.push_str("# mapping = auto: no layer compiled channels-on-rows (none gains, or analytical figures only)\n");
        } else {
            s.push_str(
                "# mapping = auto: add the layers the exact tier turned channels-on-rows:\n",
            );
        }
        for mm in turned {
            let _ = writeln!(
                s,
                "#   {}: --channels-on-rows {}",
                mm.name,
                mm.channels_on_rows.join(",")
            );
        }
    }
    s.push_str(&d.hw.to_toml());
    s
}

/// Scales `v` from `[lo, hi]` to `[a, b]`.
fn scale(v: f64, lo: f64, hi: f64, a: f64, b: f64) -> f64 {
    if hi > lo {
        a + (v - lo) / (hi - lo) * (b - a)
    } else {
        (a + b) / 2.0
    }
}

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The front plot: latency (x) against area (y), colour by energy; every evaluated
/// point in grey, the front in colour and joined, the FSD baseline as a square.
pub fn front_svg(r: &Results) -> String {
    let (w, h, l, t, rm, b) = (860.0, 560.0, 80.0, 50.0, 170.0, 60.0);
    let pts: Vec<(f64, f64, f64)> = r
        .points
        .iter()
        .map(|p| {
            let (m, _) = reported(p);
            (m.latency_s * 1e3, m.area_mm2, m.energy_j * 1e3)
        })
        .filter(|v| v.0.is_finite() && v.1.is_finite())
        .collect();
    let base = r.baseline.as_ref().map(|b| {
        b.exact
            .as_ref()
            .and_then(Exact::metrics)
            .unwrap_or(&b.analytic)
    });
    let all_x = pts
        .iter()
        .map(|p| p.0)
        .chain(base.map(|m| m.latency_s * 1e3));
    let (x0, x1) = all_x.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let all_y = pts.iter().map(|p| p.1).chain(base.map(|m| m.area_mm2));
    let (y0, y1) = all_y.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let front: Vec<(f64, f64, f64)> = r
        .front
        .iter()
        .map(|&i| {
            let (m, _) = reported(&r.points[i]);
            (m.latency_s * 1e3, m.area_mm2, m.energy_j * 1e3)
        })
        .collect();
    let (e0, e1) = front
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.2), b.max(p.2)));
    let px = |x: f64| scale(x, x0, x1, l, w - rm);
    let py = |y: f64| scale(y, y0, y1, h - b, t);
    let colour = |e: f64| {
        let f = scale(e, e0, e1, 0.0, 1.0);
        format!(
            "rgb({},{},{})",
            (40.0 + 200.0 * f) as u8,
            (90.0 + 60.0 * (1.0 - f)) as u8,
            (220.0 - 180.0 * f) as u8
        )
    };
    let mut s = String::new();
    let _ = writeln!(s, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">");
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
    let tier = match r.config.cost {
        CostTier::Exact => "exact",
        CostTier::Analytic => "analytic search, exact front",
    };
    let models: Vec<String> = r
        .config
        .models
        .iter()
        .map(|m| format!("{} x{}", m.name, m.weight))
        .collect();
    let _ = writeln!(s, "<text x=\"{l}\" y=\"24\" font-size=\"15\">nnac tune: Pareto front ({}; {}; tuner {}, {} evaluations)</text>", esc(&models.join(" + ")), tier, esc(&r.config.tuner), r.trace.len());
    // Axes with 5 ticks each.
    let _ = writeln!(
        s,
        "<line x1=\"{l}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        h - b,
        w - rm,
        h - b
    );
    let _ = writeln!(
        s,
        "<line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"black\"/>",
        h - b
    );
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        let (xv, yv) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{xv:.3}</text>",
            px(xv),
            h - b + 18.0
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{yv:.1}</text>",
            l - 6.0,
            py(yv) + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">latency per mix frame (ms)</text>",
        (l + w - rm) / 2.0,
        h - 18.0
    );
    let _ = writeln!(s, "<text transform=\"translate(20,{}) rotate(-90)\" text-anchor=\"middle\">NNA area (mm²)</text>", (t + h - b) / 2.0);
    for p in &pts {
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#bbb\"/>",
            px(p.0),
            py(p.1)
        );
    }
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>",
            path.join(" ")
        );
    }
    for (k, p) in front.iter().enumerate() {
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"6\" fill=\"{}\" stroke=\"black\"><title>front-{k:02}: {} ({:.4} ms, {:.2} mm², {:.4} mJ)</title></circle>",
            px(p.0),
            py(p.1),
            colour(p.2),
            esc(&r.points[r.front[k]].values),
            p.0,
            p.1,
            p.2
        );
    }
    if let Some(m) = base {
        let (x, y) = (px(m.latency_s * 1e3), py(m.area_mm2));
        let _ = writeln!(s, "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"none\" stroke=\"red\" stroke-width=\"2\"><title>FSD default 96x96, 32 MiB</title></rect>", x - 6.0, y - 6.0);
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"red\">FSD</text>",
            x + 9.0,
            y - 8.0
        );
    }
    // Legend.
    let lx = w - rm + 20.0;
    let _ = writeln!(
        s,
        "<text x=\"{lx}\" y=\"{}\">energy per frame</text>",
        t + 10.0
    );
    for k in 0..=4 {
        let e = e0 + (e1 - e0) * k as f64 / 4.0;
        let y = t + 30.0 + 22.0 * k as f64;
        let _ = writeln!(s, "<circle cx=\"{}\" cy=\"{y}\" r=\"6\" fill=\"{}\" stroke=\"black\"/><text x=\"{}\" y=\"{}\">{e:.4} mJ</text>", lx + 6.0, colour(e), lx + 18.0, y + 4.0);
    }
    let _ = writeln!(s, "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"#bbb\"/><text x=\"{}\" y=\"{}\">evaluated</text>", lx + 6.0, t + 150.0, lx + 18.0, t + 154.0);
    s.push_str("</svg>\n");
    s
}

/// Writes every output file into `dir`; returns the paths written.
pub fn write_all(r: &Results, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir.join("hw"))?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> std::io::Result<()> {
        let p = dir.join(name);
        let tmp = dir.join(format!(".{}.tmp", name.replace('/', "_")));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &p)?;
        written.push(p);
        Ok(())
    };
    put("results.json", r.to_json())?;
    put("front.csv", front_csv(r))?;
    put("front.svg", front_svg(r))?;
    for (k, &i) in r.front.iter().enumerate() {
        put(&format!("hw/front-{k:02}.toml"), hw_toml(r, i))?;
    }
    Ok(written)
}

/// The text summary printed at the end of a run.
pub fn summary(r: &Results) -> String {
    let o = r.config.objective;
    let unit = match o {
        crate::objective::Objective::Latency => "s/frame",
        crate::objective::Objective::Throughput => "frames/s",
        crate::objective::Objective::Energy => "J/frame",
        crate::objective::Objective::Edp => "J*s",
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "searched {} points of {} with {} ({} tier, budget {}, seed {}); {} evaluated exactly",
        r.trace.len(),
        r.config.space.size(),
        r.config.tuner,
        match r.config.cost {
            CostTier::Analytic => "analytic",
            CostTier::Exact => "exact",
        },
        r.config.budget,
        r.config.seed,
        r.exact_order.len()
    );
    let line = |s: &mut String, label: &str, m: &Metrics, values: &str| {
        let _ = writeln!(
            s,
            "{label:<10} {:>10.4} ms  {:>9.1} fps  {:>8.2} mm^2  {:>9.5} mJ  {}",
            m.latency_s * 1e3,
            m.fps,
            m.area_mm2,
            m.energy_j * 1e3,
            values
        );
        for mm in &m.models {
            let _ = writeln!(
                s,
                "{:<12}{}: {} cycles, {:.1}% MAC utilization",
                "",
                mm.name,
                mm.cycles,
                mm.utilization * 100.0
            );
        }
    };
    if let Some(b) = &r.baseline {
        match b.exact.as_ref() {
            Some(Exact::Metrics(m)) => line(&mut s, "FSD", m, "(default 96x96, 32 MiB; exact)"),
            Some(Exact::Error(e)) => {
                let _ = writeln!(s, "FSD        does not compile: {e}");
            }
            None => line(&mut s, "FSD", &b.analytic, "(default; analytic)"),
        }
    }
    match r.best {
        Some(i) => {
            let (m, tier) = reported(&r.points[i]);
            line(
                &mut s,
                "best",
                m,
                &format!(
                    "{} ({tier}; {} {:.6} {unit})",
                    r.points[i].values,
                    o.name(),
                    m.reported(o)
                ),
            );
        }
        None => {
            let _ = writeln!(s, "no exactly evaluated point meets the constraints");
        }
    }
    match r.beats_baseline {
        Some(i) => {
            let (m, _) = reported(&r.points[i]);
            let base = r
                .baseline
                .as_ref()
                .and_then(|b| b.exact.as_ref())
                .and_then(Exact::metrics);
            if let Some(b) = base {
                let _ = writeln!(
                    s,
                    "beats FSD at <= its area: {} ({:.2}x on {}, {:.2} vs {:.2} mm^2)",
                    r.points[i].values,
                    b.value(o) / m.value(o).max(1e-300),
                    o.name(),
                    m.area_mm2,
                    b.area_mm2
                );
            }
        }
        None => {
            let _ = writeln!(
                s,
                "no evaluated point beats FSD on {} at equal or smaller area",
                o.name()
            );
        }
    }
    let _ = writeln!(
        s,
        "front: {} points (exact), analytic front: {} points",
        r.front.len(),
        r.analytic_front.len()
    );
    match r.spearman {
        Some(rho) => {
            let _ = writeln!(
                s,
                "Spearman (analytic vs exact latency) over {} points: {rho:.3}",
                r.exact_order.len()
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Spearman: needs at least 3 exactly evaluated points of different latency"
            );
        }
    }
    if !r.mapping.is_empty() {
        let _ = writeln!(
            s,
            "mapping knob turns {} layer(s) channels-on-rows (analytical cycles; the exact tier compiles them turned):",
            r.mapping.len()
        );
        for c in r.mapping.iter().take(12) {
            let _ = writeln!(
                s,
                "  {}/{}: {} -> {} cycles, utilization {:.1}% -> {:.1}%",
                c.model,
                c.layer,
                c.cycles_before,
                c.cycles_after,
                c.util_before * 100.0,
                c.util_after * 100.0
            );
        }
    }
    if !r.compare.is_empty() {
        let _ = writeln!(
            s,
            "tuner comparison (best {} after 1/8, 1/4, 1/2, all of the budget; hypervolume):",
            o.name()
        );
        for c in &r.compare {
            match &c.skipped {
                Some(why) => {
                    let _ = writeln!(s, "  {:<12} skipped: {why}", c.tuner);
                }
                None => {
                    let at: Vec<String> = c
                        .best_at
                        .iter()
                        .map(|(n, v)| {
                            format!("{n}: {}", v.map_or("-".into(), |v| format!("{v:.6}")))
                        })
                        .collect();
                    let _ = writeln!(
                        s,
                        "  {:<12} {}  hv {:.4}",
                        c.tuner,
                        at.join("  "),
                        c.hypervolume
                    );
                }
            }
        }
    }
    s
}
