//! The report from known results: the CSV and markdown tables parse with the seeds'
//! columns, added latency is gateway minus direct, the capacity answer and the fit follow the
//! numbers, and every chart is valid SVG (parsed by a real XML parser) with the expected
//! series.

use std::path::Path;

use turnpike_bench::matrix::{Cell, Machine, MatrixResults};
use turnpike_bench::plan::{Plan, Scenario, Via};
use turnpike_bench::report::{self, Metric, Slo, COLUMNS};
use turnpike_bench::run::RunResult;
use turnpike_bench::stats::{Outcome, Recorder, Window};

/// A run whose latencies are all `ms` and whose throughput is `rps`.
fn result(ms: u64, rps: u64) -> RunResult {
    let mut rec = Recorder::new(Window {
        warmup: std::time::Duration::ZERO,
        duration: std::time::Duration::from_secs(1),
    });
    for i in 0..rps {
        let end = std::time::Duration::from_micros(ms * 1000 + i);
        rec.record(
            end - std::time::Duration::from_millis(ms),
            end,
            Outcome::Status(200),
            100,
            100,
        );
    }
    RunResult {
        url: "http://x/".into(),
        method: "POST".into(),
        mode: "closed".into(),
        users: Some(1),
        rate: None,
        size: 50,
        threads: 1,
        warmup_s: 0.0,
        summary: rec.summary(),
        resources: None,
    }
}

fn cell(via: Via, scenario: Option<Scenario>, users: usize, ms: u64, rps: u64) -> Cell {
    Cell {
        via,
        scenario,
        method: "POST".into(),
        users,
        size: 50,
        delay_ms: 0,
        graphql_query: None,
        skipped: None,
        result: Some(result(ms, rps)),
    }
}

/// Passthrough adds 2 ms at every level; latency grows linearly with users (10 ms per 100).
fn results() -> MatrixResults {
    results_at(&[(100, 10, 1000), (200, 20, 1200), (300, 30, 1100)])
}

/// [`results`] at the given (users, ms, rps) levels.
fn results_at(levels: &[(usize, u64, u64)]) -> MatrixResults {
    let mut cells = Vec::new();
    for &(users, ms, rps) in levels {
        cells.push(cell(Via::Direct, None, users, ms, rps));
        cells.push(cell(
            Via::Gateway,
            Some(Scenario::Passthrough),
            users,
            ms + 2,
            rps - 100,
        ));
        cells.push(Cell {
            skipped: Some("not built yet".into()),
            result: None,
            ..cell(Via::Gateway, Some(Scenario::Transformation), users, 0, 0)
        });
    }
    MatrixResults {
        plan: Plan::load("quick").expect("plan"),
        machine: Machine {
            label: "test box".into(),
            cpus: 2,
            cpu_model: "x".into(),
            memory_mb: 1,
        },
        gateway: "started by the matrix".into(),
        setup: Default::default(),
        cells,
    }
}

fn write(dir: &Path, slos: &[Slo]) {
    write_results(dir, slos, &results());
}

fn write_results(dir: &Path, slos: &[Slo], results: &MatrixResults) {
    let json = serde_json::to_string(results).expect("json");
    std::fs::write(dir.join("results.json"), json).expect("write");
    report::write(dir, slos).expect("report");
}

