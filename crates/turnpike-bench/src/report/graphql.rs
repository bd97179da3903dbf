//! The report's GraphQL section (the `graphql` scenario, issue 15): per users level and
//! delay, each query's throughput through the gateway and straight to the back end, the
//! gateway's share of the direct throughput, and query N / query 1 (the seed's measure:
//! how much more a 4- or 9-operation query costs than a 1-operation one). Empty when the
//! results hold no measured GraphQL cell.

use std::collections::BTreeMap;

use crate::matrix::{Cell, MatrixResults};
use crate::plan::Via;

/// Throughput by (users, delay, query) of one side (gateway or direct).
type Rps = BTreeMap<(usize, u64, u8), f64>;

fn throughputs(cells: &[Cell]) -> (Rps, Rps) {
    let mut gateway = Rps::new();
    let mut direct = Rps::new();
    for c in cells {
        let (Some(q), Some(r)) = (c.graphql_query, &c.result) else {
            continue;
        };
        let side = match c.via {
            Via::Gateway => &mut gateway,
            Via::Direct => &mut direct,
        };
        side.insert((c.users, c.delay_ms, q), r.summary.throughput_rps);
    }
    (gateway, direct)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

fn rps(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}"))
}

/// The markdown section.
pub fn section(cells: &[Cell]) -> String {
    let (gateway, direct) = throughputs(cells);
    if gateway.is_empty() && direct.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = gateway
        .keys()
        .chain(direct.keys())
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|(users, delay, q)| {
            let g = gateway.get(&(users, delay, q)).copied();
            let d = direct.get(&(users, delay, q)).copied();
            let g1 = gateway.get(&(users, delay, 1)).copied();
            let d1 = direct.get(&(users, delay, 1)).copied();
            vec![
                format!("query {q}"),
                users.to_string(),
                delay.to_string(),
                rps(g),
                rps(d),
                ratio(g, d),
                ratio(g, g1),
                ratio(d, d1),
            ]
        })
        .collect();
    let mut s = String::from(
        "\n## GraphQL (WSO2's Star Wars queries: 1, 4 and 9 operations)\n\nThroughput per query and users through the gateway's GRAPHQL API (analysis, depth and complexity limits) and straight to the back end; query N / query 1 compares each query with query 1 at the same users and delay (the seed's measure of what more operations cost).\n\n",
    );
    s.push_str(&super::md_table(
        &[
            "Query",
            "Users",
            "Delay (ms)",
            "Gateway (req/s)",
            "Direct (req/s)",
            "Gateway / direct",
            "Query N / query 1 (gateway)",
            "Query N / query 1 (direct)",
        ],
        &rows,
    ));
    s
}

/// One line per users level and delay with both: query 3 / query 1 through the gateway
/// (and direct), for the matrix's closing lines.
pub fn ratio_lines(results: &MatrixResults) -> Vec<String> {
    let (gateway, direct) = throughputs(&results.cells);
    gateway
        .iter()
        .filter(|((_, _, q), _)| *q == 3)
        .filter_map(|(&(users, delay, _), &g3)| {
            let g1 = *gateway.get(&(users, delay, 1))?;
            let d = ratio(
                direct.get(&(users, delay, 3)).copied(),
                direct.get(&(users, delay, 1)).copied(),
            );
            Some(format!(
                "graphql query 3 / query 1 users={users} delay={delay}ms: {g3:.0} / {g1:.0} req/s = {} (direct {d})",
                ratio(Some(g3), Some(g1))
            ))
        })
        .collect()
}
