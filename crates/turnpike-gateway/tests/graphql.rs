//! GraphQL APIs through a real gateway on 127.0.0.1:0 in front of `turnpike echo
//! --graphql`: valid queries forwarded (POST JSON, POST application/graphql, GET),
//! invalid ones answered 400 with GraphQL `errors[]` and never forwarded, limits,
//! field denial, introspection, the cost quota's 429, explain, and mutations over GET.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{json, Value};
use support::*;

const STARWARS: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");
const Q1: &str = include_str!("../../../bench/graphql/starwars/query1.oneline.graphql");

async fn graphql_echo() -> SocketAddr {
    let gql = turnpike_bench::graphql_echo::GraphqlBackend::new(None).expect("schema");
    turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        graphql: Some(Arc::new(gql)),
        ..Default::default()
    })
    .await
    .expect("echo")
}

/// One GraphQL API `name` over the Star Wars schema with `extra` lines in its
/// `graphql:` section (indented 6).
fn gql_api(name: &str, upstream: SocketAddr, extra: &str) -> String {
    let schema: String = STARWARS.lines().map(|l| format!("        {l}\n")).collect();
    api(
        name,
        &[format!("http://{upstream}/graphql")],
        &format!("    graphql:\n      schema: |\n{schema}{extra}"),
    )
}

async fn post(gw: &TestGateway, path: &str, query: &str) -> (u16, Value) {
    let resp = client()
        .post(gw.url(path))
        .header("content-type", "application/json")
        .body(json!({ "query": query }).to_string())
        .send()
        .await
        .expect("send");
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_slice(&resp.bytes().await.expect("body")).unwrap_or(Value::Null),
    )
}

fn code(v: &Value) -> &str {
    v["errors"][0]["extensions"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn valid_queries_are_forwarded_and_invalid_ones_answered_with_errors() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api("sw", up, "")])).await;
    let (status, v) = post(&gw, "/sw/v1/graphql", Q1).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["data"]["hero"]["friends"].is_array(), "{v}");

    let (status, v) = post(&gw, "/sw/v1/graphql", "{\n  hero {\n    nmae\n  }\n}").await;
    assert_eq!(status, 400, "{v}");
    // the gateway's answer (the back end puts no code in extensions)
    assert_eq!(code(&v), "GRAPHQL_VALIDATION_FAILED", "{v}");
    let typo = v["errors"]
        .as_array()
        .and_then(|e| {
            e.iter()
                .find(|e| e["message"].as_str().unwrap_or("").contains("nmae"))
        })
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        typo["locations"][0],
        json!({ "line": 3, "column": 5 }),
        "{v}"
    );
    assert!(
        v["errors"][0]["extensions"]["request_id"].is_string(),
        "{v}"
    );

    let (status, v) = post(&gw, "/sw/v1/graphql", "{ hero { ").await;
    assert_eq!((status, code(&v)), (400, "GRAPHQL_PARSE_FAILED"), "{v}");
    let resp = client()
        .post(gw.url("/sw/v1/graphql"))
        .body("{\"nope\": 1}")
        .header("content-type", "application/json")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 400);
}

#[tokio::test]
async fn get_and_application_graphql_are_read_and_mutations_refused_over_get() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api("sw", up, "")])).await;
    let resp = client()
        .get(gw.url("/sw/v1/graphql"))
        .query(&[("query", "{ droid(id: 1) { name } }")])
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
    assert!(v["data"]["droid"]["name"].is_string(), "{v}");
    let resp = client()
        .post(gw.url("/sw/v1/graphql"))
        .header("content-type", "application/graphql")
        .body("{ human(id: 1) { mass } }")
        .send()
        .await
        .expect("send");
    let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
    assert!(v["data"]["human"]["mass"].is_number(), "{v}");
    let m = "mutation { createReview(review: { stars: 5 }) { stars } }";
    let resp = client()
        .get(gw.url("/sw/v1/graphql"))
        .query(&[("query", m)])
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 405);
}