fn csv_rows(dir: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(dir.join("summary.csv"))
        .expect("csv")
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

#[test]
fn csv_has_seed_columns_and_added_latency() {
    let dir = tempfile::tempdir().expect("tmp");
    write(
        dir.path(),
        &[Slo {
            metric: Metric::Avg,
            limit_ms: 25.0,
        }],
    );
    let rows = csv_rows(dir.path());
    assert_eq!(rows[0], COLUMNS.to_vec());
    assert_eq!(rows.len(), 1 + 6, "3 direct + 3 passthrough rows");
    let col = |name: &str| COLUMNS.iter().position(|c| *c == name).expect(name);
    for r in &rows[1..] {
        assert_eq!(r.len(), COLUMNS.len());
        let avg: f64 = r[col("Average Response Time (ms)")].parse().expect("avg");
        if r[0] == "passthrough" {
            let added: f64 = r[col("Added Latency (ms)")].parse().expect("added");
            assert!((added - 2.0).abs() < 0.05, "added {added}");
            let direct: f64 = r[col("Direct Average (ms)")].parse().expect("direct");
            assert!((avg - direct - 2.0).abs() < 0.05);
        } else {
            assert_eq!(r[0], "direct POST");
            assert_eq!(r[col("Added Latency (ms)")], "-");
        }
        let tput: f64 = r[col("Throughput (Requests/sec)")].parse().expect("tput");
        assert!(tput >= 900.0);
    }
}

#[test]
fn markdown_has_tables_fit_capacity_and_skips() {
    let dir = tempfile::tempdir().expect("tmp");
    write(
        dir.path(),
        &[Slo {
            metric: Metric::Avg,
            limit_ms: 25.0,
        }],
    );
    let md = std::fs::read_to_string(dir.path().join("summary.md")).expect("md");
    // The summary table: header, separator, 6 rows of 12 cells.
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| Scenario Name"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(table.len(), 2 + 6);
    assert!(table.iter().all(|l| l.matches('|').count() == 13));
    // The fit of passthrough avg: 12, 22, 32 ms at 100, 200, 300 users -> slope 0.1, r² 1.
    let fit = md
        .lines()
        .find(|l| l.starts_with("| passthrough | 50 | 0 | avg |"))
        .expect("fit row");
    let cells: Vec<&str> = fit.split('|').map(str::trim).collect();
    assert!(
        (cells[6].parse::<f64>().expect("slope") - 0.1).abs() < 0.001,
        "{fit}"
    );
    assert!(cells[7].parse::<f64>().expect("r2") > 0.999, "{fit}");
    // Capacity: avg <= 25 ms is met at 200 users (22 ms), not 300 (32 ms); the fit says 230;
    // throughput peaks at 200 users.
    let cap = md
        .lines()
        .find(|l| l.starts_with("| passthrough | 50 | 0 | avg <= 25 ms |"))
        .expect("capacity row");
    let cells: Vec<&str> = cap.split('|').map(str::trim).collect();
    assert_eq!(&cells[5..8], &["200", "230", "200"], "{cap}");
    assert!(md.contains("transformation: not built yet"));
}

#[test]
fn charts_are_valid_svg_with_expected_series() {
    let dir = tempfile::tempdir().expect("tmp");
    write(
        dir.path(),
        &[Slo {
            metric: Metric::P99,
            limit_ms: 100.0,
        }],
    );
    let charts = dir.path().join("charts");
    let mut names: Vec<String> = std::fs::read_dir(&charts)
        .expect("charts dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for expected in [
        "throughput-users-s50-d0.svg",
        "avg-users-s50-d0.svg",
        "percentiles-users-s50-d0.svg",
        "percentile-curve-passthrough-s50-d0.svg",
        "density-passthrough-s50-d0.svg",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    for name in &names {
        let text = std::fs::read_to_string(charts.join(name)).expect("svg");
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(doc
            .root_element()
            .descendants()
            .any(|n| n.has_tag_name("polyline")));
    }
    let text = std::fs::read_to_string(charts.join("throughput-users-s50-d0.svg")).expect("svg");
    let doc = roxmltree::Document::parse(&text).expect("xml");
    let series: Vec<(&str, usize)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .map(|g| {
            let line = g
                .children()
                .find(|c| c.has_tag_name("polyline"))
                .expect("polyline");
            let points = line
                .attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count();
            (g.attribute("data-series").unwrap_or(""), points)
        })
        .collect();
    assert_eq!(series, vec![("direct POST", 3), ("passthrough", 3)]);
    let text = std::fs::read_to_string(charts.join("percentiles-users-s50-d0.svg")).expect("svg");
    for p in ["passthrough p90", "passthrough p95", "passthrough p99"] {
        assert!(text.contains(&format!("data-series=\"{p}\"")), "{p}");
    }
    let index = std::fs::read_to_string(dir.path().join("index.html")).expect("index");
    assert!(index.contains("charts/throughput-users-s50-d0.svg") && index.contains("<table>"));
}

#[test]
fn graphql_cells_are_named_by_query_and_compared_with_query_1() {
    let mut cells = Vec::new();
    for (q, g, d) in [(1u8, 800, 1000), (3, 200, 400)] {
        let gql = |via, scenario, rps| Cell {
            method: "GRAPHQL".into(),
            graphql_query: Some(q),
            ..cell(via, scenario, 50, 5, rps)
        };
        cells.push(gql(Via::Direct, None, d));
        cells.push(gql(Via::Gateway, Some(Scenario::Graphql), g));
    }
    let mut r = results();
    r.cells = cells;
    let rows = turnpike_bench::report::rows(&r);
    let names: Vec<_> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "direct GRAPHQL q1",
            "graphql q1",
            "direct GRAPHQL q3",
            "graphql q3"
        ]
    );
    assert!(
        rows[3].direct.is_some(),
        "paired with its own query's baseline"
    );
    let md = turnpike_bench::report::graphql::section(&r.cells);
    assert!(
        md.contains("| query 3 | 50 | 0 | 200 | 400 | 0.50 | 0.25 | 0.40 |"),
        "{md}"
    );
    let lines = turnpike_bench::report::graphql::ratio_lines(&r);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("= 0.25 (direct 0.40)"), "{lines:?}");
}

