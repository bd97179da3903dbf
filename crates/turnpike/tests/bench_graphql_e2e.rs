//! `turnpike bench matrix` with the `graphql` scenario through the real binary: the
//! matrix starts its own echo, `turnpike echo --graphql` and a gateway with the secured
//! Star Wars GRAPHQL API, then runs query 1 and query 3 (each a cell, with its direct
//! baseline). Every GraphQL cell ran, with throughput and no errors, and the report names
//! the queries. A few seconds: one users level, short runs.

mod support;

use std::process::Command;

use support::{TempDir, BIN};

#[test]
fn a_tiny_graphql_matrix_measures_query_1_and_3_through_the_gateway() {
    let dir = TempDir::new();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "name: tiny-graphql\nscenarios: [graphql]\nusers: [2]\nsizes: [50]\ndelays_ms: [0]\n\
         graphql_queries: [1, 3]\nwarmup: 100ms\nduration: 700ms\n",
    )
    .expect("plan");
    let out = dir.path().join("out");
    let status = Command::new(BIN)
        .args([
            "--log",
            "warn",
            "bench",
            "matrix",
            "--threads",
            "1",
            "--plan",
        ])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .status()
        .expect("run the matrix");
    assert!(status.success(), "matrix: {status}");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results");
    let results: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cells = results["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4, "{text}");
    for via in ["direct", "gateway"] {
        for q in [1, 3] {
            let c = cells
                .iter()
                .find(|c| c["via"] == via && c["graphql_query"] == q)
                .unwrap_or_else(|| panic!("{via} q{q} missing: {text}"));
            assert!(c["skipped"].is_null(), "{c}");
            let s = &c["result"]["summary"];
            assert!(s["throughput_rps"].as_f64().unwrap_or(0.0) > 0.0, "{c}");
            assert_eq!(s["errors"], 0, "{via} q{q}: {s}");
        }
    }
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(
        md.contains("graphql q3") && md.contains("## GraphQL"),
        "{md}"
    );
}
