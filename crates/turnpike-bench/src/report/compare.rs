//! The report's comparison with published results (`--compare seed-3.0`): each reference
//! row beside the measured cell of the same scenario, users, size and delay, with the
//! ratio measured / published for throughput, and per vCPU of the gateway where the two
//! machines differ. Labelled as what it is: a comparison across machines, load tools and
//! years, a rough position and never a like-for-like result.

use std::fmt::Write as _;

use super::table::md_table;
use crate::reference::{RefRow, Reference};

/// A measured gateway cell, as the comparison reads it.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The report's cell name (`secured-passthrough`, `graphql q1`).
    pub name: String,
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    pub throughput: f64,
    pub avg_ms: f64,
    pub p99_ms: f64,
    /// Average over the direct baseline's.
    pub added_ms: Option<f64>,
}

/// The measured run's machine, for the comparison's header.
#[derive(Debug, Clone)]
pub struct ThisRun {
    pub description: String,
    /// vCPUs the measured gateway had: its pinned core set, else the machine's CPUs.
    pub gateway_vcpus: usize,
}

fn matching<'a>(rows: &'a [Measured], r: &RefRow) -> Option<&'a Measured> {
    rows.iter().find(|m| {
        m.name == r.cell_name()
            && m.users == r.users
            && r.size.is_none_or(|s| s == m.size)
            && m.delay_ms == r.delay_ms
    })
}

fn num(v: Option<f64>, places: usize) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.places$}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".to_owned(),
    }
}

/// One table row: published, measured, ratios.
fn line(r: &RefRow, m: Option<&Measured>, ref_vcpus: f64, our_vcpus: f64) -> Vec<String> {
    let rps = m.map(|m| m.throughput);
    let per = |v: Option<f64>, n: f64| v.map(|v| v / n);
    let added = m.and_then(|m| m.added_ms);
    vec![
        r.cell_name(),
        r.name.clone(),
        r.users.to_string(),
        r.size.map_or("-".to_owned(), |s| s.to_string()),
        r.delay_ms.to_string(),
        num(r.throughput, 0),
        m.map_or("not measured".to_owned(), |_| num(rps, 0)),
        ratio(rps, r.throughput),
        num(per(r.throughput, ref_vcpus), 0),
        num(per(rps, our_vcpus), 0),
        ratio(per(rps, our_vcpus), per(r.throughput, ref_vcpus)),
        num(r.avg_ms, 2),
        num(m.map(|m| m.avg_ms), 2),
        num(r.p99_ms, 0),
        num(m.map(|m| m.p99_ms), 2),
        num(r.added_ms, 1),
        num(added, 2),
    ]
}

const HEADER: [&str; 17] = [
    "Scenario",
    "Published as",
    "Users",
    "Size (B)",
    "Delay (ms)",
    "Published (req/s)",
    "Measured (req/s)",
    "Measured / published",
    "Published per vCPU",
    "Measured per vCPU",
    "Per-vCPU ratio",
    "Published avg (ms)",
    "Measured avg (ms)",
    "Published p99 (ms)",
    "Measured p99 (ms)",
    "Published added (ms)",
    "Measured added (ms)",
];

/// The markdown section for one reference.
pub fn section(reference: &Reference, rows: &[Measured], this_run: &ThisRun) -> String {
    let ours = this_run.gateway_vcpus;
    let theirs = reference.hardware.vcpus;
    let mut s = format!(
        "\n## Compared with {} (cross-machine comparison)\n\n",
        reference.title
    );
    let _ = writeln!(s, "- Published: {}", reference.source);
    let _ = writeln!(
        s,
        "- Their gateway: {}, {} vCPU, {} GiB; {}",
        reference.hardware.gateway,
        theirs,
        reference.hardware.memory_gib,
        reference.hardware.others
    );
    let _ = writeln!(s, "- Their load: {}", reference.setup);
    let _ = writeln!(
        s,
        "- This run: {}; gateway on {ours} vCPU",
        this_run.description
    );
    s.push_str(
        "\nA cross-machine comparison: different hardware, load generators, networks and years. \
         Ratios place this run beside the published figures; they are not a like-for-like \
         result. Per-vCPU columns divide throughput by the vCPUs of each gateway's machine",
    );
    s.push_str(if ours as u32 == theirs {
        " (the same count here, so they repeat the plain ratio).\n\n"
    } else {
        " (they differ here: read those columns first).\n\n"
    });
    let table: Vec<Vec<String>> = reference
        .rows
        .iter()
        .map(|r| line(r, matching(rows, r), f64::from(theirs), ours as f64))
        .collect();
    s.push_str(&md_table(&HEADER, &table));
    s
}