/// Two levels always lie on a line: the report fits none, predicts no capacity from them
/// and says why, in the markdown and the HTML.
#[test]
fn two_levels_are_not_extrapolated() {
    let dir = tempfile::tempdir().expect("tmp");
    let slo = Slo {
        metric: Metric::Avg,
        limit_ms: 25.0,
    };
    write_results(
        dir.path(),
        &[slo],
        &results_at(&[(100, 10, 1000), (200, 20, 1200)]),
    );
    let md = std::fs::read_to_string(dir.path().join("summary.md")).expect("md");
    assert!(
        !md.lines()
            .any(|l| l.starts_with("| passthrough | 50 | 0 | avg |")),
        "no fit row from two levels: {md}"
    );
    assert!(md.contains("No line fitted"), "{md}");
    let cap = md
        .lines()
        .find(|l| l.starts_with("| passthrough | 50 | 0 | avg <= 25 ms |"))
        .expect("capacity row");
    let cells: Vec<&str> = cap.split('|').map(str::trim).collect();
    assert_eq!(cells[5], "200", "measured: 22 ms at 200 users: {cap}");
    assert_eq!(
        cells[6], "not extrapolated: 2 users level(s) measured, 3 needed",
        "{cap}"
    );
    let html = std::fs::read_to_string(dir.path().join("index.html")).expect("html");
    assert!(html.contains("not extrapolated: 2 users level(s) measured"));
}

