//! Published reference results (issue 32): the seeds' own tables, transcribed as data
//! under `bench/reference/` with the hardware and the source they came from, bundled in
//! the binary. `turnpike bench report --compare NAME` draws them beside the measured rows
//! (`report/compare.rs`). Only figures the publications state as numbers are transcribed;
//! nothing is read off a chart.

use serde::{Deserialize, Serialize};

use crate::BenchError;

/// The bundled references, by name.
pub const BUNDLED: [(&str, &str); 4] = [
    (
        "seed-3.0",
        include_str!("../../../bench/reference/seed-3.0.yaml"),
    ),
    (
        "seed-2.6",
        include_str!("../../../bench/reference/seed-2.6.yaml"),
    ),
    (
        "graphql",
        include_str!("../../../bench/reference/graphql.yaml"),
    ),
    (
        "coldfusion",
        include_str!("../../../bench/reference/coldfusion.yaml"),
    ),
];

/// The most rows a reference file may hold.
const MAX_ROWS: usize = 10_000;

/// One publication's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub name: String,
    pub title: String,
    /// Where the numbers were published.
    pub source: String,
    pub hardware: Hardware,
    /// How the load was made (tool, run length, transport, credential).
    pub setup: String,
    pub rows: Vec<RefRow>,
}

/// The machine the published gateway ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    pub gateway: String,
    /// vCPUs of the gateway's machine (per-vCPU figures divide by it).
    pub vcpus: u32,
    pub memory_gib: f64,
    #[serde(default)]
    pub others: String,
}

/// One published row; a figure the publication does not give is left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefRow {
    /// The publication's name for the scenario.
    pub name: String,
    /// The kit's scenario it corresponds to (`secured-passthrough`, `get`, …).
    pub scenario: String,
    #[serde(default)]
    pub graphql_query: Option<u8>,
    pub users: usize,
    /// Message size in bytes; left out: any size matches (a GraphQL query's is its own).
    #[serde(default)]
    pub size: Option<usize>,
    pub delay_ms: u64,
    #[serde(default)]
    pub error_pct: Option<f64>,
    #[serde(default)]
    pub throughput: Option<f64>,
    #[serde(default)]
    pub avg_ms: Option<f64>,
    #[serde(default)]
    pub stddev_ms: Option<f64>,
    #[serde(default)]
    pub p90_ms: Option<f64>,
    #[serde(default)]
    pub p99_ms: Option<f64>,
    /// Average latency added over the direct call to the back end.
    #[serde(default)]
    pub added_ms: Option<f64>,
}

impl RefRow {
    /// The report's name of the matching measured cell (`graphql q1`, `get`).
    pub fn cell_name(&self) -> String {
        match self.graphql_query {
            Some(q) => format!("{} q{q}", self.scenario),
            None => self.scenario.clone(),
        }
    }
}

impl Reference {
    /// A bundled reference by name, or a YAML file of the same shape.
    pub fn load(name_or_path: &str) -> Result<Reference, BenchError> {
        let text = match BUNDLED.iter().find(|(n, _)| *n == name_or_path) {
            Some((_, text)) => (*text).to_owned(),
            None => std::fs::read_to_string(name_or_path).map_err(|e| {
                let names: Vec<_> = BUNDLED.iter().map(|(n, _)| *n).collect();
                BenchError::Usage(format!(
                    "--compare {name_or_path:?} is neither a bundled reference ({}) nor a readable file: {e}",
                    names.join(", ")
                ))
            })?,
        };
        let r: Reference = serde_yaml::from_str(&text)
            .map_err(|e| BenchError::Usage(format!("reference {name_or_path}: {e}")))?;
        if r.rows.is_empty() || r.rows.len() > MAX_ROWS || r.hardware.vcpus == 0 {
            return Err(BenchError::Usage(format!(
                "reference {name_or_path}: needs 1 to {MAX_ROWS} rows and vcpus above 0"
            )));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_references_parse_with_their_hardware() {
        for (name, _) in BUNDLED {
            let r = Reference::load(name).expect(name);
            assert_eq!(r.name, name);
            assert!(r.hardware.vcpus > 0 && !r.source.is_empty());
        }
        let r = Reference::load("seed-3.0").expect("seed-3.0");
        assert_eq!(r.hardware.vcpus, 2);
        assert_eq!(r.rows.len(), 6);
        let first = &r.rows[0];
        assert_eq!(
            (first.scenario.as_str(), first.users, first.throughput),
            ("secured-passthrough", 300, Some(3354.91))
        );
        let cf = Reference::load("coldfusion").expect("coldfusion");
        assert_eq!((cf.hardware.vcpus, cf.rows.len()), (32, 32));
        assert!(Reference::load("nope").is_err());
    }
}
