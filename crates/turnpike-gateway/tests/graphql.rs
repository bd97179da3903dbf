//! GraphQL APIs through a real gateway on 127.0.0.1:0 in front of `turnpike echo
//! --graphql`: valid queries forwarded (POST JSON, POST application/graphql, GET),
//! invalid ones answered 400 with GraphQL `errors[]` and never forwarded, limits,
//! field denial, introspection, the cost quota's 429, explain, and mutations over GET;
//! fragment bypass attempts (deep fragments, cycles, aliases x fragments), WSO2's worked
//! example (35) with list against scalar arguments, and per-operation scopes on a query
//! that mixes an allowed and a denied operation; an `auth: none` operation callable
//! without a credential while the others need one; the caps before analysis.

mod support;

use std::net::SocketAddr;

use serde_json::{json, Value};
use support::*;

const Q1: &str = include_str!("../../../bench/graphql/starwars/query1.oneline.graphql");

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

const INTROSPECTION: &str = include_str!("../../turnpike-graphql/tests/data/introspection.graphql");

#[tokio::test]
async fn the_standard_introspection_query_passes_a_depth_limit_of_12_and_has_its_own() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[
        gql_api(
            "d12",
            up,
            "      limits: { max_depth: 12, max_complexity: 20 }\n",
        ),
        gql_api(
            "i12",
            up,
            "      introspection_max_depth: 12\n      limits: { max_depth: 12 }\n",
        ),
    ]))
    .await;
    // 13 deep and well over 20 fields, yet neither tier limit applies to it.
    let (status, v) = post(&gw, "/d12/v1/graphql", INTROSPECTION).await;
    assert_eq!(status, 200, "{v}");
    // Ordinary fields 13 deep are still refused.
    let deep = format!(
        "{{ hero {{ {}id{} }} }}",
        "friends { ".repeat(11),
        " }".repeat(11)
    );
    let (status, v) = post(&gw, "/d12/v1/graphql", &deep).await;
    assert_eq!((status, code(&v)), (400, "MAX_DEPTH_EXCEEDED"), "{v}");
    // The introspection limit of its own.
    let (status, v) = post(&gw, "/i12/v1/graphql", INTROSPECTION).await;
    assert_eq!((status, code(&v)), (400, "MAX_DEPTH_EXCEEDED"), "{v}");
    assert!(v.to_string().contains("introspection depth 13"), "{v}");
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

/// A SWAPI-like schema with WSO2's worked example's fields (`allFilms(first:)`,
/// `planets(first:)`) and a scalar-argument field (`film(id:)`).
const FILMS: &str = "type Query {\n  allFilms(first: Int): [Film]\n  film(id: ID!): Film\n}\ntype Film {\n  id: ID\n  title: String\n  planets(first: Int): [Planet]\n}\ntype Planet {\n  climate: String\n}\n";

fn films_api(name: &str, upstream: SocketAddr, extra: &str) -> String {
    let schema: String = FILMS.lines().map(|l| format!("        {l}\n")).collect();
    api(
        name,
        &[format!("http://{upstream}/graphql")],
        &format!("    graphql:\n      schema: |\n{schema}{extra}"),
    )
}

