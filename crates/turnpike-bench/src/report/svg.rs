//! Hand-written SVG line charts: axes with round ticks, one polyline (and markers) per
//! series, a legend. No fonts to fetch, no scripts: the files open in any browser and parse
//! as XML. Each series is a `<g class="series" data-series="NAME">`, so tests and tools
//! can find it.

use std::fmt::Write as _;

/// One named line.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Fixed x ticks (value, label); None picks round numbers.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Log-scale x axis (message sizes, users spanning decades).
    pub x_log: bool,
}

const W: f64 = 760.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Escapes text for XML content and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick values covering [lo, hi], about `n` of them.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= n as f64)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut ticks = Vec::new();
    let mut v = start;
    // Up to the first tick at or above `hi`, so the axis covers every point.
    while ticks.len() < 50 {
        ticks.push(v);
        if v >= hi - 1e-9 {
            break;
        }
        v += step;
    }
    ticks
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 1000.0 || v.fract().abs() < 1e-9 {
        format!("{:.0}", v)
    } else if v.abs() >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

impl Chart {
    /// The chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let tx = |x: f64| if self.x_log { x.max(1e-9).log10() } else { x };
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|&(x, y)| (tx(x), y)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let (mut x0, mut x1) = pts
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        if pts.is_empty() {
            (x0, x1) = (0.0, 1.0);
        }
        if (x1 - x0).abs() < 1e-9 {
            x0 -= 0.5;
            x1 += 0.5;
        }
        let y1 = pts.iter().fold(0.0f64, |m, p| m.max(p.1));
        let y_ticks = nice_ticks(0.0, if y1 > 0.0 { y1 } else { 1.0 }, 6);
        let y1 = y_ticks.last().copied().unwrap_or(1.0).max(1e-9);
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
        let py = |y: f64| TOP + ph - y / y1 * ph;

        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
            LEFT + pw / 2.0,
            esc(&self.title)
        );
        // Axes, grid and ticks.
        s.push_str("<g class=\"axes\" stroke=\"#999\">\n");
        for t in &y_ticks {
            let y = py(*t);
            let _ = writeln!(
                s,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" stroke=\"none\">{}</text>",
                LEFT + pw,
                LEFT - 6.0,
                y + 4.0,
                fmt_num(*t)
            );
        }
        let x_ticks: Vec<(f64, String)> = match (&self.x_ticks, self.x_log) {
            (Some(t), _) => t.iter().map(|(v, l)| (tx(*v), l.clone())).collect(),
            (None, true) => {
                let mut vals: Vec<f64> = self
                    .series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.0))
                    .collect();
                vals.sort_by(f64::total_cmp);
                vals.dedup();
                vals.into_iter().map(|v| (tx(v), fmt_num(v))).collect()
            }
            (None, false) => nice_ticks(x0, x1, 8)
                .into_iter()
                .filter(|v| *v >= x0 - 1e-9 && *v <= x1 + 1e-9)
                .map(|v| (v, fmt_num(v)))
                .collect(),
        };
        for (v, label) in &x_ticks {
            let x = px(*v);
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" stroke=\"none\">{}</text>",
                TOP + ph,
                TOP + ph + 5.0,
                TOP + ph + 18.0,
                esc(label)
            );
        }
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{:.1}\"/>\
             <line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>\n</g>",
            TOP + ph,
            TOP + ph,
            LEFT + pw,
            TOP + ph
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            LEFT + pw / 2.0,
            H - 12.0,
            esc(&self.x_label),
            TOP + ph / 2.0,
            esc(&self.y_label)
        );
        // Series and legend.
        for (i, series) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let coords: Vec<String> = series
                .points
                .iter()
                .map(|&(x, y)| (tx(x), y))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .map(|(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                "<g class=\"series\" data-series=\"{}\" stroke=\"{color}\" fill=\"{color}\">\
                 <polyline fill=\"none\" stroke-width=\"2\" points=\"{}\"/>",
                esc(&series.name),
                coords.join(" ")
            );
            if coords.len() <= 60 {
                for c in &coords {
                    if let Some((x, y)) = c.split_once(',') {
                        let _ = write!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\"/>");
                    }
                }
            }
            let ly = TOP + 10.0 + i as f64 * 18.0;
            let _ = writeln!(
                s,
                "<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke-width=\"3\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" stroke=\"none\" fill=\"#222\">{}</text>\n</g>",
                W - RIGHT + 15.0,
                W - RIGHT + 35.0,
                W - RIGHT + 40.0,
                ly + 4.0,
                esc(&series.name)
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = nice_ticks(0.0, 3333.0, 6);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.last().is_some_and(|v| *v >= 3333.0));
        assert!(
            t.windows(2)
                .all(|w| ((w[1] - w[0]) - 1000.0).abs() < 1e-6
                    || ((w[1] - w[0]) - 500.0).abs() < 1e-6)
        );
    }

    #[test]
    fn names_are_escaped() {
        let c = Chart {
            title: "a < b & c".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                name: "\"q\"".into(),
                points: vec![(1.0, 2.0)],
            }],
            x_ticks: None,
            x_log: false,
        };
        let svg = c.to_svg();
        assert!(svg.contains("a &lt; b &amp; c") && svg.contains("data-series=\"&quot;q&quot;\""));
    }
}
