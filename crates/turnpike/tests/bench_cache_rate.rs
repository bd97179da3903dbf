//! `bench/cache.sh --rate R` (the response cache's arms at one arrival rate, the bench
//! kit's open loop with a new key per request by `{seq}`) in a quick form through the real
//! binary: every arm served at the rate (the script fails an arm that falls short or sees
//! an error), a row per arm, and the cost lines give CPU ratios only (in an open loop every
//! arm's throughput is the rate). A debug build's quick numbers are not measurements.

mod support;

use support::{number, ratios_in, run_bench_script, TempDir, BIN};

#[test]
fn cache_at_a_fixed_rate_prints_each_arms_cpu_and_the_cache_cost() {
    let dir = TempDir::new();
    let out = run_bench_script(
        &dir,
        "cache.sh",
        &[
            "--rate",
            "300",
            "--duration",
            "1",
            "--rounds",
            "1",
            "--connections",
            "4",
            "--arms",
            "plain-unique miss adaptive once",
        ],
        &[("TURNPIKE_BIN", BIN), ("TURNPIKE_KIT", BIN)],
    );
    assert!(out.contains("open loop at 300 requests/s"), "{out}");
    for arm in ["plain-unique", "miss", "adaptive", "once"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("| {arm} |")))
            .unwrap_or_else(|| panic!("no row for {arm}: {out}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let rps = number(&cells[2].replace(',', ""));
        assert!((270.0..=330.0).contains(&rps), "{row}");
        assert_eq!(cells[9], "0", "non-2xx answers: {row}");
    }
    for arm in ["miss", "adaptive", "once"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{arm}/plain-unique:")))
            .unwrap_or_else(|| panic!("no cost line for {arm}: {out}"));
        assert!(!line.contains("throughput"), "{line}");
        let xs = ratios_in(line);
        assert_eq!(xs.len(), 2, "{line}");
        assert!(xs.iter().all(|x| *x > 0.0), "{line}");
    }
}
