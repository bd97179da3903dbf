//! `bench/mcp-cpu.sh` (issue 31's benchmark: a tool call's process CPU against the same
//! REST call) in a quick form through the real binary: it checks each mode's answer
//! first (a 200; a tool result that is no error) and every answer wrk counts, then prints
//! one row per round and mode, the medians of each mode (req/s, CPU per request, minor
//! faults per request) and the three ratios. The numbers of a quick run of a debug build
//! are not measurements; the table's shape is what is checked, and that the script left
//! nothing running.

mod support;

use support::{number, ratios_in, run_bench_script, TempDir, BIN};

const MODES: [&str; 4] = ["rest-get", "mcp-get", "rest-post", "mcp-post"];

/// Both loads, one after the other (run at once, the closed loop's wrk would take the
/// cores the open loop's schedule needs): the closed loop, then `--rate`, the same table
/// from an open loop (the bench kit at a fixed rate, the tool calls' bodies from
/// `--body-file`), every mode served at the rate asked.
#[test]
fn mcp_cpu_script_prints_every_mode_and_the_ratios_closed_and_open_loop() {
    check_table(&run_script(2, &[]), 2);

    let out = run_script(1, &["--rate", "100"]);
    check_table(&out, 1);
    assert!(out.contains("--rate 100"), "{out}");
    for line in out
        .lines()
        .filter(|l| l.contains(BIN) && l.split_whitespace().count() == 8)
    {
        let rps = number(line.split_whitespace().nth(3).unwrap_or("0"));
        assert!((95.0..=105.0).contains(&rps), "{line}");
    }
}

fn run_script(rounds: u32, extra: &[&str]) -> String {
    let dir = TempDir::new();
    let rounds = rounds.to_string();
    let mut args = vec![BIN, "--duration", "1", "--rounds", &rounds];
    args.extend(["--connections", "4", "--warmup", "1"]);
    args.extend(extra);
    // The open loop's generator: this build's bench kit.
    run_bench_script(&dir, "mcp-cpu.sh", &args, &[("TURNPIKE_KIT", BIN)])
}

fn check_table(out: &str, rounds: usize) {
    // One row per round and mode: round, binary, mode, req/s, CPU us/request (user +
    // system), user, system, faults.
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 8 && f[1] == BIN && f[0].parse::<u32>().is_ok())
        .collect();
    assert_eq!(rows.len(), rounds * MODES.len(), "{out}");
    for r in &rows {
        assert!(MODES.contains(&r[2]), "{r:?}");
        assert!(number(r[3]) > 0.0 && number(r[4]) > 0.0, "{r:?}");
        let (user, sys) = (number(r[5]), number(r[6]));
        assert!(
            (user + sys - number(r[4])).abs() < 0.02,
            "user + system: {r:?}"
        );
        assert!(number(r[7]) >= 0.0, "{r:?}");
    }

    // The medians: every mode with req/s, CPU and faults, each "median (min-max)", then
    // the user and system medians.
    let medians: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("medians"))
        .take_while(|l| !l.starts_with("ratios"))
        .filter(|l| l.starts_with(BIN))
        .collect();
    assert_eq!(medians.len(), MODES.len(), "{out}");
    for (line, mode) in medians.iter().zip(MODES) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 10, "{line}");
        assert_eq!(f[1], mode, "{line}");
        assert!(number(f[2]) > 0.0 && number(f[4]) > 0.0, "{line}");
        for span in [f[3], f[5], f[7]] {
            let (lo, hi) = span
                .trim_matches(['(', ')'])
                .split_once('-')
                .unwrap_or_else(|| panic!("min-max in {line}"));
            assert!(number(lo) <= number(hi), "{line}");
        }
        assert!(number(f[8]) >= 0.0 && number(f[9]) >= 0.0, "{line}");
    }

    // The ratios of the tool calls to the REST calls, of CPU and of req/s.
    let ratios: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("ratios"))
        .filter(|l| l.starts_with(BIN))
        .collect();
    let pairs: Vec<&str> = ratios
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        pairs,
        [
            "mcp-get/rest-get",
            "mcp-post/rest-post",
            "mcp-get/rest-post"
        ],
        "{out}"
    );
    for line in ratios {
        let xs = ratios_in(line);
        // CPU and req/s as ratios of the medians, then the median of the rounds' own
        // CPU ratios.
        assert_eq!(xs.len(), 3, "{line}");
        assert!(xs.iter().all(|x| *x > 0.0), "{line}");
    }
}
