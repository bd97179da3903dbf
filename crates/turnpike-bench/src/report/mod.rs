//! `turnpike bench report DIR`: turns a matrix's `results.json` into the seeds' summary
//! table (markdown and CSV), the latency each gateway cell adds over its direct baseline,
//! the linear fit of latency against users (r²), the capacity answer (most users under a
//! latency objective, users level of peak throughput), SVG charts and an index.html;
//! GraphQL cells are named by their query (`graphql q3`, `direct GRAPHQL q3`) and get
//! their own section (`graphql.rs`); `--compare` adds published results beside the
//! measured rows (`compare.rs`, data from `crate::reference`). Reads files only: a report can be rebuilt at any
//! time from the results.

mod charts;
pub mod compare;
pub mod graphql;
mod table;

pub(crate) use table::md_table;
pub mod svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::matrix::{Cell, MatrixResults};
use crate::plan::Via;
use crate::reference::Reference;
use crate::stats::Summary;
use crate::BenchError;

/// Arguments of `turnpike bench report`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// A matrix output directory (holding results.json).
    #[arg(required_unless_present = "from_jtl")]
    pub dir: Option<PathBuf>,
    /// Instead of a matrix: a JMeter CSV result file (JTL, from JMeter or `bench run
    /// --jtl`); prints its Aggregate Report per label as Markdown.
    #[arg(long, conflicts_with = "dir")]
    pub from_jtl: Option<PathBuf>,
    /// Latency objectives, e.g. avg=100ms or p99=500ms (repeatable).
    #[arg(long, default_values_t = ["avg=100ms".to_string()])]
    pub slo: Vec<String>,
    /// Draw published results beside the measured rows: a bundled reference (seed-3.0,
    /// seed-2.6, graphql, coldfusion) or a reference YAML file (repeatable).
    #[arg(long)]
    pub compare: Vec<String>,
}

/// A latency statistic a service-level objective can bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    Avg,
    P50,
    P90,
    P95,
    P99,
    P999,
}

impl Metric {
    fn of(self, s: &Summary) -> f64 {
        match self {
            Metric::Avg => s.avg_ms,
            Metric::P50 => s.p50_ms,
            Metric::P90 => s.p90_ms,
            Metric::P95 => s.p95_ms,
            Metric::P99 => s.p99_ms,
            Metric::P999 => s.p999_ms,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Metric::Avg => "avg",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
        }
    }
}

/// A latency objective: `metric <= limit_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub metric: Metric,
    pub limit_ms: f64,
}

impl std::fmt::Display for Slo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} <= {} ms", self.metric.name(), self.limit_ms)
    }
}

/// Parses `avg=100ms`, `p99=0.5s`.
pub fn parse_slos(specs: &[String]) -> Result<Vec<Slo>, BenchError> {
    specs
        .iter()
        .map(|spec| {
            let (m, v) = spec.split_once('=').ok_or_else(|| {
                BenchError::Usage(format!("--slo must be METRIC=DURATION: {spec:?}"))
            })?;
            let metric = match m.trim() {
                "avg" => Metric::Avg,
                "p50" => Metric::P50,
                "p90" => Metric::P90,
                "p95" => Metric::P95,
                "p99" => Metric::P99,
                "p99.9" | "p999" => Metric::P999,
                other => {
                    return Err(BenchError::Usage(format!(
                        "--slo metric {other:?}: use avg, p50, p90, p95, p99 or p99.9"
                    )))
                }
            };
            let d = crate::run::parse_duration(v)
                .map_err(|e| BenchError::Usage(format!("--slo {spec}: {e}")))?;
            Ok(Slo {
                metric,
                limit_ms: d.as_secs_f64() * 1000.0,
            })
        })
        .collect()
}

/// One measured cell with its baseline.
#[derive(Debug, Clone)]
pub struct Row {
    /// `passthrough`, `get`, … or `direct GET` / `direct POST`.
    pub name: String,
    pub via: Via,
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    pub summary: Summary,
    pub cpu_pct: Option<f64>,
    pub rss_mb: Option<f64>,
    /// The direct baseline's average and p99, for gateway rows.
    pub direct: Option<(f64, f64)>,
}

