//! The seed's Query 3 (9 root fields, 2 KB): analysis on a cache hit, and cold (caps,
//! parse, validation, analysis, cache insert: a new query text every iteration), beside
//! a reference measured in the same run: decoding the same query's JSON request body,
//! which every GraphQL gateway pays. The allocator is the gateway binary's (mimalloc):
//! apollo-compiler's parse allocates a node per CST token, so measuring under the system
//! allocator overstated the cold path.
//!
//! The cold path parses with turnpike's fast parser (`src/fastparse.rs`); `parts_parse`
//! is apollo-compiler's own parse, which the analyzer keeps for texts the fast parser
//! declines and for the diagnostics of invalid documents. `parts_validate` is the
//! spec validation every cold analysis runs (the floor of the cold path).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use turnpike_graphql::{
    AnalysisCache, Analyzer, Caps, CompiledSchema, CostConfig, GraphqlRequest, Limits,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SCHEMA: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");
const Q3: &str = include_str!("../../../bench/graphql/starwars/query3.oneline.graphql");

fn analyzer() -> Analyzer {
    let schema = CompiledSchema::compile(SCHEMA, &CostConfig::default()).expect("schema");
    Analyzer::new(
        Arc::new(schema),
        Caps::default(),
        true,
        AnalysisCache::new(10_000),
    )
}

fn bench(c: &mut Criterion) {
    let body = serde_json::json!({ "operationName": null, "query": Q3 }).to_string();
    let limits = Limits {
        max_depth: Some(10),
        max_complexity: Some(1000),
    };
    let mut g = c.benchmark_group("graphql_query3");
    g.bench_function("reference_json_request_decode", |b| {
        b.iter(|| GraphqlRequest::from_json(black_box(body.as_bytes())).expect("request"))
    });
    let a = analyzer();
    a.analyze(Q3, None, None).expect("valid");
    g.bench_function("analysis_cache_hit", |b| {
        b.iter(|| {
            let an = a.analyze(black_box(Q3), None, None).expect("valid");
            a.check(&an, Q3, &limits, None).expect("within limits");
            an
        })
    });
    let cold = analyzer();
    let mut n = 0u64;
    g.bench_function("analysis_cold", |b| {
        b.iter(|| {
            n += 1;
            let q = format!("{Q3}\n#{n}");
            cold.analyze(black_box(&q), None, None).expect("valid")
        })
    });
    let schema = CompiledSchema::compile(SCHEMA, &CostConfig::default()).expect("schema");
    g.bench_function("parts_parse", |b| {
        b.iter(|| apollo_compiler::ast::Document::parse(black_box(Q3), "q").expect("parses"))
    });
    let ast = apollo_compiler::ast::Document::parse(Q3, "q").expect("parses");
    g.bench_function("parts_validate", |b| {
        b.iter(|| ast.to_executable_validate(schema.schema()).expect("valid"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
