//! Runs N cold analyses of the seed's Query 3 (a new query text each time: caps, parse,
//! validation, analysis, cache insert) under the gateway's allocator, for instruction
//! counts with callgrind:
//!
//! ```text
//! cargo build -p turnpike-graphql --example cold --profile ci-bench
//! valgrind --tool=callgrind target/ci-bench/examples/cold 200
//! ```
//!
//! Instructions per cold analysis = (total at N=200 - total at N=100) / 100.

use std::sync::Arc;

use turnpike_graphql::{AnalysisCache, Analyzer, Caps, CompiledSchema, CostConfig};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SCHEMA: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");
const Q3: &str = include_str!("../../../bench/graphql/starwars/query3.oneline.graphql");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100);
    let schema = CompiledSchema::compile(SCHEMA, &CostConfig::default())?;
    let analyzer = Analyzer::new(
        Arc::new(schema),
        Caps::default(),
        true,
        AnalysisCache::new(10_000),
    );
    let queries: Vec<String> = (0..n).map(|i| format!("{Q3}\n#{i}")).collect();
    let mut complexity = 0;
    for q in &queries {
        match analyzer.analyze(q, None, None) {
            Ok(a) => complexity += a.complexity,
            Err(e) => return Err(format!("{e:?}").into()),
        }
    }
    println!("{n} cold analyses, complexity sum {complexity}");
    Ok(())
}
