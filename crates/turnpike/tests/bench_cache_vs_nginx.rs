//! `bench/cache-vs-nginx.sh` (what a storing cache miss costs Turnpike, beside nginx's
//! `proxy_cache` in the same run) in a quick form through the real binary and a real
//! nginx: it checks each cache answers a new key MISS then HIT, runs every arm with a new
//! key per request (wrk errors fail it), and prints each arm's medians and the cache's
//! cost for both proxies. A debug build's quick numbers are not measurements: the table's
//! shape is what is checked, and that nothing is left running.

mod support;

use support::{number, ratios_in, run_bench_script, TempDir, BIN};

const ARMS: [&str; 6] = [
    "tp-plain",
    "tp-miss",
    "nginx-plain",
    "nginx-miss",
    "tp-once",
    "nginx-once",
];

#[test]
fn cache_vs_nginx_prints_every_arm_and_both_caches_costs() {
    let dir = TempDir::new();
    let out = run_bench_script(
        &dir,
        "cache-vs-nginx.sh",
        &[
            "--duration",
            "1",
            "--rounds",
            "1",
            "--connections",
            "4",
            "--once",
        ],
        &[("TURNPIKE_BIN", BIN)],
    );

    // Per arm: name, req/s median, (min-max), CPU us/request median, (min-max).
    for arm in ARMS {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(arm))
            .unwrap_or_else(|| panic!("no row for {arm}: {out}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 5, "{line}");
        assert!(number(f[1]) > 0.0 && number(f[3]) > 0.0, "{line}");
    }
    // The cost of each cache against its own proxy without one: CPU (ratio of the medians,
    // then the rounds' own ratios' median) and throughput.
    let costs: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("the cache's cost"))
        .skip(1)
        .collect();
    let named: Vec<&str> = costs
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        named,
        ["tp-miss", "tp-once", "nginx-miss", "nginx-once"],
        "{out}"
    );
    for line in costs {
        let xs = ratios_in(line);
        assert_eq!(xs.len(), 3, "{line}");
        assert!(xs.iter().all(|x| *x > 0.0), "{line}");
    }
}
