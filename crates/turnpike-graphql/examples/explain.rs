//! Prints the explain document (depth, complexity, root fields, per-field breakdown) of a
//! query against a schema, without running it:
//!
//! ```text
//! cargo run -p turnpike-graphql --example explain -- \
//!     bench/graphql/starwars/starwars-schema.graphql bench/graphql/starwars/query3.graphql
//! ```

use std::sync::Arc;

use turnpike_graphql::{AnalysisCache, Analyzer, Caps, CompiledSchema, CostConfig, Limits};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(schema), Some(query)) = (args.next(), args.next()) else {
        return Err("usage: explain <schema.graphql> <query.graphql>".into());
    };
    let sdl = std::fs::read_to_string(schema)?;
    let query = std::fs::read_to_string(query)?;
    let schema = CompiledSchema::compile(&sdl, &CostConfig::default())?;
    let analyzer = Analyzer::new(
        Arc::new(schema),
        Caps::default(),
        true,
        AnalysisCache::new(16),
    );
    match analyzer.explain(&query, None, None, &Limits::default()) {
        Ok(e) => println!("{}", serde_json::to_string_pretty(&e)?),
        Err(errors) => println!("{}", turnpike_graphql::errors_body(&errors, None)),
    }
    Ok(())
}