impl Row {
    /// The group a row's users-curve belongs to.
    fn group(&self) -> (String, usize, u64) {
        (self.name.clone(), self.size, self.delay_ms)
    }
}

/// What a cell sends, as its baseline is keyed: the method, and a GraphQL cell's query
/// (`GRAPHQL q3`).
fn sends(c: &Cell) -> String {
    match c.graphql_query {
        Some(q) => format!("{} q{q}", c.method),
        None => c.method.clone(),
    }
}

/// A cell's name in the report: `passthrough`, `graphql q3`, `direct POST`,
/// `direct GRAPHQL q3`.
pub fn cell_name(c: &Cell) -> String {
    match (c.via, c.scenario) {
        (Via::Gateway, Some(s)) => match c.graphql_query {
            Some(q) => format!("{} q{q}", s.name()),
            None => s.name().to_owned(),
        },
        _ => format!("direct {}", sends(c)),
    }
}

/// The measured rows, baselines paired with gateway cells.
pub fn rows(results: &MatrixResults) -> Vec<Row> {
    let mut baselines: BTreeMap<(String, usize, usize, u64), (f64, f64)> = BTreeMap::new();
    for c in &results.cells {
        if let (Via::Direct, Some(r)) = (c.via, &c.result) {
            baselines.insert(
                (sends(c), c.users, c.size, c.delay_ms),
                (r.summary.avg_ms, r.summary.p99_ms),
            );
        }
    }
    results
        .cells
        .iter()
        .filter_map(|c| {
            let r = c.result.as_ref()?;
            let name = cell_name(c);
            let direct = match c.via {
                Via::Gateway => baselines
                    .get(&(sends(c), c.users, c.size, c.delay_ms))
                    .copied(),
                Via::Direct => None,
            };
            Some(Row {
                name,
                via: c.via,
                users: c.users,
                size: c.size,
                delay_ms: c.delay_ms,
                summary: r.summary.clone(),
                cpu_pct: r.resources.as_ref().map(|x| x.cpu_pct),
                rss_mb: r.resources.as_ref().map(|x| x.rss_avg_mb),
                direct,
            })
        })
        .collect()
}

/// The seeds' columns, then ours.
pub const COLUMNS: [&str; 22] = [
    "Scenario Name",
    "Memory Limit",
    "Concurrent Users",
    "Message Size (Bytes)",
    "Back-end Service Delay (ms)",
    "Error %",
    "Throughput (Requests/sec)",
    "Average Response Time (ms)",
    "Standard Deviation of Response Time (ms)",
    "99th Percentile of Response Time (ms)",
    "Gateway CPU (%)",
    "Gateway Memory RSS (MB)",
    "50th Percentile (ms)",
    "90th Percentile (ms)",
    "95th Percentile (ms)",
    "99.9th Percentile (ms)",
    "Min (ms)",
    "Max (ms)",
    "Received (KB/s)",
    "Sent (KB/s)",
    "Direct Average (ms)",
    "Added Latency (ms)",
];

fn cells_of(r: &Row) -> Vec<String> {
    let s = &r.summary;
    let opt = |v: Option<f64>, p: usize| v.map_or("-".to_owned(), |v| format!("{v:.p$}"));
    vec![
        r.name.clone(),
        "none".into(),
        r.users.to_string(),
        r.size.to_string(),
        r.delay_ms.to_string(),
        format!("{:.2}", s.error_pct),
        format!("{:.2}", s.throughput_rps),
        format!("{:.2}", s.avg_ms),
        format!("{:.2}", s.stddev_ms),
        format!("{:.2}", s.p99_ms),
        opt(r.cpu_pct, 1),
        opt(r.rss_mb, 1),
        format!("{:.2}", s.p50_ms),
        format!("{:.2}", s.p90_ms),
        format!("{:.2}", s.p95_ms),
        format!("{:.2}", s.p999_ms),
        format!("{:.2}", s.min_ms),
        format!("{:.2}", s.max_ms),
        format!("{:.1}", s.received_kbps),
        format!("{:.1}", s.sent_kbps),
        opt(r.direct.map(|d| d.0), 2),
        opt(r.direct.map(|d| s.avg_ms - d.0), 2),
    ]
}

