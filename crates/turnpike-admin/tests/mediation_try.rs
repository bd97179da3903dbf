//! `POST /apis/{id}/mediation/try`: a transformation runs on a sample against the stored
//! API's resources (path parameters included) without deploying anything; compile
//! problems list every field, a failing run is 422 naming the policy.

mod support;

use http::StatusCode;
use serde_json::json;
use support::control_plane;
use turnpike_store::testing::TestDbs;

#[tokio::test]
async fn a_transformation_runs_on_a_sample() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let r = cp
        .post(
            "/api/am/publisher/v1/apis",
            "pub",
            json!({
                "name": "Orders", "context": "/orders", "version": "v1",
                "endpoints": ["http://127.0.0.1:9"],
                "resources": [{"path": "/orders/{id}", "methods": ["PUT"]}, {"path": "/*", "methods": ["GET", "POST"]}],
                "policies": ["Gold"]
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let url = format!("/api/am/publisher/v1/apis/{id}/mediation/try");

    let r = cp
        .post(
            &url,
            "pub",
            json!({
                "mediation": {"request": {"headers": {"set": {"x-api": "orders"}}}},
                "resources": [{"path": "/orders/{id}", "mediation": {"request": {
                    "name": "put-order",
                    "path": "/v2/orders/{id}",
                    "body": {"jq": "{id: $path.id, lines: .items, one: [.items[0]]}"}
                }}}],
                "method": "PUT", "path": "/orders/42",
                "body": {"items": [{"sku": "a"}]}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["policy"], "put-order");
    assert_eq!(r.json["path"], "/v2/orders/42");
    assert_eq!(
        r.json["body"],
        json!({"id": "42", "lines": [{"sku": "a"}], "one": [{"sku": "a"}]})
    );

    // The API-level transformation applies elsewhere.
    let r = cp
        .post(
            &url,
            "pub",
            json!({"mediation": {"request": {"headers": {"set": {"x-api": "orders"}}}}, "method": "GET", "path": "/x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["headers"]["x-api"], "orders");

    // Every bad field at once.
    let r = cp
        .post(
            &url,
            "pub",
            json!({"mediation": {"request": {"body": {"jq": "{a: .b"}, "headers": {"set": {"host": "x"}}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    let mut f = r.fields();
    f.sort();
    assert_eq!(
        f,
        [
            "mediation.request.body.jq",
            "mediation.request.headers.set.host"
        ]
    );

    // A failing run names the policy.
    let r = cp
        .post(
            &url,
            "pub",
            json!({"mediation": {"request": {"name": "strict", "body": {"jq": "error(\"no\")"}}}, "body": {"a": 1}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.json);
    assert_eq!(r.json["code"], "mediation_failed");
    assert!(
        r.json["message"].as_str().unwrap_or("").contains("strict"),
        "{}",
        r.json
    );
}

#[tokio::test]
async fn the_publisher_api_stores_an_apis_mediation_and_names_every_bad_field() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let body = json!({
        "name": "Orders", "context": "/orders", "version": "v1",
        "endpoints": ["http://127.0.0.1:9"],
        "mediation": {"request": {"body": {"jq": "{order: .}"}}},
        "resources": [
            {"path": "/orders/{id}", "methods": ["PUT"],
             "mediation": {"request": {"name": "put-order", "path": "/v2/orders/{id}"}}},
            {"path": "/*", "methods": ["GET", "POST"]}
        ],
        "policies": ["Gold"]
    });
    let r = cp
        .post("/api/am/publisher/v1/apis", "pub", body.clone())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["mediation"], body["mediation"]);
    assert_eq!(
        r.json["resources"][0]["mediation"],
        body["resources"][0]["mediation"]
    );
    let id = r.json["id"].as_str().expect("id").to_owned();
    let got = cp
        .get(&format!("/api/am/publisher/v1/apis/{id}"), "pub")
        .await;
    assert_eq!(got.json["mediation"], body["mediation"]);

    // A try without a transformation of its own runs the stored ones.
    let r = cp
        .post(
            &format!("/api/am/publisher/v1/apis/{id}/mediation/try"),
            "pub",
            json!({"method": "PUT", "path": "/orders/7"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["path"], "/v2/orders/7");

    // Every bad field at once, named as the REST body names it.
    let mut bad = body.clone();
    bad["context"] = json!("/orders2");
    bad["mediation"] = json!({"request": {"body": {"jq": "{a: .b"}}, "response": {"path": "/x"}});
    bad["resources"][0]["mediation"] = json!({"request": {"path": "/v2/{nope}"}});
    let r = cp.post("/api/am/publisher/v1/apis", "pub", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    let mut f = r.fields();
    f.sort();
    assert_eq!(
        f,
        [
            "mediation.request.body.jq",
            "mediation.response.path",
            "resources[0].mediation.request.path"
        ],
        "{}",
        r.json
    );
    let mut shape = body;
    shape["context"] = json!("/orders3");
    shape["resources"][0]["mediation"] = json!({"requests": {}});
    let r = cp.post("/api/am/publisher/v1/apis", "pub", shape).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    assert_eq!(r.fields(), ["resources[0].mediation"]);
}
