//! The REST APIs' success and error cases, run against SQLite and a real PostgreSQL:
//! auth and roles, validation listing every field, ETag/If-None-Match/If-Match, 409s,
//! OpenAPI import, versions, devportal flow, tiers and users, hostile input, concurrent
//! updates, and the snapshot long-poll.

mod support;

use http::{Method, StatusCode};
use serde_json::json;
use support::{control_plane, TOKEN};
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

async fn auth_and_roles(url: String) {
    let cp = control_plane(&url).await;
    let r = cp.call(Method::GET, APIS, None, None, &[]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.json["code"], "unauthorized");
    assert!(r.json["request_id"].is_string());
    let r = cp
        .call(
            Method::GET,
            APIS,
            None,
            None,
            &[("authorization", "Basic YWRtaW46bm9wZQ==")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "wrong password");
    let r = cp
        .post(
            APIS,
            "sub",
            json!({"name": "x", "context": "/x", "version": "v1"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "a subscriber cannot publish"
    );
    let r = cp
        .post(
            "/api/am/admin/v1/throttling/policies/subscription",
            "pub",
            json!({"name": "T"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "a publisher cannot manage tiers"
    );
    let r = cp.get("/api/am/admin/v1/users", "pub").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(cp.get(APIS, "admin").await.status, StatusCode::OK);
}

async fn api_crud_and_errors(url: String) {
    let cp = control_plane(&url).await;
    // Every invalid field at once: an unknown tier too, beside the fields' own errors.
    let r = cp.post(APIS, "pub", json!({"endpoints": ["ftp://x"], "sandboxEndpoints": ["http://ok", "x"], "bogus": 1, "policies": ["Platinum"], "resources": [{"path": "x", "methods": ["FETCH"]}]})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let mut f = r.fields();
    f.sort();
    assert_eq!(
        f,
        [
            "bogus",
            "context",
            "endpoints[0]",
            "name",
            "policies[0]",
            "resources[0].methods[0]",
            "resources[0].path",
            "sandboxEndpoints[1]",
            "version"
        ]
    );
    let id = cp
        .create_api("/pets", "v1", "http://127.0.0.1:9", false)
        .await;
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": "P", "context": "/pets", "version": "v1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "duplicate context+version");
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": "P", "context": "/p2", "version": "v1", "policies": ["Platinum"]}),
        )
        .await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["policies[0]".to_string()])
    );
    let path = format!("{APIS}/{id}");
    let got = cp.get(&path, "pub").await;
    assert_eq!(got.status, StatusCode::OK);
    let etag = got.etag();
    let r = cp
        .call(
            Method::GET,
            &path,
            Some("pub"),
            None,
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    let mut body = got.json.clone();
    body["description"] = json!("updated");
    let r = cp
        .call(
            Method::PUT,
            &path,
            Some("pub"),
            Some(body.clone()),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let r = cp
        .call(
            Method::PUT,
            &path,
            Some("pub"),
            Some(body.clone()),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED, "stale If-Match");
    body["context"] = json!("/other");
    let r = cp
        .call(Method::PUT, &path, Some("pub"), Some(body), &[])
        .await;
    assert_eq!(r.fields(), ["context"]);
    cp.create_api("/pets", "v2", "http://127.0.0.1:9", false)
        .await;
    let r = cp
        .get(&format!("{APIS}?limit=1&offset=1&context=/pets"), "pub")
        .await;
    assert_eq!(
        (
            r.json["count"].as_i64(),
            r.json["pagination"]["total"].as_i64()
        ),
        (Some(1), Some(2))
    );
    assert_eq!(r.json["list"][0]["version"], "v2");
    let r = cp.get(&format!("{APIS}?limit=-1&state=NOPE"), "pub").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = cp.call(Method::DELETE, &path, Some("pub"), None, &[]).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(cp.get(&path, "pub").await.status, StatusCode::NOT_FOUND);
}

async fn lifecycle_over_http(url: String) {
    let cp = control_plane(&url).await;
    let id = cp
        .create_api("/lc", "v1", "http://127.0.0.1:9", false)
        .await;
    let r = cp.lifecycle(&id, "Retire").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "Created cannot retire");
    let r = cp.lifecycle(&id, "Explode").await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["action".to_string()])
    );
    let r = cp.lifecycle(&id, "Publish").await;
    assert_eq!(r.json["lifecycleStatus"], "PUBLISHED");
    let r = cp.get(&format!("{APIS}/{id}/lifecycle-state"), "pub").await;
    assert_eq!(
        r.json["availableTransitions"],
        json!([
            "Publish",
            "Deploy as a Prototype",
            "Demote to Created",
            "Block",
            "Deprecate"
        ])
    );
    let r = cp
        .post(
            &format!("{APIS}/change-lifecycle?apiId={id}"),
            "pub",
            json!({}),
        )
        .await;
    assert_eq!(r.fields(), ["action"]);
    let noep = cp
        .post(
            APIS,
            "pub",
            json!({"name": "N", "context": "/n", "version": "v1"}),
        )
        .await;
    let r = cp
        .lifecycle(noep.json["id"].as_str().unwrap_or_default(), "Publish")
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "no endpoints");
}