/// The gateway's explain answer for `query` on `path`.
async fn explain(gw: &TestGateway, path: &str, query: &str) -> Value {
    let resp = client()
        .post(gw.url(path))
        .header("x-graphql-explain", "1")
        .header("content-type", "application/json")
        .body(json!({ "query": query }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json")
}

#[tokio::test]
async fn wso2s_worked_example_costs_35_and_only_list_arguments_multiply() {
    let up = echo().await;
    let gw = gateway(&config(&[
        films_api("at", up, "      limits: { max_complexity: 35 }\n"),
        films_api("below", up, "      limits: { max_complexity: 34 }\n"),
    ]))
    .await;
    let example = "{ allFilms(first: 5) { id title planets(first: 2) { climate } } }";
    let v = explain(&gw, "/at/v1/graphql", example).await;
    assert_eq!(v["complexity"], 35, "{v}");
    let row = |path: &str| {
        v["fields"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["path"] == path))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(row("allFilms")["multiplier"], 5, "{v}");
    assert_eq!(row("allFilms.planets")["multiplier"], 2, "{v}");
    // At the limit it is forwarded; one below, refused at the gateway.
    assert_eq!(post(&gw, "/at/v1/graphql", example).await.0, 200);
    let (status, v) = post(&gw, "/below/v1/graphql", example).await;
    assert_eq!((status, code(&v)), (400, "MAX_COMPLEXITY_EXCEEDED"), "{v}");
    // `id: 5` is an ordinary argument, not a list size: no multiplier.
    let scalar = "{ film(id: 5) { id title planets(first: 2) { climate } } }";
    let v = explain(&gw, "/at/v1/graphql", scalar).await;
    assert_eq!(v["complexity"], 7, "{v}");
    // A variable sizes the list like a literal does.
    let resp = client()
        .post(gw.url("/below/v1/graphql"))
        .header("content-type", "application/json")
        .body(
            json!({
                "query": "query Q($n: Int) { allFilms(first: $n) { id title planets(first: 2) { climate } } }",
                "variables": { "n": 5 }
            })
            .to_string(),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 400);
}

#[tokio::test]
async fn fragments_do_not_hide_depth_or_cost_and_cycles_are_refused() {
    let up = echo().await;
    let gw = gateway(&config(&[films_api(
        "f",
        up,
        "      limits: { max_depth: 2, max_complexity: 20 }\n",
    )]))
    .await;
    // Deep fragments: each fragment is shallow, their nesting is not.
    let deep = "{ ...A } fragment A on Query { allFilms(first: 1) { ...B } } \
                fragment B on Film { planets(first: 1) { ...C } } fragment C on Planet { climate }";
    let (status, v) = post(&gw, "/f/v1/graphql", deep).await;
    assert_eq!((status, code(&v)), (400, "MAX_DEPTH_EXCEEDED"), "{v}");
    // A fragment cycle is a validation error, answered without looping or forwarding.
    let cycle = "{ allFilms(first: 1) { ...A } } fragment A on Film { planets { ...B } } \
                 fragment B on Planet { ...C } fragment C on Planet { ...B }";
    let (status, v) = post(&gw, "/f/v1/graphql", cycle).await;
    assert_eq!(
        (status, code(&v)),
        (400, "GRAPHQL_VALIDATION_FAILED"),
        "{v}"
    );
    // Aliases x fragments: one cheap fragment spread under many aliases costs each
    // alias (a field counted once per response path, and every alias is a path).
    let one = "{ a: allFilms(first: 2) { ...F } } fragment F on Film { id title }";
    let (status, v) = post(&gw, "/f/v1/graphql", one).await;
    assert_eq!(status, 200, "{v}");
    let many: String = (0..4)
        .map(|i| format!("a{i}: allFilms(first: 2) {{ ...F }} "))
        .collect();
    let many = format!("{{ {many}}} fragment F on Film {{ id title }}");
    let (status, v) = post(&gw, "/f/v1/graphql", &many).await;
    assert_eq!((status, code(&v)), (400, "MAX_COMPLEXITY_EXCEEDED"), "{v}");
    // The same fragment spread twice at one path is one field, not two.
    let twice = "{ a: allFilms(first: 2) { ...F ...F id } } fragment F on Film { id title }";
    assert_eq!(
        explain(&gw, "/f/v1/graphql", twice).await["complexity"],
        explain(&gw, "/f/v1/graphql", one).await["complexity"]
    );
}

#[tokio::test]
async fn a_query_mixing_an_allowed_and_a_denied_operation_is_refused() {
    let up = graphql_echo().await;
    // The key "turnpike-bench-key" (its SHA-256 below) carries the scope `read`.
    let api = gql_api(
        "sw",
        up,
        "      operations:\n        - { name: human, scopes: [read] }\n        - { name: droid, scopes: [admin] }\n",
    )
    .replace("    graphql:", "    auth: { oauth2: false, api_key: true }\n    graphql:");
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef\", application: app-1, subscriber: alice, scopes: [read] }}\n  subscriptions:\n    - {{ api: /sw/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[api])
    );
    let gw = gateway(&yaml).await;
    let call = |q: &'static str| {
        client()
            .post(gw.url("/sw/v1/graphql"))
            .header("apikey", "turnpike-bench-key")
            .header("content-type", "application/json")
            .body(json!({ "query": q }).to_string())
            .send()
    };
    let r = call("{ human(id: 1) { name } }").await.expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let r = call("{ droid(id: 1) { name } }").await.expect("send");
    assert_eq!(r.status().as_u16(), 403);
    let r = call("{ human(id: 1) { name } droid(id: 1) { name } }")
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 403);
    let v: Value = serde_json::from_slice(&r.bytes().await.expect("body")).expect("json");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("droid")),
        "{v}"
    );
    assert!(v.get("data").is_none(), "not forwarded: {v}");
    // An operation without scopes of its own (hero) needs only the API's credential.
    let r = call("{ hero { name } }").await.expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let r = client()
        .post(gw.url("/sw/v1/graphql"))
        .header("content-type", "application/json")
        .body(json!({ "query": "{ human(id: 1) { name } }" }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 401);
}

