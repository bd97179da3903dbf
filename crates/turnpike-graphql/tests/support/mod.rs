//! Shared fixtures: the Star Wars schema and queries from bench/graphql/starwars, and a
//! small films schema for WSO2's worked example.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use turnpike_graphql::{AnalysisCache, Analyzer, Caps, CompiledSchema, CostConfig};

pub const STARWARS: &str =
    include_str!("../../../../bench/graphql/starwars/starwars-schema.graphql");
pub const Q1: &str = include_str!("../../../../bench/graphql/starwars/query1.graphql");
pub const Q2: &str = include_str!("../../../../bench/graphql/starwars/query2.graphql");
pub const Q3: &str = include_str!("../../../../bench/graphql/starwars/query3.graphql");
pub const Q3_ONELINE: &str =
    include_str!("../../../../bench/graphql/starwars/query3.oneline.graphql");

pub const FILMS: &str = r#"
type Query { allFilms(first: Int, after: String): [Film] film(id: ID!): Film }
type Film { id: ID title: String planets(first: Int): [Planet] species: [Species] }
type Planet { climate: String residents(first: Int): [Person] }
type Person { name: String films: [Film] }
type Species { id: ID films: [Film] }
"#;

pub fn analyzer(sdl: &str, cost: CostConfig, caps: Caps, introspection: bool) -> Analyzer {
    let schema = Arc::new(CompiledSchema::compile(sdl, &cost).unwrap());
    Analyzer::new(schema, caps, introspection, AnalysisCache::new(1000))
}

pub fn starwars() -> Analyzer {
    analyzer(STARWARS, CostConfig::default(), Caps::default(), true)
}

pub fn films() -> Analyzer {
    analyzer(FILMS, CostConfig::default(), Caps::default(), true)
}
