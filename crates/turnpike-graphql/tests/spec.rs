//! The `graphql:` section of an API compiled: tiers, applications, operations, and
//! every problem reported with its path.
#![allow(clippy::unwrap_used)]

mod support;

use support::*;
use turnpike_graphql::{compile, AnalysisCache, OperationKind};
use turnpike_model::graphql::GraphqlSpec;

fn spec(yaml_tail: &str) -> GraphqlSpec {
    let mut s: GraphqlSpec = serde_yaml::from_str(&format!("schema: ''\n{yaml_tail}")).unwrap();
    s.schema = STARWARS.to_owned();
    s
}

#[test]
fn tiers_applications_and_operations_compile() {
    let s = spec(
        "limits: { max_depth: 5 }\ntiers:\n  Gold: { max_complexity: 50, cost_quota: { cost: 1000, per: minute }, fields: { deny: [Human.mass] } }\napplications:\n  app1: { allow: [Query.hero, Character] }\noperations:\n  - { name: createReview, type: mutation, scopes: [reviews:write] }\n",
    );
    let c = compile(&s, AnalysisCache::new(10)).unwrap();
    assert_eq!(c.tier(None).limits.max_depth, Some(5));
    assert_eq!(c.tier(Some("Silver")).limits.max_depth, Some(5));
    let gold = c.tier(Some("Gold"));
    assert_eq!(gold.limits.max_complexity, Some(50));
    assert_eq!(gold.quota.unwrap().window_secs, 60);
    let id = c.analyzer.schema().field_id("Human", "mass").unwrap();
    assert!(gold.access.as_ref().unwrap().is_denied(id));
    assert!(c.applications.contains_key("app1"));
    assert_eq!(
        c.operations[&(OperationKind::Mutation, "createReview".to_owned())],
        vec!["reviews:write".to_owned()]
    );
}

#[test]
fn every_problem_is_named_with_its_path() {
    let s = spec(
        "tiers:\n  Gold: { cost_quota: { cost: 0, per: minute }, fields: { deny: [Human.wings] } }\noperations:\n  - { name: destroyPlanet, type: mutation }\n  - { name: hero, auth: none, throttling: 10KPerMin }\n",
    );
    let problems = compile(&s, AnalysisCache::new(10)).unwrap_err();
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    for want in [
        "tiers.Gold.cost_quota",
        "tiers.Gold.fields",
        "operations[0].name",
    ] {
        assert!(paths.contains(&want), "{want} missing from {problems:?}");
    }
    // `auth: none` and `throttling` are supported: no problem there (the policy's name
    // is checked by turnpike-config against the snapshot's throttler).
    assert!(!paths.contains(&"operations[1].auth"), "{problems:?}");
    assert!(!paths.contains(&"operations[1].throttling"), "{problems:?}");
}

#[test]
fn an_invalid_schema_is_a_schema_problem() {
    let mut s = spec("");
    s.schema = "type Query { a: Missing }".into();
    let problems = compile(&s, AnalysisCache::new(10)).unwrap_err();
    assert_eq!(problems[0].path, "schema");
    assert!(problems[0].message.contains("Missing"), "{problems:?}");
}