#[tokio::test]
async fn depth_and_complexity_limits_hold_at_the_limit_and_refuse_above() {
    let up = graphql_echo().await;
    // Query 1: depth 3, complexity 10
    let gw = gateway(&config(&[
        gql_api(
            "at",
            up,
            "      limits: { max_depth: 3, max_complexity: 10 }\n",
        ),
        gql_api("cx", up, "      limits: { max_complexity: 9 }\n"),
        gql_api("dp", up, "      limits: { max_depth: 2 }\n"),
    ]))
    .await;
    assert_eq!(post(&gw, "/at/v1/graphql", Q1).await.0, 200);
    let (status, v) = post(&gw, "/cx/v1/graphql", Q1).await;
    assert_eq!((status, code(&v)), (400, "MAX_COMPLEXITY_EXCEEDED"), "{v}");
    let (status, v) = post(&gw, "/dp/v1/graphql", Q1).await;
    assert_eq!((status, code(&v)), (400, "MAX_DEPTH_EXCEEDED"), "{v}");
    // a named fragment does not hide depth
    let hidden = "query { ...R } fragment R on Query { hero { friends { id } } }";
    let (status, v) = post(&gw, "/dp/v1/graphql", hidden).await;
    assert_eq!((status, code(&v)), (400, "MAX_DEPTH_EXCEEDED"), "{v}");
}

#[tokio::test]
async fn denied_fields_and_introspection_are_refused() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api(
        "sw",
        up,
        "      introspection: false\n      limits: { fields: { deny: [Human.mass] } }\n",
    )]))
    .await;
    let (status, v) = post(&gw, "/sw/v1/graphql", "{ human(id: 1) { name mass } }").await;
    assert_eq!((status, code(&v)), (403, "FIELD_NOT_ALLOWED"), "{v}");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("Human.mass"),
        "{v}"
    );
    let (status, v) = post(&gw, "/sw/v1/graphql", "{ __schema { queryType { name } } }").await;
    assert_eq!((status, code(&v)), (403, "INTROSPECTION_DISABLED"), "{v}");
    assert_eq!(
        post(&gw, "/sw/v1/graphql", "{ human(id: 1) { name } }")
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn the_cost_quota_answers_429_with_rate_limit_headers() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api(
        "sw",
        up,
        "      limits: { cost_quota: { cost: 25, per: hour } }\n",
    )]))
    .await;
    // Query 1 costs 10: two fit in 25, the third does not.
    for _ in 0..2 {
        assert_eq!(post(&gw, "/sw/v1/graphql", Q1).await.0, 200);
    }
    let resp = client()
        .post(gw.url("/sw/v1/graphql"))
        .header("content-type", "application/json")
        .body(json!({ "query": Q1 }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["ratelimit-limit"], "25");
    assert_eq!(resp.headers()["ratelimit-remaining"], "0");
    assert!(resp.headers().contains_key("retry-after"));
    let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
    assert_eq!(code(&v), "COST_QUOTA_EXCEEDED", "{v}");
    // a cheaper query still fits the 5 left
    assert_eq!(
        post(&gw, "/sw/v1/graphql", "{ droid(id: 1) { name } }")
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn explain_answers_depth_cost_and_limits_without_forwarding() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api(
        "sw",
        up,
        "      limits: { max_complexity: 100 }\n",
    )]))
    .await;
    let resp = client()
        .post(gw.url("/sw/v1/graphql"))
        .header("x-graphql-explain", "1")
        .header("content-type", "application/json")
        .body(json!({ "query": Q1 }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
    assert_eq!(v["complexity"], 10, "{v}");
    assert_eq!(v["depth"], 3, "{v}");
    assert_eq!(v["limits"]["max_complexity"], 100, "{v}");
    assert_eq!(v["within_limits"], true, "{v}");
    assert!(v.get("data").is_none(), "not forwarded: {v}");
}

#[tokio::test]
async fn a_bad_graphql_section_is_a_config_error_naming_the_field() {
    let up = graphql_echo().await;
    let yaml = config(&[gql_api(
        "sw",
        up,
        "      limits: { fields: { deny: [Human.wings] } }\n",
    )]);
    let err = turnpike_config::Snapshot::from_yaml(&yaml, "test").expect_err("invalid");
    let text = err.to_string();
    assert!(text.contains("apis[0].graphql.limits.fields"), "{text}");
}