/// The summary table as CSV.
pub fn csv(rows: &[Row]) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in rows {
        let line: Vec<String> = cells_of(r)
            .into_iter()
            .map(|c| {
                if c.contains([',', '"']) {
                    format!("\"{}\"", c.replace('"', "\"\""))
                } else {
                    c
                }
            })
            .collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

/// Least-squares line y = a + b x with its r².
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
}

/// Fits a line through `pts` (at least two distinct x).
pub fn linear_fit(pts: &[(f64, f64)]) -> Option<Fit> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy <= 0.0 {
        1.0
    } else {
        (sxy * sxy) / (sxx * syy)
    };
    Some(Fit {
        intercept: my - slope * mx,
        slope,
        r2,
    })
}

/// Rows grouped by (name, size, delay), each sorted by users.
fn groups(rows: &[Row]) -> BTreeMap<(String, usize, u64), Vec<&Row>> {
    let mut g: BTreeMap<_, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        g.entry(r.group()).or_default().push(r);
    }
    for v in g.values_mut() {
        v.sort_by_key(|r| r.users);
    }
    g
}

/// The fewest distinct users levels a line is fitted (and extrapolated) from: two points
/// always lie on a line, so a fit through them says nothing about the curve and its r² is
/// 1 by construction.
pub const MIN_FIT_LEVELS: usize = 3;

/// Distinct users levels measured in a group.
fn levels(group: &[&Row]) -> usize {
    let mut users: Vec<usize> = group.iter().map(|r| r.users).collect();
    users.dedup();
    users.len()
}

/// Why a group gets no fitted line, when it gets none.
fn too_few_levels(group: &[&Row]) -> Option<String> {
    let n = levels(group);
    (n < MIN_FIT_LEVELS)
        .then(|| format!("not extrapolated: {n} users level(s) measured, {MIN_FIT_LEVELS} needed"))
}

/// The capacity answer for one group: most users meeting `slo` (measured, and estimated
/// from the fit when at least [`MIN_FIT_LEVELS`] levels were measured), and the users
/// level of peak throughput.
pub fn capacity(group: &[&Row], slo: &Slo) -> (Option<usize>, Option<f64>, Option<usize>) {
    let measured = group
        .iter()
        .filter(|r| slo.metric.of(&r.summary) <= slo.limit_ms && r.summary.error_pct < 1.0)
        .map(|r| r.users)
        .max();
    let pts: Vec<(f64, f64)> = group
        .iter()
        .map(|r| (r.users as f64, slo.metric.of(&r.summary)))
        .collect();
    let estimated = linear_fit(&pts)
        .filter(|_| levels(group) >= MIN_FIT_LEVELS)
        .filter(|f| f.slope > 0.0)
        .map(|f| (slo.limit_ms - f.intercept) / f.slope)
        .filter(|u| *u > 0.0);
    let peak = group
        .iter()
        .max_by(|a, b| {
            a.summary
                .throughput_rps
                .total_cmp(&b.summary.throughput_rps)
        })
        .map(|r| r.users);
    (measured, estimated, peak)
}

/// p50, p90, p95, p99 and p99.9 of every row (the summary's seed layout has p99 only).
fn percentile_table(rows: &[Row]) -> String {
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.summary;
            let mut row = vec![
                r.name.clone(),
                r.users.to_string(),
                r.size.to_string(),
                r.delay_ms.to_string(),
            ];
            row.extend(
                [s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.p999_ms]
                    .iter()
                    .map(|v| format!("{v:.2}")),
            );
            row
        })
        .collect();
    md_table(
        &[
            "Scenario",
            "Users",
            "Size (B)",
            "Delay (ms)",
            "p50 (ms)",
            "p90 (ms)",
            "p95 (ms)",
            "p99 (ms)",
            "p99.9 (ms)",
        ],
        &table,
    )
}

