//! A GraphQL API's long-lived state (its analysis cache and cost quotas) belongs to the
//! policy runtime it was compiled on: a reload on the same runtime keeps both, and two
//! runtimes (two gateways in one process) share neither.

use turnpike_config::{PolicyRuntime, Snapshot};
use turnpike_graphql::GraphqlPolicy;

const FILE: &str = r#"apis:
  - name: graph
    context: /graph
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    graphql:
      schema: "type Query { hero: String }"
    resources:
      - { path: "/graphql", methods: [POST] }
"#;

fn compiled(runtime: &PolicyRuntime) -> Snapshot {
    Snapshot::from_yaml_with(FILE, "graph.yaml", runtime).expect("compiles")
}

fn policy(snap: &Snapshot) -> &GraphqlPolicy {
    snap.apis[0]
        .chain
        .find::<GraphqlPolicy>()
        .expect("a GraphQL policy")
}

#[test]
fn a_reload_keeps_the_runtimes_state_and_another_runtime_has_its_own() {
    let (one, two) = (PolicyRuntime::new(), PolicyRuntime::new());
    let (first, reloaded, other) = (compiled(&one), compiled(&one), compiled(&two));
    let (first, reloaded, other) = (policy(&first), policy(&reloaded), policy(&other));
    assert!(first.analysis_cache().is_same(reloaded.analysis_cache()));
    assert!(std::sync::Arc::ptr_eq(first.quotas(), reloaded.quotas()));
    assert!(!first.analysis_cache().is_same(other.analysis_cache()));
    assert!(!std::sync::Arc::ptr_eq(first.quotas(), other.quotas()));
}
