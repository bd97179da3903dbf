//! Which charts a report draws from its rows: throughput and average latency against users,
//! message size and back-end delay; p90/p95/p99 against users; the percentile curve and
//! the latency density per users level. Each chart is (file name, [`Chart`]).

use std::collections::{BTreeMap, BTreeSet};

use super::svg::{Chart, Series};
use super::Row;
use crate::plan::Via;
use crate::stats::Summary;

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

type Stat = fn(&Summary) -> f64;

const THROUGHPUT: (&str, &str, Stat) = ("throughput", "Throughput (req/s)", |s| s.throughput_rps);
const AVERAGE: (&str, &str, Stat) = ("avg", "Average response time (ms)", |s| s.avg_ms);

/// Series named by `key`, x from `x`, y from `stat`, over `rows`.
fn series_by<'a>(
    rows: impl Iterator<Item = &'a Row>,
    key: impl Fn(&Row) -> String,
    x: impl Fn(&Row) -> f64,
    stat: Stat,
) -> Vec<Series> {
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        m.entry(key(r)).or_default().push((x(r), stat(&r.summary)));
    }
    m.into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect()
}

fn chart(title: String, x_label: &str, y_label: &str, series: Vec<Series>, x_log: bool) -> Chart {
    Chart {
        title,
        x_label: x_label.into(),
        y_label: y_label.into(),
        series,
        x_ticks: None,
        x_log,
    }
}

/// Every chart of the report.
pub fn all(rows: &[Row]) -> Vec<(String, Chart)> {
    let sizes: BTreeSet<usize> = rows.iter().map(|r| r.size).collect();
    let delays: BTreeSet<u64> = rows.iter().map(|r| r.delay_ms).collect();
    let mut out = Vec::new();
    for &size in &sizes {
        for &delay in &delays {
            let cell = || {
                rows.iter()
                    .filter(move |r| r.size == size && r.delay_ms == delay)
            };
            if cell().next().is_none() {
                continue;
            }
            for (tag, label, stat) in [THROUGHPUT, AVERAGE] {
                let series = series_by(cell(), |r| r.name.clone(), |r| r.users as f64, stat);
                let title = format!("{label} vs users ({size} B, {delay} ms delay)");
                out.push((
                    format!("{tag}-users-s{size}-d{delay}.svg"),
                    chart(title, "Concurrent users", label, series, false),
                ));
            }
            // Percentiles of the gateway scenarios (of the baselines when there are none).
            let has_gw = cell().any(|r| r.via == Via::Gateway);
            let pick = || cell().filter(move |r| (r.via == Via::Gateway) == has_gw);
            let mut series = Vec::new();
            for (p, stat) in [
                ("p90", (|s| s.p90_ms) as Stat),
                ("p95", |s| s.p95_ms),
                ("p99", |s| s.p99_ms),
            ] {
                series.extend(series_by(
                    pick(),
                    |r| format!("{} {p}", r.name),
                    |r| r.users as f64,
                    stat,
                ));
            }
            let title = format!("Response time percentiles vs users ({size} B, {delay} ms delay)");
            out.push((
                format!("percentiles-users-s{size}-d{delay}.svg"),
                chart(
                    title,
                    "Concurrent users",
                    "Response time (ms)",
                    series,
                    false,
                ),
            ));
        }
    }
    if sizes.len() > 1 {
        for &delay in &delays {
            for (tag, label, stat) in [THROUGHPUT, AVERAGE] {
                let rs = rows.iter().filter(|r| r.delay_ms == delay);
                let series = series_by(
                    rs,
                    |r| format!("{} {}u", r.name, r.users),
                    |r| r.size as f64,
                    stat,
                );
                let title = format!("{label} vs message size ({delay} ms delay)");
                out.push((
                    format!("{tag}-size-d{delay}.svg"),
                    chart(
                        title,
                        "Message size (bytes, log scale)",
                        label,
                        series,
                        true,
                    ),
                ));
            }
        }
    }
    if delays.len() > 1 {
        for &size in &sizes {
            for (tag, label, stat) in [THROUGHPUT, AVERAGE] {
                let rs = rows.iter().filter(|r| r.size == size);
                let series = series_by(
                    rs,
                    |r| format!("{} {}u", r.name, r.users),
                    |r| r.delay_ms as f64,
                    stat,
                );
                let title = format!("{label} vs back-end delay ({size} B)");
                out.push((
                    format!("{tag}-delay-s{size}.svg"),
                    chart(title, "Back-end delay (ms)", label, series, false),
                ));
            }
        }
    }
    let mut groups: BTreeMap<(String, usize, u64), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        groups.entry(r.group()).or_default().push(r);
    }
    for ((name, size, delay), mut g) in groups {
        g.sort_by_key(|r| r.users);
        let tag = format!("{}-s{size}-d{delay}", slug(&name));
        out.push((
            format!("percentile-curve-{tag}.svg"),
            percentile_curve(&name, size, delay, &g),
        ));
        out.push((
            format!("density-{tag}.svg"),
            density(&name, size, delay, &g),
        ));
    }
    out
}

/// Latency against percentile on the usual "number of nines" axis.
fn percentile_curve(name: &str, size: usize, delay: u64, g: &[&Row]) -> Chart {
    let nines = |p: f64| -(1.0 - p / 100.0).log10();
    let series = g
        .iter()
        .map(|r| Series {
            name: format!("{} users", r.users),
            points: r
                .summary
                .percentile_curve
                .iter()
                .filter(|(p, _)| *p < 100.0)
                .map(|&(p, ms)| (nines(p), ms))
                .collect(),
        })
        .collect();
    let ticks = [0.0, 90.0, 99.0, 99.9, 99.99]
        .iter()
        .map(|&p| (nines(p), format!("{p}%")))
        .collect();
    Chart {
        title: format!("Percentile curve: {name} ({size} B, {delay} ms delay)"),
        x_label: "Percentile".into(),
        y_label: "Response time (ms)".into(),
        series,
        x_ticks: Some(ticks),
        x_log: false,
    }
}

/// Probability density of latency (histogram normalised by count and bin width).
fn density(name: &str, size: usize, delay: u64, g: &[&Row]) -> Chart {
    let series = g
        .iter()
        .map(|r| {
            let h = &r.summary.histogram;
            let total: u64 = h.iter().map(|b| b.1).sum();
            let width = match h.as_slice() {
                [a, b, ..] => (b.0 - a.0).max(1e-9),
                _ => 1.0,
            };
            Series {
                name: format!("{} users", r.users),
                points: h
                    .iter()
                    .map(|&(upper, n)| {
                        (upper - width / 2.0, n as f64 / total.max(1) as f64 / width)
                    })
                    .collect(),
            }
        })
        .collect();
    chart(
        format!("Latency density: {name} ({size} B, {delay} ms delay)"),
        "Response time (ms)",
        "Density (1/ms)",
        series,
        false,
    )
}