/// The markdown report, with a section per reference in `compared`.
pub fn markdown(
    results: &MatrixResults,
    rows: &[Row],
    slos: &[Slo],
    charts: &[(String, String)],
    compared: &[Reference],
) -> String {
    let m = &results.machine;
    let p = &results.plan;
    let mut s = format!(
        "# Turnpike capacity report: plan `{}`\n\n{}\n\n- Machine: {} ({} CPUs, {}, {} MB RAM); load generator, echo back end and gateway all on it\n\
         - Gateway: {}\n- Transport to the gateway: {}; secured scenarios: {}\n- Cores: {}\n\
         - Warm-up {} then {} measured per run; closed-loop users, one keep-alive connection each\n\n",
        p.name,
        p.description,
        m.label,
        m.cpus,
        m.cpu_model,
        m.memory_mb,
        results.gateway,
        results.setup.protocol_or_default(),
        results.setup.credential_or_default(),
        results.setup.pinning.describe(),
        p.warmup,
        p.duration
    );
    s.push_str("## Summary (seed layout)\n\n");
    let table: Vec<Vec<String>> = rows.iter().map(|r| cells_of(r)[..12].to_vec()).collect();
    s.push_str(&md_table(&COLUMNS[..12], &table));
    s.push_str("\n## Latency percentiles\n\n");
    s.push_str(&percentile_table(rows));
    s.push_str("\n## Added latency (gateway minus direct, same users, size and delay)\n\n");
    let added: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let (davg, dp99) = r.direct?;
            Some(vec![
                r.name.clone(),
                r.users.to_string(),
                r.size.to_string(),
                r.delay_ms.to_string(),
                format!("{davg:.2}"),
                format!("{:.2}", r.summary.avg_ms),
                format!("{:.2}", r.summary.avg_ms - davg),
                format!("{:.2}", r.summary.p99_ms - dp99),
            ])
        })
        .collect();
    s.push_str(&md_table(
        &[
            "Scenario",
            "Users",
            "Size (B)",
            "Delay (ms)",
            "Direct avg (ms)",
            "Gateway avg (ms)",
            "Added avg (ms)",
            "Added p99 (ms)",
        ],
        &added,
    ));
    s.push_str("\n## Latency against concurrency (linear fit, ms = a + b x users)\n\n");
    let mut fits = Vec::new();
    let mut caps = Vec::new();
    for ((name, size, delay), g) in groups(rows) {
        for metric in [Metric::Avg, Metric::P99] {
            let pts: Vec<(f64, f64)> = g
                .iter()
                .map(|r| (r.users as f64, metric.of(&r.summary)))
                .collect();
            if let Some(f) = linear_fit(&pts).filter(|_| levels(&g) >= MIN_FIT_LEVELS) {
                fits.push(vec![
                    name.clone(),
                    size.to_string(),
                    delay.to_string(),
                    metric.name().into(),
                    format!("{:.3}", f.intercept),
                    format!("{:.4}", f.slope),
                    format!("{:.4}", f.r2),
                ]);
            }
        }
        for slo in slos {
            let (measured, estimated, peak) = capacity(&g, slo);
            let fit = match (estimated, too_few_levels(&g)) {
                (Some(u), _) => format!("{u:.0}"),
                (None, Some(why)) => why,
                (None, None) => "-".into(),
            };
            caps.push(vec![
                name.clone(),
                size.to_string(),
                delay.to_string(),
                slo.to_string(),
                measured.map_or("none measured".into(), |u| u.to_string()),
                fit,
                peak.map_or("-".into(), |u| u.to_string()),
            ]);
        }
    }
    if fits.is_empty() {
        let _ = writeln!(
            s,
            "No line fitted: every scenario was measured at fewer than {MIN_FIT_LEVELS} users levels (two points always lie on a line), so the report extrapolates no capacity; measure at least {MIN_FIT_LEVELS} levels for a fit."
        );
    } else {
        s.push_str(&md_table(
            &[
                "Scenario",
                "Size (B)",
                "Delay (ms)",
                "Statistic",
                "a (ms)",
                "b (ms/user)",
                "r²",
            ],
            &fits,
        ));
    }
    s.push_str("\n## Capacity answer\n\nMost users meeting the objective among the levels measured (error % under 1), the level the linear fit predicts (only from at least three users levels: never extrapolated from two), and the users level where throughput peaked.\n\n");
    s.push_str(&md_table(
        &[
            "Scenario",
            "Size (B)",
            "Delay (ms)",
            "Objective",
            "Most users (measured)",
            "Users (fit)",
            "Peak throughput at users",
        ],
        &caps,
    ));
    s.push_str(&graphql::section(&results.cells));
    let this_run = compare::ThisRun {
        description: format!(
            "{} ({} CPUs, {}); {}, {}",
            m.label,
            m.cpus,
            m.cpu_model,
            results.setup.protocol_or_default(),
            results.setup.credential_or_default()
        ),
        gateway_vcpus: match &results.setup.pinning.gateway {
            Some(set) => crate::pin::parse_list(set).len().max(1),
            None => m.cpus.max(1),
        },
    };
    let measured: Vec<compare::Measured> = rows
        .iter()
        .filter(|r| r.via == Via::Gateway)
        .map(|r| compare::Measured {
            name: r.name.clone(),
            users: r.users,
            size: r.size,
            delay_ms: r.delay_ms,
            throughput: r.summary.throughput_rps,
            avg_ms: r.summary.avg_ms,
            p99_ms: r.summary.p99_ms,
            added_ms: r.direct.map(|d| r.summary.avg_ms - d.0),
        })
        .collect();
    for reference in compared {
        s.push_str(&compare::section(reference, &measured, &this_run));
    }
    let skipped: BTreeMap<String, String> = results
        .cells
        .iter()
        .filter_map(|c| Some((cell_name(c), c.skipped.clone()?)))
        .collect();
    if !skipped.is_empty() {
        s.push_str("\n## Skipped\n\n");
        for (name, why) in skipped {
            let _ = writeln!(s, "- {name}: {why}");
        }
    }
    s.push_str("\n## Charts\n\n");
    for (file, title) in charts {
        let _ = writeln!(s, "- [{title}](charts/{file})");
    }
    s
}

