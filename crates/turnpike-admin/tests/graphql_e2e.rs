//! GraphQL APIs through the Publisher API, end to end: a control plane with its key
//! manager, `turnpike echo --graphql`'s back end and a gateway following the control
//! plane, all on `127.0.0.1:0`. An SDL import creates a GRAPHQL API with one operation
//! per root field; once published and subscribed, the gateway forwards valid queries,
//! answers invalid and too-deep ones with `errors[]` without forwarding them, and holds
//! the per-operation scopes set through the API; the explain endpoint answers depth and
//! cost. An operation's throttling policy set through the API round-trips and is enforced
//! by the gateway (429 with `errors[]` at the 4th call of a 3-per-minute operation).

mod km_support;

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use km_support::{control_plane, converge, gateway, send, Auth, Cp, Resp};
use serde_json::{json, Value};

const APIS: &str = "/api/am/publisher/v1/apis";
const CONVERGE: Duration = Duration::from_secs(5);
const SDL: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");

async fn import(cp: &Cp, definition: &str, props: Value) -> Resp {
    cp.call(
        Method::POST,
        &format!("{APIS}/import-graphql-schema"),
        Auth::Basic("pub"),
        Some(json!({"definition": definition, "additionalProperties": props})),
    )
    .await
}

async fn query(gw: std::net::SocketAddr, token: &str, q: &str) -> Resp {
    send(
        Method::POST,
        &format!("http://{gw}/sw/v1/graphql"),
        Auth::Bearer(token),
        Some(("application/json", json!({ "query": q }).to_string())),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imported_schema_is_enforced_by_the_gateway_and_explained() {
    let dir = tempfile::tempdir().expect("tmp");
    let backend = turnpike_bench::graphql_echo::GraphqlBackend::new(None).expect("backend");
    let echo = turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        graphql: Some(Arc::new(backend)),
        ..Default::default()
    })
    .await
    .expect("echo");
    let cp = control_plane(false).await;
    let (_g, follower, gw) = gateway(cp.addr, dir.path()).await;

    // A schema that does not validate is refused, naming the line.
    let bad = import(
        &cp,
        "type Query { hero: Nope }",
        json!({"context": "/bad", "version": "v1", "name": "Bad"}),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.json);
    assert_eq!(bad.json["errors"][0]["field"], "file", "{}", bad.json);
    assert!(
        bad.json["errors"][0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("line 1"),
        "{}",
        bad.json
    );

    let props = json!({
        "name": "StarWars", "context": "/sw", "version": "v1",
        "endpoints": [format!("http://{echo}/graphql")],
        "graphql": {"limits": {"max_depth": 4}}
    });
    let created = import(&cp, SDL, props).await;
    assert_eq!(created.status, 201, "{}", created.json);
    let api = created.json;
    let id = api["id"].as_str().expect("id").to_string();
    assert_eq!(api["type"], "GRAPHQL", "{api}");
    let ops = api["graphql"]["operations"].as_array().expect("operations");
    let has = |name: &str, kind: &str| ops.iter().any(|o| o["name"] == name && o["type"] == kind);
    assert!(has("hero", "query"), "{ops:?}");
    assert!(has("createReview", "mutation"), "{ops:?}");
    assert_eq!(
        api["graphql"]["limits"]["max_depth"], 4,
        "kept from additionalProperties"
    );

    // Scopes on one operation, set through the API like any of its fields.
    let mut graphql = api["graphql"].clone();
    for op in graphql["operations"].as_array_mut().expect("ops") {
        if op["name"] == "createReview" {
            op["scopes"] = json!(["reviews:write"]);
        }
    }
    cp.ok(
        Method::PATCH,
        &format!("{APIS}/{id}"),
        Auth::Basic("pub"),
        Some(json!({ "graphql": graphql })),
    )
    .await;
    let bad_section = cp
        .call(
            Method::PATCH,
            &format!("{APIS}/{id}"),
            Auth::Basic("pub"),
            Some(json!({"graphql": {"schema": SDL, "limits": {"max_depth": "deep"}}})),
        )
        .await;
    assert_eq!(bad_section.status, 400, "{}", bad_section.json);

    cp.ok(
        Method::POST,
        &format!("{APIS}/change-lifecycle?apiId={id}&action=Publish"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let (_, ck, cs) = cp.subscribed_app("sub", &id, json!({})).await;
    let token = cp.app_token(&ck, &cs, None).await;
    converge(&follower, cp.version().await, CONVERGE).await;

    let ok = query(gw, &token, "{ hero { name } }").await;
    assert_eq!(ok.status, 200, "{}", ok.json);
    assert!(
        ok.json["data"]["hero"].is_object(),
        "the back end answered: {}",
        ok.json
    );

    let invalid = query(gw, &token, "{ hero { nmae } }").await;
    assert_eq!(invalid.status, 400, "{}", invalid.json);
    assert_eq!(
        invalid.json["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{}",
        invalid.json
    );
    assert_eq!(invalid.json["errors"][0]["locations"][0]["line"], 1);

    let deep = "{ hero { friends { friends { friends { name } } } } }";
    let refused = query(gw, &token, deep).await;
    assert_eq!(refused.status, 400, "{}", refused.json);
    assert_eq!(
        refused.json["errors"][0]["extensions"]["code"],
        "MAX_DEPTH_EXCEEDED"
    );

    let mutation = "mutation { createReview(episode: JEDI, review: {stars: 5}) { stars } }";
    let denied = query(gw, &token, mutation).await;
    assert_eq!(
        denied.status, 403,
        "no reviews:write scope: {}",
        denied.json
    );

    // The explain endpoint: WSO2's model on the same schema, under the default limits.
    let explained = cp
        .call(
            Method::POST,
            &format!("{APIS}/{id}/graphql/explain"),
            Auth::Basic("pub"),
            Some(json!({"query": deep})),
        )
        .await;
    assert_eq!(explained.status, 200, "{}", explained.json);
    assert_eq!(explained.json["depth"], 5, "{}", explained.json);
    assert_eq!(explained.json["within_limits"], false, "{}", explained.json);
    assert_eq!(explained.json["limits"]["max_depth"], 4);
    let unknown = cp
        .call(
            Method::POST,
            &format!("{APIS}/{id}/graphql/explain"),
            Auth::Basic("pub"),
            Some(json!({"query": "{ villain }"})),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.json);
    assert_eq!(unknown.json["errors"][0]["field"], "query");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operations_throttling_set_through_the_api_is_enforced_by_the_gateway() {
    let dir = tempfile::tempdir().expect("tmp");
    let backend = turnpike_bench::graphql_echo::GraphqlBackend::new(None).expect("backend");
    let echo = turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        graphql: Some(Arc::new(backend)),
        ..Default::default()
    })
    .await
    .expect("echo");
    let cp = control_plane(false).await;
    let (_g, follower, gw) = gateway(cp.addr, dir.path()).await;
    cp.ok(
        Method::POST,
        "/api/am/admin/v1/throttling/policies/advanced",
        Auth::Basic("admin"),
        Some(json!({"name": "ThreePerMin", "requestCount": 3, "unitSeconds": 60})),
    )
    .await;
    let props = json!({
        "name": "StarWars", "context": "/sw", "version": "v1",
        "endpoints": [format!("http://{echo}/graphql")]
    });
    let created = import(&cp, SDL, props).await;
    assert_eq!(created.status, 201, "{}", created.json);
    let id = created.json["id"].as_str().expect("id").to_string();
    let mut graphql = created.json["graphql"].clone();
    let set = |graphql: &mut Value, policy: &str| {
        for op in graphql["operations"].as_array_mut().expect("ops") {
            if op["name"] == "hero" && op["type"] == "query" {
                op["throttling"] = json!(policy);
            }
        }
    };
    set(&mut graphql, "NoSuchPolicy");
    let unknown = cp
        .call(
            Method::PATCH,
            &format!("{APIS}/{id}"),
            Auth::Basic("pub"),
            Some(json!({ "graphql": graphql })),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.json);
    assert!(
        unknown.json.to_string().contains("NoSuchPolicy"),
        "{}",
        unknown.json
    );
    set(&mut graphql, "ThreePerMin");
    cp.ok(
        Method::PATCH,
        &format!("{APIS}/{id}"),
        Auth::Basic("pub"),
        Some(json!({ "graphql": graphql })),
    )
    .await;
    let read = cp
        .ok(
            Method::GET,
            &format!("{APIS}/{id}"),
            Auth::Basic("pub"),
            None,
        )
        .await;
    let hero = read["graphql"]["operations"]
        .as_array()
        .and_then(|ops| ops.iter().find(|o| o["name"] == "hero").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(hero["throttling"], "ThreePerMin", "round-trips: {read}");

    cp.ok(
        Method::POST,
        &format!("{APIS}/change-lifecycle?apiId={id}&action=Publish"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let (_, ck, cs) = cp.subscribed_app("sub", &id, json!({})).await;
    let token = cp.app_token(&ck, &cs, None).await;
    converge(&follower, cp.version().await, CONVERGE).await;

    for i in 0..3 {
        let ok = query(gw, &token, "{ hero { name } }").await;
        assert_eq!(ok.status, 200, "call {i}: {}", ok.json);
    }
    let refused = query(gw, &token, "{ hero { name } }").await;
    assert_eq!(refused.status, 429, "{}", refused.json);
    assert_eq!(
        refused.json["errors"][0]["extensions"]["code"], "THROTTLED",
        "{}",
        refused.json
    );
    let other = query(gw, &token, "{ droid(id: 1) { name } }").await;
    assert_eq!(
        other.status, 200,
        "another operation passes: {}",
        other.json
    );
}

/// WSO2's `graphql-policies/complexity` shape: values read and replaced through the
/// Publisher API (bad entries all reported at once), the schema's types listed, and the
/// gateway holding a tier's `max_complexity` to the values once they are set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complexity_values_set_the_wso2_way_are_applied_by_the_gateway() {
    let dir = tempfile::tempdir().expect("tmp");
    let backend = turnpike_bench::graphql_echo::GraphqlBackend::new(None).expect("backend");
    let echo = turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        graphql: Some(Arc::new(backend)),
        ..Default::default()
    })
    .await
    .expect("echo");
    let cp = control_plane(false).await;
    let (_g, follower, gw) = gateway(cp.addr, dir.path()).await;
    let props = json!({
        "name": "StarWars", "context": "/sw", "version": "v1",
        "endpoints": [format!("http://{echo}/graphql")],
        "graphql": {"limits": {"max_complexity": 5}}
    });
    let created = import(&cp, SDL, props).await;
    assert_eq!(created.status, 201, "{}", created.json);
    let id = created.json["id"].as_str().expect("id").to_string();
    let complexity = format!("{APIS}/{id}/graphql-policies/complexity");
    let none = cp
        .ok(Method::GET, &complexity, Auth::Basic("pub"), None)
        .await;
    assert_eq!(none, json!({"list": []}));
    let types = cp
        .ok(
            Method::GET,
            &format!("{complexity}/types"),
            Auth::Basic("pub"),
            None,
        )
        .await;
    let query_type = types["typeList"]
        .as_array()
        .expect("typeList")
        .iter()
        .find(|t| t["type"] == "Query")
        .cloned()
        .expect("Query listed");
    assert!(query_type["fieldList"]
        .as_array()
        .expect("fields")
        .contains(&json!("hero")));

    cp.ok(
        Method::POST,
        &format!("{APIS}/change-lifecycle?apiId={id}&action=Publish"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let (_, ck, cs) = cp.subscribed_app("sub", &id, json!({})).await;
    let token = cp.app_token(&ck, &cs, None).await;
    converge(&follower, cp.version().await, CONVERGE).await;
    // hero (1) + name (1) = 2, within 5.
    let q = "{ hero { name } }";
    assert_eq!(query(gw, &token, q).await.status, 200);

    // Every bad entry at once: an unknown field, a negative value, a missing type.
    let bad = cp
        .call(
            Method::PUT,
            &complexity,
            Auth::Basic("pub"),
            Some(json!({"list": [
                {"type": "Query", "field": "villain", "complexityValue": 2},
                {"type": "Query", "field": "hero", "complexityValue": -1},
                {"field": "name", "complexityValue": 1}
            ]})),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.json);
    assert_eq!(
        bad.json["errors"].as_array().map(Vec::len),
        Some(3),
        "{}",
        bad.json
    );

    let set = json!({"list": [
        {"type": "Query", "field": "hero", "complexityValue": 10},
        {"type": "Character", "field": "name", "complexityValue": 3}
    ]});
    let put = cp
        .ok(Method::PUT, &complexity, Auth::Basic("pub"), Some(set))
        .await;
    assert_eq!(put["list"].as_array().map(Vec::len), Some(2), "{}", put);
    let read = cp
        .ok(Method::GET, &complexity, Auth::Basic("pub"), None)
        .await;
    assert!(read["list"]
        .as_array()
        .expect("list")
        .contains(&json!({"type": "Query", "field": "hero", "complexityValue": 10})));
    converge(&follower, cp.version().await, CONVERGE).await;
    let refused = query(gw, &token, q).await;
    assert_eq!(refused.status, 400, "{}", refused.json);
    assert_eq!(
        refused.json["errors"][0]["extensions"]["code"], "MAX_COMPLEXITY_EXCEEDED",
        "{}",
        refused.json
    );
    // Replacing with an empty list brings the defaults (1 a field) back.
    cp.ok(
        Method::PUT,
        &complexity,
        Auth::Basic("pub"),
        Some(json!({"list": []})),
    )
    .await;
    converge(&follower, cp.version().await, CONVERGE).await;
    assert_eq!(query(gw, &token, q).await.status, 200);
}