#[tokio::test]
async fn an_auth_none_operation_is_callable_without_a_credential_and_only_it() {
    let up = graphql_echo().await;
    let api = gql_api(
        "sw",
        up,
        "      operations:\n        - { name: hero, auth: none }\n        - { name: human, scopes: [read] }\n",
    )
    .replace("    graphql:", "    auth: { oauth2: false, api_key: true }\n    graphql:");
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef\", application: app-1, subscriber: alice, scopes: [read] }}\n  subscriptions:\n    - {{ api: /sw/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[api])
    );
    let gw = gateway(&yaml).await;
    let call = |q: &'static str, key: Option<&'static str>| {
        let mut r = client()
            .post(gw.url("/sw/v1/graphql"))
            .header("content-type", "application/json")
            .body(json!({ "query": q }).to_string());
        if let Some(k) = key {
            r = r.header("apikey", k);
        }
        r.send()
    };
    // The open operation, without any credential: forwarded and answered.
    let r = call("{ hero { name } }", None).await.expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = serde_json::from_slice(&r.bytes().await.expect("body")).expect("json");
    assert!(v["data"]["hero"].is_object(), "{v}");
    // Another operation, or the open one beside it, needs the credential.
    for q in [
        "{ human(id: 1) { name } }",
        "{ hero { name } human(id: 1) { name } }",
    ] {
        let r = call(q, None).await.expect("send");
        assert_eq!(r.status().as_u16(), 401, "{q}");
        let v: Value = serde_json::from_slice(&r.bytes().await.expect("body")).expect("json");
        assert_eq!(code(&v), "UNAUTHENTICATED", "{v}");
        assert!(
            v["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("human")),
            "{v}"
        );
    }
    // With the key, both; a wrong key is refused even for the open operation.
    let r = call(
        "{ hero { name } human(id: 1) { name } }",
        Some("turnpike-bench-key"),
    )
    .await
    .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let r = call("{ hero { name } }", Some("not-a-key"))
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 401);
}

#[tokio::test]
async fn the_caps_hold_at_their_value_and_refuse_one_above() {
    let up = graphql_echo().await;
    let gw = gateway(&config(&[gql_api(
        "sw",
        up,
        "      caps: { max_aliases: 2, max_root_fields: 3, max_directives: 1, max_bytes: 200 }\n",
    )]))
    .await;
    // (query at the cap, query one above it)
    let cases = [
        (
            "{ a: hero { name } b: hero { name } }",
            "{ a: hero { name } b: hero { name } c: hero { name } }",
        ),
        (
            "{ hero { name } droid(id: 1) { name } human(id: 1) { name } }",
            "{ hero { name } droid(id: 1) { name } human(id: 1) { name } starship(id: 1) { name } }",
        ),
        (
            "{ hero { name @include(if: true) } }",
            "{ hero { name @include(if: true) id @skip(if: false) } }",
        ),
    ];
    for (at, above) in cases {
        let (status, v) = post(&gw, "/sw/v1/graphql", at).await;
        assert_eq!(status, 200, "{at}: {v}");
        let (status, v) = post(&gw, "/sw/v1/graphql", above).await;
        assert_eq!((status, code(&v)), (400, "QUERY_TOO_LARGE"), "{above}: {v}");
    }
    let padded = format!("{{ hero {{ name }} }}{}", " ".repeat(200));
    let (status, v) = post(&gw, "/sw/v1/graphql", &padded).await;
    assert_eq!((status, code(&v)), (400, "QUERY_TOO_LARGE"), "{v}");
}