/// p50, p90, p95 and p99 are in both summaries, not only the CSV.
#[test]
fn summaries_show_p50_p90_p95_p99() {
    let dir = tempfile::tempdir().expect("tmp");
    write(
        dir.path(),
        &[Slo {
            metric: Metric::Avg,
            limit_ms: 25.0,
        }],
    );
    let md = std::fs::read_to_string(dir.path().join("summary.md")).expect("md");
    let header = md
        .lines()
        .find(|l| l.starts_with("| Scenario | Users | Size (B) | Delay (ms) | p50"))
        .expect("percentile table");
    for p in ["p50 (ms)", "p90 (ms)", "p95 (ms)", "p99 (ms)"] {
        assert!(header.contains(p), "{header}");
    }
    // Every passthrough latency at 300 users is 32 ms, so every percentile says so.
    let row = md
        .lines()
        .find(|l| l.starts_with("| passthrough | 300 | 50 | 0 |"))
        .expect("passthrough row");
    let cells: Vec<f64> = row
        .split('|')
        .map(str::trim)
        .skip(5)
        .filter(|c| !c.is_empty())
        .map(|c| c.parse().expect("ms"))
        .collect();
    assert_eq!(cells.len(), 5, "{row}");
    assert!(cells.iter().all(|v| (v - 32.0).abs() < 0.1), "{row}");
    let html = std::fs::read_to_string(dir.path().join("index.html")).expect("html");
    for p in [
        "<th>p50 (ms)</th>",
        "<th>p90 (ms)</th>",
        "<th>p95 (ms)</th>",
        "<th>p99 (ms)</th>",
    ] {
        assert!(html.contains(p), "{p}");
    }
}

/// `--compare seed-3.0`: WSO2 3.0's published rows beside the measured cells of the same
/// scenario, users, size and delay, with measured / published and per-vCPU ratios, and
/// "not measured" where the run has no such cell; in the markdown and the HTML.
#[test]
fn compare_draws_the_published_rows_and_ratios_beside_the_measured_ones() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut results = results_at(&[(300, 80, 6000)]);
    for c in &mut results.cells {
        if c.scenario == Some(Scenario::Passthrough) {
            c.scenario = Some(Scenario::SecuredPassthrough);
        }
    }
    // A 4-vCPU gateway against WSO2's 2-vCPU c5.large: per-vCPU figures differ.
    results.machine.cpus = 4;
    std::fs::write(
        dir.path().join("results.json"),
        serde_json::to_string(&results).expect("json"),
    )
    .expect("write");
    report::write_compared(dir.path(), &[], &["seed-3.0".into()]).expect("report");
    let md = std::fs::read_to_string(dir.path().join("summary.md")).expect("md");
    assert!(md.contains("(cross-machine comparison)"), "{md}");
    assert!(md.contains("c5.large") && md.contains("2 vCPU"), "{md}");
    let measured = results
        .cells
        .iter()
        .find(|c| c.scenario == Some(Scenario::SecuredPassthrough))
        .and_then(|c| c.result.as_ref())
        .map(|r| r.summary.throughput_rps)
        .expect("measured");
    let row = md
        .lines()
        .find(|l| l.starts_with("| secured-passthrough | Passthrough | 300 | 50 | 0 |"))
        .expect("reference row at 300 users");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[6], "3355", "{row}");
    assert_eq!(cells[7], format!("{measured:.0}"), "{row}");
    assert_eq!(cells[8], format!("{:.2}x", measured / 3354.91), "{row}");
    assert_eq!(cells[9], format!("{:.0}", 3354.91 / 2.0), "{row}");
    assert_eq!(cells[10], format!("{:.0}", measured / 4.0), "{row}");
    assert_eq!(
        cells[11],
        format!("{:.2}x", (measured / 4.0) / (3354.91 / 2.0)),
        "{row}"
    );
    assert_eq!(cells[14], "252", "published p99: {row}");
    let missing = md
        .lines()
        .find(|l| l.starts_with("| secured-passthrough | Passthrough | 500 |"))
        .expect("reference row at 500 users");
    assert!(missing.contains("not measured"), "{missing}");
    assert!(
        md.contains("| transformation | Transformation | 1000 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.path().join("index.html")).expect("html");
    assert!(html.contains("<th>Measured / published</th>"), "{html}");
    assert!(html.contains("cross-machine comparison"));
    let err = report::write_compared(dir.path(), &[], &["seed-9".into()]).expect_err("unknown");
    assert!(err.to_string().contains("seed-3.0"), "{err}");
}
