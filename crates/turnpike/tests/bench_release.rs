//! `bench/release.sh --quick` (issue 32 item 6) through the real binary: the release
//! table has the machine, the commit, one row per API of the fixed plan (passthrough,
//! JWT, JWT + rate limit, transformation, GraphQL Q1 and Q3, SOAP, a cache hit and the
//! same API uncached), nginx's passthrough when nginx is installed, the direct echo
//! baselines, and a ratio in every ratio cell; the cache hit's ratio to the uncached API;
//! an LLM table (streamed chat through an AI API and direct: calls/s, tokens/s, TTFT).
//! The numbers of a quick run are not measurements, only the table's shape is checked.
//! `--publish` puts the table at the top of (a copy of) docs/performance.md and moves the
//! table it replaces to "Earlier releases".

mod support;

use std::process::Command;

use support::{run_bench_script, TempDir, BIN};

#[test]
fn release_script_writes_the_dated_table() {
    let dir = TempDir::new();
    let out = dir.path().join("release.md");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let page = dir.path().join("performance.md");
    let previous = "## Turnpike 0.0.1, commit 0000000, 2026-01-01 00:00 UTC\n\n| API | req/s |\n";
    std::fs::write(&page, with_latest(&docs_page(root), previous)).expect("page copy");
    let (page_arg, out_arg) = (page.to_string_lossy(), out.to_string_lossy());
    run_bench_script(
        &dir,
        "release.sh",
        &[
            "--quick",
            "--publish",
            "--page",
            &page_arg,
            "--out",
            &out_arg,
        ],
        &[("TURNPIKE_BIN", BIN)],
    );
    let table = std::fs::read_to_string(&out).expect("table written");
    check_published(&std::fs::read_to_string(&page).expect("page"), &table);
    let mut lines = table.lines();
    let title = lines.next().unwrap_or_default();
    assert!(
        title.starts_with("## Turnpike ") && title.contains("commit ") && title.ends_with(" UTC"),
        "{title}"
    );
    assert!(
        table.contains("cores,") && table.contains("GiB RAM, Linux "),
        "{table}"
    );
    assert!(table.contains("| API | req/s | avg ms | p99 ms | added avg ms | errors % | vs echo direct | vs nginx passthrough |"));
    let rows = table_rows(&table, "| API |");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    for want in [
        "Passthrough (no auth)",
        "JWT-secured passthrough",
        "JWT + rate limit",
        "JWT + JSON transformation",
        "GraphQL (JWT) Q1",
        "GraphQL (JWT) Q3",
        "SOAP 1.2 proxy",
        "Echo called directly (POST)",
        "Cache hit, GET 50 B (`cache: { ttl: 60s }`)",
        "The same API uncached, GET 50 B",
        "Echo called directly (GET 50 B)",
    ] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }
    let nginx = Command::new("sh").args(["-c", "command -v nginx"]).output();
    let has_nginx = nginx.is_ok_and(|o| o.status.success());
    assert_eq!(
        names.iter().filter(|n| n.starts_with("nginx")).count(),
        if has_nginx { 2 } else { 0 },
        "nginx's POST and GET rows: {names:?}"
    );
    check_cache_ratio(&table, has_nginx);
    check_llm_rows(&table);
    for r in &rows {
        assert_eq!(r.len(), 8, "{r:?}");
        let rps: f64 = r[1].replace(',', "").parse().expect("req/s");
        assert!(rps > 0.0, "{r:?}");
        assert_eq!(r[5], "0.00", "errors in {r:?}");
        // A quick run of a debug build rounds some ratios to 0.00: a number is the shape.
        let _: f64 = r[6].parse().expect("ratio to direct");
        if has_nginx {
            let _: f64 = r[7].parse().expect("ratio to nginx");
        }
    }
}

/// The cells of the rows of the table whose header line starts with `header`.
fn table_rows<'a>(table: &'a str, header: &str) -> Vec<Vec<&'a str>> {
    table
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// The line under the table: the cache hit over the same API uncached (and nginx).
fn check_cache_ratio(table: &str, has_nginx: bool) {
    let line = table
        .lines()
        .find(|l| l.starts_with("Cache hit: "))
        .expect("the cache hit's ratios");
    let ratios: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.strip_suffix('x')?.parse().ok())
        .collect();
    assert_eq!(ratios.len(), if has_nginx { 2 } else { 1 }, "{line}");
    assert!(line.contains("x the same API uncached"), "{line}");
}

/// The LLM table: through the AI API and direct, streams completed without errors.
fn check_llm_rows(table: &str) {
    let rows = table_rows(table, "| LLM |");
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        names,
        [
            "Streamed chat through an AI API",
            "LLM echo called directly"
        ],
        "{table}"
    );
    for r in &rows {
        assert_eq!(r.len(), 9, "{r:?}");
        let number = |i: usize| -> f64 { r[i].replace(',', "").parse().expect("a number") };
        assert!(
            number(1) > 0.0 && number(2) > 0.0,
            "calls/s and tokens/s: {r:?}"
        );
        assert!(number(3) > 0.0 && number(4) >= number(3), "TTFT: {r:?}");
        assert_eq!(r[7], "0", "errors in {r:?}");
        let _ = number(8);
    }
    // What the gateway adds is a difference, so a number (maybe negative in a quick run).
    let _: f64 = rows[0][5].parse().expect("added TTFT p50");
    let _: f64 = rows[0][6].parse().expect("added TTFT p99");
}

fn docs_page(root: &str) -> String {
    std::fs::read_to_string(format!("{root}/docs/performance.md")).expect("docs/performance.md")
}

const LATEST: &str = "<!-- latest release table";
const LATEST_END: &str = "<!-- end of latest release table -->";
const EARLIER: &str = "<!-- earlier release tables";

/// `page` with `table` as its latest release table.
fn with_latest(page: &str, table: &str) -> String {
    let head = page.find(LATEST).expect("latest marker");
    let head = head + page[head..].find('\n').expect("marker line") + 1;
    let tail = page.find(LATEST_END).expect("end marker");
    format!("{}{table}{}", &page[..head], &page[tail..])
}

/// The new table is the latest, the one it replaced heads "Earlier releases" one level
/// down, and the rest of the page is as it was.
fn check_published(page: &str, table: &str) {
    let latest = page.find(LATEST).expect("latest marker kept");
    let end = page.find(LATEST_END).expect("end marker kept");
    assert!(
        page[latest..end].contains(table.trim()),
        "the new table is not the latest:\n{page}"
    );
    let earlier = page.find(EARLIER).expect("earlier marker kept");
    let moved = page[earlier..]
        .lines()
        .nth(2)
        .expect("a table under the earlier marker");
    assert_eq!(
        moved, "### Turnpike 0.0.1, commit 0000000, 2026-01-01 00:00 UTC",
        "{page}"
    );
    // One table more than the page had: the new one; the one it replaced moved down.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    assert_eq!(
        page.matches("## Turnpike ").count(),
        docs_page(root).matches("## Turnpike ").count() + 1,
        "{page}"
    );
    let after = |p: &str| {
        p[p.find(LATEST_END).expect("end")..p.find(EARLIER).expect("earlier")].to_string()
    };
    assert_eq!(
        after(page),
        after(&docs_page(root)),
        "the page between the tables changed"
    );
}