fn md_to_html(md: &str) -> String {
    // Enough markdown for our own output: headings, lists, tables, paragraphs.
    let mut html = String::new();
    let mut in_table = false;
    for line in md.lines() {
        if let Some(cells) = line.strip_prefix('|') {
            let cells: Vec<&str> = cells
                .trim_end_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue;
            }
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                html.push_str("<table>\n");
                in_table = true;
            }
            html.push_str("<tr>");
            for c in cells {
                let _ = write!(html, "<{tag}>{}</{tag}>", svg::esc(c));
            }
            html.push_str("</tr>\n");
            continue;
        }
        if in_table {
            html.push_str("</table>\n");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(html, "<h2>{}</h2>", svg::esc(h));
        } else if let Some(h) = line.strip_prefix("# ") {
            let _ = writeln!(html, "<h1>{}</h1>", svg::esc(h));
        } else if let Some(item) = line.strip_prefix("- ") {
            let _ = writeln!(html, "<p>&bull; {}</p>", svg::esc(item));
        } else if !line.is_empty() {
            let _ = writeln!(html, "<p>{}</p>", svg::esc(line));
        }
    }
    if in_table {
        html.push_str("</table>\n");
    }
    html
}

fn index_html(md: &str, charts: &[(String, String)]) -> String {
    let body = md_to_html(md.split("\n## Charts").next().unwrap_or(md));
    let mut imgs = String::new();
    for (file, title) in charts {
        let _ = writeln!(
            imgs,
            "<figure><img src=\"charts/{0}\" alt=\"{1}\"><figcaption>{1}</figcaption></figure>",
            svg::esc(file),
            svg::esc(title)
        );
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Turnpike capacity report</title>\n<style>\
         body{{font-family:sans-serif;margin:2em;max-width:1600px}}table{{border-collapse:collapse;font-size:12px;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}th{{background:#f3f3f3}}\
         figure{{display:inline-block;margin:8px}}</style></head><body>\n{body}<h2>Charts</h2>\n{imgs}\
         <p>Files: <a href=\"summary.md\">summary.md</a>, <a href=\"summary.csv\">summary.csv</a>, <a href=\"results.json\">results.json</a></p>\n</body></html>\n"
    )
}

/// Writes summary.md, summary.csv, charts/*.svg and index.html into `dir`; returns the
/// index path.
pub fn write(dir: &Path, slos: &[Slo]) -> Result<PathBuf, BenchError> {
    write_compared(dir, slos, &[])
}

/// [`write`], with the published results named in `compare` beside the measured rows.
pub fn write_compared(dir: &Path, slos: &[Slo], compare: &[String]) -> Result<PathBuf, BenchError> {
    let compared = compare
        .iter()
        .map(|name| Reference::load(name))
        .collect::<Result<Vec<_>, _>>()?;
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| BenchError::Usage(format!("reading {}: {e}", path.display())))?;
    let results: MatrixResults = serde_json::from_str(&text)
        .map_err(|e| BenchError::Usage(format!("{}: {e}", path.display())))?;
    let rows = rows(&results);
    let io = |p: &Path, e: std::io::Error| BenchError::Io(format!("writing {}: {e}", p.display()));
    let chart_dir = dir.join("charts");
    std::fs::create_dir_all(&chart_dir).map_err(|e| io(&chart_dir, e))?;
    let mut listed = Vec::new();
    for (file, chart) in charts::all(&rows) {
        let p = chart_dir.join(&file);
        std::fs::write(&p, chart.to_svg()).map_err(|e| io(&p, e))?;
        listed.push((file, chart.title));
    }
    let md = markdown(&results, &rows, slos, &listed, &compared);
    for (name, content) in [
        ("summary.md", md.clone()),
        ("summary.csv", csv(&rows)),
        ("index.html", index_html(&md, &listed)),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, content).map_err(|e| io(&p, e))?;
    }
    Ok(dir.join("index.html"))
}

/// `turnpike bench report`.
pub async fn run(args: ReportArgs) -> Result<(), BenchError> {
    let slos = parse_slos(&args.slo)?;
    if let Some(jtl) = &args.from_jtl {
        print!("{}", crate::jtl::markdown(&crate::jtl::summaries(jtl)?));
        return Ok(());
    }
    let dir = args
        .dir
        .as_ref()
        .ok_or_else(|| BenchError::Usage("give a matrix directory or --from-jtl FILE".into()))?;
    let index = write_compared(dir, &slos, &args.compare)?;
    println!("report written: {}", index.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_of_a_line_is_exact_and_noise_lowers_r2() {
        let f = linear_fit(&[(100.0, 12.0), (200.0, 22.0), (300.0, 32.0)]).expect("fit");
        assert!((f.slope - 0.1).abs() < 1e-12 && (f.intercept - 2.0).abs() < 1e-9);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        let g = linear_fit(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)]).expect("fit");
        assert!(g.r2 < 0.5);
        assert!(linear_fit(&[(1.0, 1.0)]).is_none());
        assert!(linear_fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    #[test]
    fn slos_parse() {
        let s = parse_slos(&["avg=100ms".into(), "p99=0.5s".into()]).expect("slos");
        assert_eq!(
            s[0],
            Slo {
                metric: Metric::Avg,
                limit_ms: 100.0
            }
        );
        assert_eq!(
            s[1],
            Slo {
                metric: Metric::P99,
                limit_ms: 500.0
            }
        );
        assert!(parse_slos(&["p42=1s".into()]).is_err());
        assert!(parse_slos(&["avg".into()]).is_err());
    }
}
