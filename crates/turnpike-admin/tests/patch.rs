//! `PUT` resets nothing it is not given, and `PATCH` is a JSON Merge Patch (RFC 7396), on
//! APIs, applications and tiers (token budgets too), run against SQLite and a real
//! PostgreSQL; OAuth2 keys change in place (scopes, grant types, callback) with the same
//! consumer key.

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp, Resp};
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";
const APPS: &str = "/api/am/devportal/v1/applications";

async fn send(cp: &Cp, method: Method, path: &str, user: &str, body: Value) -> Resp {
    cp.call(method, path, Some(user), Some(body), &[]).await
}

/// A merge patch sent as `application/merge-patch+json`.
async fn merge(cp: &Cp, path: &str, user: &str, body: Value, if_match: Option<&str>) -> Resp {
    let mut req = http::Request::builder()
        .method(Method::PATCH)
        .uri(path)
        .header("authorization", support::basic(user))
        .header("content-type", "application/merge-patch+json");
    if let Some(tag) = if_match {
        req = req.header("if-match", tag);
    }
    cp.raw(
        req.body(axum::body::Body::from(body.to_string()))
            .expect("request"),
    )
    .await
}

async fn apis_keep_what_a_put_leaves_out(url: String) {
    let cp = control_plane(&url).await;
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": "Pets", "context": "/pets", "version": "v1", "isDefaultVersion": true,
                "description": "all the pets", "endpoints": ["http://127.0.0.1:9"],
                "resources": [{"path": "/*", "methods": ["GET"]}], "policies": ["Gold", "Unlimited"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_string();
    let path = format!("{APIS}/{id}");

    let r = send(
        &cp,
        Method::PUT,
        &path,
        "pub",
        json!({"endpoints": ["http://127.0.0.1:10"]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["endpoints"], json!(["http://127.0.0.1:10"]));
    for (field, kept) in [
        ("isDefaultVersion", json!(true)),
        ("description", json!("all the pets")),
        ("policies", json!(["Gold", "Unlimited"])),
        ("resources", json!([{"path": "/*", "methods": ["GET"]}])),
        ("name", json!("Pets")),
    ] {
        assert_eq!(r.json[field], kept, "PUT without {field} keeps it");
    }

    // PATCH: named fields change, null restores a default, the rest stays.
    let tag = r.etag();
    let r = merge(
        &cp,
        &path,
        "pub",
        json!({"isDefaultVersion": false, "description": null, "policies": ["Gold"]}),
        Some(&tag),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["isDefaultVersion"], false);
    assert_eq!(r.json["description"], "");
    assert_eq!(r.json["policies"], json!(["Gold"]));
    assert_eq!(r.json["endpoints"], json!(["http://127.0.0.1:10"]));
    let stale = merge(&cp, &path, "pub", json!({"name": "X"}), Some(&tag)).await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED, "old ETag");

    // Refused: read-only fields changed, context/version changed, bad values (all at once).
    let r = merge(
        &cp,
        &path,
        "pub",
        json!({"id": "another", "context": "/cats", "endpoints": ["ftp://x"], "policies": ["Nope"]}),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.fields(), ["id"], "read-only first: {}", r.json);
    let r = merge(
        &cp,
        &path,
        "pub",
        json!({"context": "/cats", "endpoints": ["ftp://x"], "description": 7}),
        None,
    )
    .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["description", "endpoints[0]"], "{}", r.json);
    let r = merge(&cp, &path, "pub", json!({"policies": ["Nope"]}), None).await;
    assert_eq!(r.fields(), ["policies[0]"], "{}", r.json);
    let r = merge(&cp, &path, "pub", json!({"context": "/cats"}), None).await;
    assert_eq!(r.fields(), ["context"]);
    let r = merge(&cp, &path, "sub", json!({"name": "x"}), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = merge(
        &cp,
        &format!("{APIS}/nope"),
        "pub",
        json!({"name": "x"}),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

async fn applications_keep_what_a_put_leaves_out(url: String) {
    let cp = control_plane(&url).await;
    let r = cp
        .post(
            APPS,
            "sub",
            json!({"name": "shop", "throttlingPolicy": "20PerMin", "description": "my shop"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let path = format!("{APPS}/{}", r.json["id"].as_str().expect("id"));
    let r = send(&cp, Method::PUT, &path, "sub", json!({"name": "store"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(
        (
            &r.json["name"],
            &r.json["throttlingPolicy"],
            &r.json["description"]
        ),
        (&json!("store"), &json!("20PerMin"), &json!("my shop"))
    );
    let r = merge(
        &cp,
        &path,
        "sub",
        json!({"description": null, "throttlingPolicy": "50PerMin"}),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(
        (
            &r.json["name"],
            &r.json["throttlingPolicy"],
            &r.json["description"]
        ),
        (&json!("store"), &json!("50PerMin"), &json!(""))
    );
    let r = merge(&cp, &path, "sub", json!({"status": "DISABLED"}), None).await;
    assert_eq!(r.fields(), ["status"], "only admins disable applications");
    let r = merge(&cp, &path, "sub", json!({"name": null}), None).await;
    assert_eq!(r.fields(), ["name"], "a required field cannot be removed");
    let r = merge(&cp, &path, "sub2", json!({"name": "mine"}), None).await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "someone else's application"
    );
}

/// Tiers: burst, bandwidth and billing, conditional groups; PUT keeps, PATCH merges; the
/// snapshot carries them in the file's terms.
async fn tiers_keep_what_a_put_leaves_out(url: String) {
    let cp = control_plane(&url).await;
    let base = "/api/am/admin/v1/throttling/policies";
    let r = cp
        .post(
            &format!("{base}/subscription"),
            "admin",
            json!({"name": "Plat", "requestCount": 100, "unitSeconds": 60,
                "burst": {"requests": 5, "per": "second"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let path = format!("{base}/subscription/Plat");
    let r = send(
        &cp,
        Method::PUT,
        &path,
        "admin",
        json!({"description": "the best"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(
        (&r.json["requestCount"], &r.json["burst"]),
        (&json!(100), &json!({"requests": 5, "per": "second"})),
        "PUT keeps the limit and the burst"
    );
    let r = merge(
        &cp,
        &path,
        "admin",
        json!({"requestCount": null, "dataAmount": 1048576, "stopOnQuota": false}),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(
        (
            &r.json["requestCount"],
            &r.json["dataAmount"],
            &r.json["stopOnQuota"],
            &r.json["description"]
        ),
        (
            &Value::Null,
            &json!(1048576),
            &json!(false),
            &json!("the best")
        )
    );
    let snap = cp
        .call(
            Method::GET,
            "/api/am/gateway/v1/snapshot",
            None,
            None,
            &[("authorization", &format!("Bearer {}", support::TOKEN))],
        )
        .await;
    let tier = snap.json["throttling"]["subscription_tiers"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "Plat").cloned())
        .expect("Plat in the snapshot");
    assert_eq!(tier["quota"], json!({"bytes": 1048576, "per": "minute"}));
    assert_eq!(tier["burst"], json!({"requests": 5, "per": "second"}));
    assert_eq!(tier["stop_on_quota"], false);

    // Wrong family, bad shapes, both limits: every field at once.
    let r = cp
        .post(
            &format!("{base}/application"),
            "admin",
            json!({"name": "A", "burst": {"requests": 1, "per": "second"}, "requestCount": 1, "dataAmount": 2}),
        )
        .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["burst", "dataAmount"], "{}", r.json);
    let r = cp
        .post(
            &format!("{base}/advanced"),
            "admin",
            json!({"name": "Adv", "requestCount": 10, "conditionalGroups": [{"conditions": [{"type": "planet"}], "limit": {"requests": 1, "per": "second"}}]}),
        )
        .await;
    assert_eq!(r.fields(), ["conditionalGroups"], "{}", r.json);
    let r = cp
        .post(
            &format!("{base}/advanced"),
            "admin",
            json!({"name": "Adv", "requestCount": 10, "conditionalGroups": [{"name": "lan", "conditions": [{"type": "ip", "ip": "10.0.0.0/8"}], "limit": {"requests": 1, "per": "second"}}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let r = merge(
        &cp,
        &format!("{base}/advanced/Adv"),
        "admin",
        json!({"conditionalGroups": null}),
        None,
    )
    .await;
    assert!(r.json.get("conditionalGroups").is_none(), "{}", r.json);
}

/// Token budgets (LLM APIs) on any tier family: validated with every problem named,
/// kept by a `PUT` that leaves them out, cleared by `[]`, carried in the snapshot as the
/// file's `tokens:`, and shown to subscribers by the DevPortal's tier list.
async fn tiers_carry_token_limits(url: String) {
    let cp = control_plane(&url).await;
    let base = "/api/am/admin/v1/throttling/policies";
    let limits = json!([{"total": 5000, "per": "minute"}, {"prompt": 100000, "per": "day", "by": ["model"]}]);
    let r = cp
        .post(
            &format!("{base}/subscription"),
            "admin",
            json!({"name": "AiGold", "requestCount": 100, "unitSeconds": 60, "tokenLimits": limits}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["tokenLimits"], limits);
    let path = format!("{base}/subscription/AiGold");
    let r = send(
        &cp,
        Method::PUT,
        &path,
        "admin",
        json!({"description": "LLM"}),
    )
    .await;
    assert_eq!(r.json["tokenLimits"], limits, "PUT keeps them");
    let snap = cp
        .call(
            Method::GET,
            "/api/am/gateway/v1/snapshot",
            None,
            None,
            &[("authorization", &format!("Bearer {}", support::TOKEN))],
        )
        .await;
    let tier = snap.json["throttling"]["subscription_tiers"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "AiGold").cloned())
        .expect("AiGold in the snapshot");
    assert_eq!(tier["tokens"], limits, "the file's tokens:");
    assert_eq!(tier["quota"], json!({"requests": 100, "per": "minute"}));
    let listed = cp
        .get(
            "/api/am/devportal/v1/throttling-policies/subscription",
            "sub",
        )
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.json);
    let shown = listed.json["list"]
        .as_array()
        .and_then(|l| l.iter().find(|t| t["name"] == "AiGold").cloned());
    assert_eq!(shown.map(|t| t["tokenLimits"].clone()), Some(limits));

    // Two parts in one limit, an unknown key, five limits: each named.
    let r = cp
        .post(
            &format!("{base}/application"),
            "admin",
            json!({"name": "A", "tokenLimits": [{"total": 10, "prompt": 5, "per": "minute"},
                {"total": 1, "per": "hour", "by": ["colour"]}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["tokenLimits[0]", "tokenLimits[1].by"], "{}", r.json);
    let five: Vec<Value> = ["second", "minute", "hour", "day", "month"]
        .iter()
        .map(|per| json!({"total": 1, "per": per}))
        .collect();
    let r = cp
        .post(
            &format!("{base}/advanced"),
            "admin",
            json!({"name": "Adv", "tokenLimits": five}),
        )
        .await;
    assert_eq!(r.fields(), ["tokenLimits"], "{}", r.json);
    let r = merge(&cp, &path, "admin", json!({"tokenLimits": []}), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert!(r.json.get("tokenLimits").is_none(), "{}", r.json);
}

/// Keys generated without scopes get some later, with the same consumer key.
async fn keys_change_in_place(url: String) {
    let cp = control_plane(&url).await;
    let app = cp.post(APPS, "sub", json!({"name": "shop"})).await;
    let id = app.json["id"].as_str().expect("id").to_string();
    let keys = cp
        .post(
            &format!("{APPS}/{id}/generate-keys"),
            "sub",
            json!({"grantTypes": ["client_credentials"]}),
        )
        .await;
    assert_eq!(keys.status, StatusCode::CREATED, "{}", keys.json);
    assert_eq!(keys.json["scopes"], json!([]));
    let path = format!("{APPS}/{id}/keys/PRODUCTION");
    let r = send(
        &cp,
        Method::PUT,
        &path,
        "sub",
        json!({"scopes": ["pets:read"], "grantTypes": ["client_credentials", "refresh_token"],
            "callbackUrl": "https://shop.example.com/cb"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(
        r.json["consumerKey"], keys.json["consumerKey"],
        "same client id"
    );
    assert!(
        r.json.get("consumerSecret").is_none(),
        "the secret is not shown again"
    );
    assert_eq!(r.json["scopes"], json!(["pets:read"]));
    assert_eq!(r.json["callbackUrl"], "https://shop.example.com/cb");
    let r = send(
        &cp,
        Method::PUT,
        &path,
        "sub",
        json!({"tokenType": "OPAQUE"}),
    )
    .await;
    assert_eq!(
        (
            &r.json["tokenType"],
            &r.json["scopes"],
            &r.json["grantTypes"]
        ),
        (
            &json!("OPAQUE"),
            &json!(["pets:read"]),
            &json!(["client_credentials", "refresh_token"])
        ),
        "fields left out keep their values"
    );
    let listed = cp.get(&format!("{APPS}/{id}/keys"), "sub").await;
    assert_eq!(listed.json["list"][0]["scopes"], json!(["pets:read"]));
    let r = send(
        &cp,
        Method::PUT,
        &path,
        "sub",
        json!({"callbackUrl": "not a url", "scopes": ["a b"]}),
    )
    .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["callbackUrl", "scopes[0]"]);
    let r = send(
        &cp,
        Method::PUT,
        &format!("{APPS}/{id}/keys/SANDBOX"),
        "sub",
        json!({}),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = send(&cp, Method::PUT, &path, "sub2", json!({})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "someone else's keys");
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    apis_keep_what_a_put_leaves_out,
    applications_keep_what_a_put_leaves_out,
    tiers_keep_what_a_put_leaves_out,
    tiers_carry_token_limits,
    keys_change_in_place,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