async fn import_and_copy(url: String) {
    let cp = control_plane(&url).await;
    let doc = "openapi: 3.0.1\ninfo: {title: Petstore, version: '1.0'}\nservers: [{url: 'http://127.0.0.1:9/base'}]\npaths:\n  /pets: {get: {}, post: {}}\n  /pets/{id}: {get: {}, x-extension: {}}\n";
    let r = cp.post(&format!("{APIS}/import-openapi"), "pub", json!({"definition": doc, "additionalProperties": {"context": "/store", "isDefaultVersion": true}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["name"], "Petstore");
    assert_eq!(r.json["endpoints"], json!(["http://127.0.0.1:9/base"]));
    assert_eq!(
        r.json["resources"],
        json!([{"path": "/pets", "methods": ["GET", "POST"]}, {"path": "/pets/{id}", "methods": ["GET"]}])
    );
    let id = r.json["id"].as_str().unwrap_or_default().to_string();
    let r = cp.get(&format!("{APIS}/{id}/swagger"), "pub").await;
    assert_eq!(r.status, StatusCode::OK);
    let r = cp
        .post(
            &format!("{APIS}/import-openapi"),
            "pub",
            json!({"definition": "openapi: [", "additionalProperties": {"context": "/x"}}),
        )
        .await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["definition.".to_string()])
    );
    let r = cp
        .post(
            &format!("{APIS}/import-openapi"),
            "pub",
            json!({"definition": {"swagger": "2.0"}, "additionalProperties": {"context": "/x"}}),
        )
        .await;
    assert_eq!(r.fields().len(), 4, "{}", r.json);
    let r = cp
        .call(
            Method::POST,
            &format!("{APIS}/copy-api?apiId={id}&newVersion=2.0&defaultVersion=true"),
            Some("pub"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(
        (
            r.json["lifecycleStatus"].as_str(),
            r.json["isDefaultVersion"].as_bool()
        ),
        (Some("CREATED"), Some(true))
    );
    let old = cp.get(&format!("{APIS}/{id}"), "pub").await;
    assert_eq!(
        old.json["isDefaultVersion"], false,
        "one default version per context"
    );
    let r = cp
        .call(
            Method::POST,
            &format!("{APIS}/copy-api?apiId={id}&newVersion=2.0"),
            Some("pub"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
}

async fn devportal_flow(url: String) {
    let cp = control_plane(&url).await;
    let id = cp
        .create_api("/shop", "v1", "http://127.0.0.1:9", false)
        .await;
    let dp = "/api/am/devportal/v1";
    assert_eq!(
        cp.get(&format!("{dp}/apis/{id}"), "sub").await.status,
        StatusCode::NOT_FOUND,
        "CREATED is hidden"
    );
    cp.lifecycle(&id, "Publish").await;
    let r = cp.get(&format!("{dp}/apis?query=SHO"), "sub").await;
    assert_eq!(r.json["count"], 1);
    let r = cp
        .post(
            &format!("{dp}/applications"),
            "sub",
            json!({"name": "app", "throttlingPolicy": "nope"}),
        )
        .await;
    assert_eq!(r.fields(), ["throttlingPolicy"]);
    let r = cp
        .post(
            &format!("{dp}/applications"),
            "sub",
            json!({"name": "app", "throttlingPolicy": "10PerMin"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let app = r.json["id"].as_str().unwrap_or_default().to_string();
    let r = cp
        .post(&format!("{dp}/applications"), "sub", json!({"name": "app"}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        cp.get(&format!("{dp}/applications/{app}"), "sub2")
            .await
            .status,
        StatusCode::NOT_FOUND,
        "not yours"
    );
    let r = cp
        .post(
            &format!("{dp}/subscriptions"),
            "sub",
            json!({"applicationId": app, "apiId": id, "throttlingPolicy": "Silver"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "tier not offered");
    let r = cp
        .post(
            &format!("{dp}/subscriptions"),
            "sub",
            json!({"applicationId": app, "apiId": id, "throttlingPolicy": "Gold"}),
        )
        .await;
    assert_eq!(
        (r.status, r.json["status"].as_str()),
        (StatusCode::CREATED, Some("ACTIVE"))
    );
    let sub = r.json["id"].as_str().unwrap_or_default().to_string();
    let r = cp.call(Method::POST, &format!("/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId={sub}&blockState=PROD_ONLY_BLOCKED"), Some("pub"), None, &[]).await;
    assert_eq!(r.json["status"], "PROD_ONLY_BLOCKED");
    let r = cp
        .get(&format!("{dp}/subscriptions?applicationId={app}"), "sub")
        .await;
    assert_eq!(r.json["count"], 1);
    let r = cp
        .call(
            Method::DELETE,
            &format!("{dp}/subscriptions/{sub}"),
            Some("sub"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = cp
        .call(
            Method::DELETE,
            &format!("{dp}/applications/{app}"),
            Some("sub"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

async fn admin_tiers_and_users(url: String) {
    let cp = control_plane(&url).await;
    let base = "/api/am/admin/v1/throttling/policies";
    let r = cp.get(&format!("{base}/subscription"), "admin").await;
    assert_eq!(r.json["count"], 5);
    let r = cp
        .post(
            &format!("{base}/subscription"),
            "admin",
            json!({"name": "Platinum", "requestCount": 0}),
        )
        .await;
    assert_eq!(r.fields(), ["requestCount"]);
    let r = cp
        .post(
            &format!("{base}/subscription"),
            "admin",
            json!({"name": "Platinum", "requestCount": 10000}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = cp
        .post(
            &format!("{base}/subscription"),
            "admin",
            json!({"name": "Platinum"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let got = cp
        .get(&format!("{base}/subscription/Platinum"), "admin")
        .await;
    let etag = got.etag();
    let body = json!({"requestCount": 20000});
    let r = cp
        .call(
            Method::PUT,
            &format!("{base}/subscription/Platinum"),
            Some("admin"),
            Some(body.clone()),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(r.json["requestCount"], 20000);
    let r = cp
        .call(
            Method::PUT,
            &format!("{base}/subscription/Platinum"),
            Some("admin"),
            Some(body),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let r = cp
        .call(
            Method::DELETE,
            &format!("{base}/subscription/Platinum"),
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        cp.get(&format!("{base}/bogus"), "admin").await.status,
        StatusCode::NOT_FOUND
    );
    let r = cp
        .post(
            "/api/am/admin/v1/users",
            "admin",
            json!({"name": "a:b", "password": "short", "roles": ["root"]}),
        )
        .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["name", "password", "roles[0]"]);
    let r = cp
        .post(
            "/api/am/admin/v1/users",
            "admin",
            json!({"name": "carol", "password": "longenough", "roles": ["publisher"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = cp
        .call(
            Method::DELETE,
            "/api/am/admin/v1/users/carol",
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

async fn hostile_input(url: String) {
    let cp = control_plane(&url).await;
    let req = http::Request::post(APIS)
        .header("authorization", support::basic("pub"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{\"name\": "))
        .expect("req");
    let r = cp.raw(req).await;
    assert_eq!(
        (r.status, r.json["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("malformed_json"))
    );
    let big = "x".repeat(70 * 1024);
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": big, "context": "/big", "version": "v1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    let req = http::Request::post(APIS)
        .header("authorization", support::basic("pub"))
        .header("content-type", "text/plain")
        .body(axum::body::Body::from("{}"))
        .expect("req");
    assert_eq!(cp.raw(req).await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let name = "Robert'); DROP TABLE apis;-- 😀 ünïcødé \" \\ % _ 日本語";
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": name, "description": "' OR 1=1 --", "context": "/s", "version": "v1"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json["name"], name);
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": "x\u{7}", "context": "/s'; --", "version": "v1 OR 1=1"}),
        )
        .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["context", "name", "version"]);
    let r = cp.get(&format!("{APIS}?query=%25"), "pub").await;
    assert_eq!(r.json["count"], 1, "LIKE metacharacters are literal");
    assert_eq!(
        cp.state
            .store()
            .list_apis(&Default::default(), 10, 0)
            .await
            .expect("list")
            .total,
        1,
        "nothing stored half-way"
    );
}

async fn concurrent_conflicting_updates(url: String) {
    let cp = control_plane(&url).await;
    let id = cp
        .create_api("/race", "v1", "http://127.0.0.1:9", false)
        .await;
    let path = format!("{APIS}/{id}");
    let got = cp.get(&path, "pub").await;
    let etag = got.etag();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let mut body = got.json.clone();
        body["description"] = json!(format!("writer {i}"));
        let (cp, path, etag) = (cp.clone(), path.clone(), etag.clone());
        tasks.push(tokio::spawn(async move {
            cp.call(
                Method::PUT,
                &path,
                Some("pub"),
                Some(body),
                &[("if-match", etag.as_str())],
            )
            .await
            .status
            .as_u16()
        }));
    }
    let mut codes: Vec<u16> = Vec::new();
    for t in tasks {
        codes.push(t.await.expect("task"));
    }
    codes.sort();
    assert_eq!(codes, [200, 412, 412, 412]);
}

async fn snapshot_long_poll(url: String) {
    let cp = control_plane(&url).await;
    let snap = "/api/am/gateway/v1/snapshot";
    let r = cp
        .call(
            Method::GET,
            snap,
            None,
            None,
            &[("authorization", "Bearer wrong")],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let bearer = format!("Bearer {TOKEN}");
    let auth = [
        ("authorization", bearer.as_str()),
        ("x-turnpike-gateway", "gw1"),
    ];
    let created = cp
        .create_api("/live", "v1", "http://127.0.0.1:9", true)
        .await;
    cp.create_api("/hidden", "v1", "http://127.0.0.1:9", false)
        .await;
    cp.lifecycle(&created, "Publish").await;
    let r = cp
        .call(Method::GET, &format!("{snap}?after=0"), None, None, &auth)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let v: u64 = r.headers["x-turnpike-version"]
        .to_str()
        .ok()
        .and_then(|v| v.parse().ok())
        .expect("version");
    assert_eq!(
        r.json["apis"].as_array().map(|a| a.len()),
        Some(1),
        "only live APIs: {}",
        r.json
    );
    assert_eq!(r.json["apis"][0]["default"], true);
    let r = cp
        .call(
            Method::GET,
            &format!("{snap}?after={v}&wait=1"),
            None,
            None,
            &auth,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    let after = format!("{snap}?after={v}");
    let waiter = cp.call(Method::GET, &after, None, None, &auth);
    let change = async {
        tokio::task::yield_now().await;
        cp.lifecycle(&created, "Block").await
    };
    let (r, _) = tokio::join!(waiter, change);
    assert_eq!(r.status, StatusCode::OK);
    // A blocked API stays at the gateways, which answer 403 api_blocked.
    assert_eq!(r.json["apis"][0]["lifecycle"], "BLOCKED", "{}", r.json);
    let g = cp.get("/api/am/admin/v1/gateways", "admin").await;
    assert_eq!(g.json["list"][0]["id"], "gw1");
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    auth_and_roles,
    api_crud_and_errors,
    lifecycle_over_http,
    import_and_copy,
    devportal_flow,
    admin_tiers_and_users,
    hostile_input,
    concurrent_conflicting_updates,
    snapshot_long_poll,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}

/// Every operation in the OpenAPI document is routed (401 without credentials unless the
/// document says none are needed, never 404/405), and a method the document does not list on a path is 405.
#[tokio::test]
async fn openapi_document_matches_routes() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let doc = cp
        .call(Method::GET, "/api/am/openapi.json", None, None, &[])
        .await;
    assert_eq!(doc.json["openapi"], "3.0.3");
    let paths = doc.json["paths"].as_object().expect("paths");
    assert_eq!(
        paths
            .values()
            .map(|p| p.as_object().map_or(0, |o| o.len()))
            .sum::<usize>(),
        turnpike_admin::OPERATIONS.len()
    );
    for (path, ops) in paths {
        let concrete = path
            .replace("{kind}", "subscription")
            .replace('{', "x")
            .replace('}', "");
        let ops = ops.as_object().expect("ops");
        for method in ["get", "post", "put", "delete", "patch"] {
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let r = cp.call(m, &concrete, None, None, &[]).await;
            // No credentials needed: `[]`, or `{}` among the alternatives (the public
            // catalogue, anonymous browsing being on by default).
            let open = ops.get(method).is_some_and(|o| {
                o["security"] == serde_json::json!([])
                    || o["security"]
                        .as_array()
                        .is_some_and(|a| a.contains(&serde_json::json!({})))
            });
            if open {
                // A handler may say its record is not found; the router's fallback says
                // "resource not found".
                let unrouted =
                    r.status == StatusCode::NOT_FOUND && r.json["message"] == "resource not found";
                assert!(
                    !unrouted && r.status != StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} should exist: {} {}",
                    r.status,
                    r.json
                );
            } else if ops.contains_key(method) {
                assert_eq!(
                    r.status,
                    StatusCode::UNAUTHORIZED,
                    "{method} {path} should exist"
                );
            } else {
                assert_eq!(
                    r.status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is undocumented"
                );
            }
        }
    }
}
