//! `bench/release.sh --quick` (issue 32 item 6) through the real binary: the release
//! table has the machine, the commit, one row per API of the fixed plan (passthrough,
//! JWT, JWT + rate limit, transformation, GraphQL Q1 and Q3, SOAP), nginx's passthrough
//! when nginx is installed, the direct echo baselines, and a ratio in every ratio cell.
//! The numbers of a quick run are not measurements, only the table's shape is checked.
//! `--publish` puts the table at the top of (a copy of) docs/performance.md and moves the
//! table it replaces to "Earlier releases".

mod support;

use std::process::Command;

use support::{TempDir, BIN};

#[test]
fn release_script_writes_the_dated_table() {
    let dir = TempDir::new();
    let out = dir.path().join("release.md");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let page = dir.path().join("performance.md");
    let previous = "## Turnpike 0.0.1, commit 0000000, 2026-01-01 00:00 UTC\n\n| API | req/s |\n";
    std::fs::write(&page, with_latest(&docs_page(root), previous)).expect("page copy");
    let run = Command::new("bash")
        .arg(format!("{root}/bench/release.sh"))
        .args(["--quick", "--publish", "--page"])
        .arg(&page)
        .arg("--out")
        .arg(&out)
        .env("TURNPIKE_BIN", BIN)
        .output()
        .expect("run bench/release.sh");
    assert!(
        run.status.success(),
        "release.sh: {}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
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
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| API"))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
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
    ] {
        assert!(names.contains(&want), "{want} missing: {names:?}");
    }
    let nginx = Command::new("sh").args(["-c", "command -v nginx"]).output();
    let has_nginx = nginx.is_ok_and(|o| o.status.success());
    assert_eq!(
        names.iter().any(|n| n.starts_with("nginx")),
        has_nginx,
        "{names:?}"
    );
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
    assert_eq!(page.matches("## Turnpike ").count(), 2, "{page}");
    let after = |p: &str| {
        p[p.find(LATEST_END).expect("end")..p.find(EARLIER).expect("earlier")].to_string()
    };
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    assert_eq!(
        after(page),
        after(&docs_page(root)),
        "the page between the tables changed"
    );
}
