//! Failures a schema-driven fuzzer (schemathesis, `bench/api-fuzz.sh`) found against the
//! control plane's OpenAPI document, each kept found, on a real socket: an `If-Match` on a
//! record whose name is not ASCII dropped the connection (a panic cutting the name inside
//! a character) instead of answering 412; a user's roles naming a role twice was a 500
//! (a unique-key violation) instead of that role once.

mod km_support;

use http::Method;
use km_support::{control_plane, Auth};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_match_on_a_non_ascii_name_is_412_not_a_dropped_connection() {
    let cp = control_plane(false).await;
    // A tier name of 3-byte characters: an 8-byte cut falls inside the third.
    let name = "€€€€-tier";
    let created = cp
        .call(
            Method::POST,
            "/api/am/admin/v1/throttling/policies/subscription",
            Auth::Basic("admin"),
            Some(json!({"name": name, "requestCount": 10, "unitSeconds": 60})),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.json);
    let path = format!(
        "/api/am/admin/v1/throttling/policies/subscription/{}",
        km_support::urlencode(name)
    );
    // An ETag list that names no revision of this tier.
    let stale = km_support::send_with_header(
        Method::PUT,
        &cp.url(&path),
        Auth::Basic("admin"),
        ("if-match", "\"\", \"\""),
        Some(("application/json", json!({"requestCount": 20}).to_string())),
    )
    .await;
    assert_eq!(stale.status, 412, "{}", stale.json);
    assert_eq!(stale.json["code"], "precondition_failed", "{}", stale.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_named_twice_is_that_role_once() {
    let cp = control_plane(false).await;
    let r = cp
        .call(
            Method::PATCH,
            "/api/am/admin/v1/users/sub2",
            Auth::Basic("admin"),
            Some(json!({"roles": ["publisher", "publisher", "subscriber"]})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(
        r.json["roles"],
        json!(["publisher", "subscriber"]),
        "{}",
        r.json
    );
}
