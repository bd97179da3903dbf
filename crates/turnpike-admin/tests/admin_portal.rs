//! What the Admin and Publisher portals read, over real sockets, on SQLite and on a real
//! PostgreSQL: the Admin's list of every user's applications (owner, search, paging), a
//! user's roles changed, the audit log naming APIs, applications and subscriptions (the id
//! kept once the object is deleted), the tiers a publisher may offer, and a publisher's
//! subscription list naming each application.

mod km_support;

use http::Method;
use km_support::{control_plane, control_plane_on_postgres, Auth, Cp};
use serde_json::{json, Value};

const ADMIN_APPS: &str = "/api/am/admin/v1/applications";

async fn app(cp: &Cp, owner: &str, name: &str) -> String {
    let v = cp
        .ok(
            Method::POST,
            "/api/am/devportal/v1/applications",
            Auth::Basic(owner),
            Some(json!({"name": name, "throttlingPolicy": "Unlimited"})),
        )
        .await;
    v["id"].as_str().expect("id").to_string()
}

fn names(v: &Value) -> Vec<(String, String)> {
    v["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|a| {
            let s = |k: &str| a[k].as_str().unwrap_or("").to_string();
            (s("name"), s("owner"))
        })
        .collect()
}

async fn every_application(cp: &Cp) {
    app(cp, "sub", "shop-web").await;
    app(cp, "sub2", "mobile").await;
    app(cp, "admin", "admin-tool").await;
    let all = cp
        .ok(Method::GET, ADMIN_APPS, Auth::Basic("admin"), None)
        .await;
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(
        names(&all),
        pairs(&[
            ("admin-tool", "admin"),
            ("mobile", "sub2"),
            ("shop-web", "sub")
        ]),
        "every user's, by name: {all}"
    );
    // The admin's own DevPortal list is theirs alone (what the console used to show).
    let own = cp
        .ok(
            Method::GET,
            "/api/am/devportal/v1/applications",
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(names(&own), pairs(&[("admin-tool", "admin")]));
    // Search: the name or the owner, case-insensitive; with the owner filter too.
    let q = |query: &str| format!("{ADMIN_APPS}?{query}");
    let by_name = cp
        .ok(Method::GET, &q("query=SHOP"), Auth::Basic("admin"), None)
        .await;
    assert_eq!(names(&by_name), pairs(&[("shop-web", "sub")]));
    let by_owner = cp
        .ok(Method::GET, &q("query=sub2"), Auth::Basic("admin"), None)
        .await;
    assert_eq!(names(&by_owner), pairs(&[("mobile", "sub2")]));
    let both = cp
        .ok(
            Method::GET,
            &q("query=o&owner=sub2"),
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(names(&both), pairs(&[("mobile", "sub2")]));
    let wildcard = cp
        .ok(Method::GET, &q("query=%25"), Auth::Basic("admin"), None)
        .await;
    assert_eq!(
        wildcard["count"], 0,
        "a % is a character, not a pattern: {wildcard}"
    );
    // Paging: the page, and the total of every match.
    let page = cp
        .ok(
            Method::GET,
            &q("limit=1&offset=1"),
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(names(&page), pairs(&[("mobile", "sub2")]));
    assert_eq!(page["pagination"]["total"], 3, "{page}");
    // Bad input is named; admins only.
    let long = "x".repeat(201);
    let r = cp
        .call(
            Method::GET,
            &q(&format!("query={long}")),
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["errors"][0]["field"].as_str()),
        (400, Some("query")),
        "{}",
        r.json
    );
    let r = cp
        .call(Method::GET, ADMIN_APPS, Auth::Basic("pub"), None)
        .await;
    assert_eq!(r.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_lists_every_users_applications_on_sqlite() {
    every_application(&control_plane(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_lists_every_users_applications_on_postgres() {
    every_application(&control_plane_on_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_changes_a_users_roles() {
    let cp = control_plane(false).await;
    let mine = "/api/am/devportal/v1/applications";
    let r = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/apis",
            Auth::Basic("sub"),
            None,
        )
        .await;
    assert_eq!(r.status, 403, "a subscriber is no publisher yet");
    let user = cp
        .ok(
            Method::PATCH,
            "/api/am/admin/v1/users/sub",
            Auth::Basic("admin"),
            Some(json!({"roles": ["subscriber", "publisher"]})),
        )
        .await;
    assert_eq!(user["roles"], json!(["publisher", "subscriber"]));
    cp.ok(
        Method::GET,
        "/api/am/publisher/v1/apis",
        Auth::Basic("sub"),
        None,
    )
    .await;
    cp.ok(Method::GET, mine, Auth::Basic("sub"), None).await;
    let r = cp
        .call(
            Method::PATCH,
            "/api/am/admin/v1/users/sub",
            Auth::Basic("admin"),
            Some(json!({"roles": ["owner"]})),
        )
        .await;
    assert_eq!(
        (r.status, r.json["errors"][0]["field"].as_str()),
        (400, Some("roles[0]"))
    );
    // The only admin cannot be demoted.
    let r = cp
        .call(
            Method::PATCH,
            "/api/am/admin/v1/users/admin",
            Auth::Basic("admin"),
            Some(json!({"roles": ["publisher"]})),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.json);
}

/// An API published with the Gold tier, and `sub`'s application subscribed to it.
async fn subscribed(cp: &Cp) -> (String, String, String) {
    let api = cp
        .ok(
            Method::POST,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            Some(json!({"name": "Pets", "context": "/pets", "version": "v1", "policies": ["Gold"],
                "endpoints": ["http://127.0.0.1:9"], "resources": [{"path": "/*", "methods": ["GET"]}]})),
        )
        .await;
    let api_id = api["id"].as_str().expect("id").to_string();
    cp.ok(
        Method::POST,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let app_id = app(cp, "sub", "shop-web").await;
    let sub = cp
        .ok(
            Method::POST,
            "/api/am/devportal/v1/subscriptions",
            Auth::Basic("sub"),
            Some(json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "Gold"})),
        )
        .await;
    (api_id, app_id, sub["id"].as_str().expect("id").to_string())
}

async fn audit_names_objects(cp: &Cp) {
    let (api_id, app_id, sub_id) = subscribed(cp).await;
    cp.ok(
        Method::POST,
        &format!("/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId={sub_id}&blockState=BLOCKED"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    let log = cp
        .ok(
            Method::GET,
            "/api/am/admin/v1/audit-log?limit=3",
            Auth::Basic("admin"),
            None,
        )
        .await;
    let actions: Vec<&str> = log["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        actions,
        [
            "subscription shop-web \u{2192} Pets v1 -> BLOCKED",
            "subscribe shop-web to Pets v1",
            "create application shop-web",
        ],
        "{log}"
    );
    let newest = &log["list"][0];
    assert_eq!(
        newest["summary"],
        format!("subscription {sub_id} -> BLOCKED")
    );
    assert_eq!(
        newest["objects"],
        json!([{"id": sub_id, "kind": "subscription", "name": "shop-web \u{2192} Pets v1"}])
    );
    assert_eq!(
        log["list"][1]["objects"],
        json!([
            {"id": app_id, "kind": "application", "name": "shop-web"},
            {"id": api_id, "kind": "api", "name": "Pets v1"},
        ])
    );
    // Renamed: the log reads with today's name. Deleted: the id stays, named by nobody.
    cp.ok(
        Method::PATCH,
        &format!("/api/am/devportal/v1/applications/{app_id}"),
        Auth::Basic("sub"),
        Some(json!({"name": "shop-web-2"})),
    )
    .await;
    let q = "/api/am/admin/v1/audit-log?q=create%20application";
    let log = cp.ok(Method::GET, q, Auth::Basic("admin"), None).await;
    assert_eq!(
        log["list"][0]["action"], "create application shop-web-2",
        "{log}"
    );
    cp.ok(
        Method::DELETE,
        &format!("/api/am/devportal/v1/applications/{app_id}"),
        Auth::Basic("sub"),
        None,
    )
    .await;
    let log = cp.ok(Method::GET, q, Auth::Basic("admin"), None).await;
    let entry = &log["list"][0];
    assert_eq!(
        entry["action"],
        format!("create application {app_id}"),
        "{log}"
    );
    assert_eq!(
        entry["objects"],
        json!([{"id": app_id, "kind": null, "name": null}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_names_objects_on_sqlite() {
    audit_names_objects(&control_plane(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_names_objects_on_postgres() {
    audit_names_objects(&control_plane_on_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_reads_the_tiers_and_who_subscribes() {
    let cp = control_plane(false).await;
    let tiers = cp
        .ok(
            Method::GET,
            "/api/am/publisher/v1/throttling-policies/subscription",
            Auth::Basic("pub"),
            None,
        )
        .await;
    let tier_names: Vec<&str> = tiers["list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tier_names.contains(&"Gold") && tier_names.contains(&"Unlimited"),
        "{tiers}"
    );
    let r = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/throttling-policies/subscription",
            Auth::Basic("sub"),
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    let r = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/throttling-policies/gold",
            Auth::Basic("pub"),
            None,
        )
        .await;
    assert_eq!(r.status, 404);

    let (api_id, app_id, _) = subscribed(&cp).await;
    let subs = cp
        .ok(
            Method::GET,
            &format!("/api/am/publisher/v1/subscriptions?apiId={api_id}"),
            Auth::Basic("pub"),
            None,
        )
        .await;
    assert_eq!(subs["list"][0]["applicationId"], app_id.as_str());
    assert_eq!(subs["list"][0]["applicationName"], "shop-web", "{subs}");
    // Deleting the API is refused while the subscription lasts.
    let r = cp
        .call(
            Method::DELETE,
            &format!("/api/am/publisher/v1/apis/{api_id}"),
            Auth::Basic("pub"),
            None,
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visitors_read_a_published_apis_documents() {
    let cp = control_plane(false).await;
    let (api_id, _, _) = subscribed(&cp).await;
    let doc = cp
        .ok(
            Method::POST,
            &format!("/api/am/publisher/v1/apis/{api_id}/documents"),
            Auth::Basic("pub"),
            Some(json!({"name": "Getting started", "content": "# Welcome"})),
        )
        .await;
    let doc_id = doc["id"].as_str().expect("id");
    let list = format!("/api/am/devportal/v1/apis/{api_id}/documents");
    // Part of the API's public page: no credentials needed while anonymous browsing is on.
    let r = cp.call(Method::GET, &list, Auth::None, None).await;
    assert_eq!(
        (r.status, &r.json["list"][0]["name"]),
        (200, &json!("Getting started")),
        "{}",
        r.json
    );
    let content = format!("{list}/{doc_id}/content");
    let r = cp.call(Method::GET, &content, Auth::None, None).await;
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"]
        .to_str()
        .is_ok_and(|t| t.starts_with("text/markdown")));
    // Bad credentials are still refused; with the catalogue closed, visitors get 401.
    let r = cp
        .call(Method::GET, &list, Auth::Bearer("nonsense"), None)
        .await;
    assert_eq!(r.status, 401);
    cp.ok(
        Method::PUT,
        "/api/am/admin/v1/settings/devportal",
        Auth::Basic("admin"),
        Some(json!({"anonymousBrowsing": false})),
    )
    .await;
    let r = cp.call(Method::GET, &list, Auth::None, None).await;
    assert_eq!(r.status, 401);
    cp.ok(Method::GET, &list, Auth::Basic("sub"), None).await;
}
