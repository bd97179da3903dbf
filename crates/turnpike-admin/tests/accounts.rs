//! Users and applications as security objects, on SQLite and a real PostgreSQL: role
//! changes, disabling, password reset and change, the last admin kept; an admin
//! disabling an application, disabling or deleting its owner: the key manager stops
//! minting for it and the next snapshot revokes it (`security.revoked_applications`)
//! and drops its API keys. The same through gateway processes is
//! `crates/turnpike/tests/accounts_e2e.rs`.

mod support;

use base64::Engine;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp, Resp, TOKEN};
use turnpike_store::testing::TestDbs;

const USERS: &str = "/api/am/admin/v1/users";
const ADMIN_APPS: &str = "/api/am/admin/v1/applications";

fn basic_with(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

async fn as_user(cp: &Cp, user: &str, password: &str) -> StatusCode {
    cp.call(
        Method::GET,
        "/api/am/devportal/v1/applications",
        None,
        None,
        &[("authorization", &basic_with(user, password))],
    )
    .await
    .status
}

async fn patch(cp: &Cp, path: &str, user: &str, body: Value) -> Resp {
    cp.call(Method::PATCH, path, Some(user), Some(body), &[])
        .await
}

async fn roles_status_and_passwords(url: String) {
    let cp = control_plane(&url).await;
    let r = cp
        .post(
            USERS,
            "admin",
            json!({"name": "carol", "password": "password1", "roles": ["subscriber"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["status"], "ACTIVE");

    // Role change, counted at once.
    assert_eq!(
        cp.get(USERS, "carol").await.status,
        StatusCode::FORBIDDEN,
        "a subscriber is no admin"
    );
    let r = patch(
        &cp,
        &format!("{USERS}/carol"),
        "admin",
        json!({"roles": ["admin"]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["roles"], json!(["admin"]));
    assert_eq!(cp.get(USERS, "carol").await.status, StatusCode::OK);
    let r = patch(
        &cp,
        &format!("{USERS}/carol"),
        "admin",
        json!({"roles": ["subscriber"]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);

    // Every bad field at once.
    let r = patch(
        &cp,
        &format!("{USERS}/carol"),
        "admin",
        json!({"status": "GONE", "roles": ["root"], "colour": 1}),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["colour", "roles[0]", "status"]);

    // Disabled: no sign-in; enabled again: back.
    let r = patch(
        &cp,
        &format!("{USERS}/carol"),
        "admin",
        json!({"status": "DISABLED"}),
    )
    .await;
    assert_eq!(r.json["status"], "DISABLED", "{}", r.json);
    assert_eq!(
        as_user(&cp, "carol", "password1").await,
        StatusCode::UNAUTHORIZED
    );
    patch(
        &cp,
        &format!("{USERS}/carol"),
        "admin",
        json!({"status": "ACTIVE"}),
    )
    .await;
    assert_eq!(as_user(&cp, "carol", "password1").await, StatusCode::OK);

    // Admin reset, then the user's own change (the current password is checked).
    let r = cp
        .call(
            Method::PUT,
            &format!("{USERS}/carol/password"),
            Some("admin"),
            Some(json!({"password": "short"})),
            &[],
        )
        .await;
    assert_eq!(r.fields(), ["password"]);
    let r = cp
        .call(
            Method::PUT,
            &format!("{USERS}/carol/password"),
            Some("admin"),
            Some(json!({"password": "reset-pass-1"})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.json);
    assert_eq!(
        as_user(&cp, "carol", "password1").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(as_user(&cp, "carol", "reset-pass-1").await, StatusCode::OK);
    let change =
        |current: &str| json!({"currentPassword": current, "newPassword": "my-own-pass-2"});
    let carol = basic_with("carol", "reset-pass-1");
    let path = "/api/am/devportal/v1/me/change-password";
    let r = cp
        .call(
            Method::POST,
            path,
            None,
            Some(change("wrong")),
            &[("authorization", &carol)],
        )
        .await;
    assert_eq!(r.fields(), ["currentPassword"]);
    let r = cp
        .call(
            Method::POST,
            path,
            None,
            Some(change("reset-pass-1")),
            &[("authorization", &carol)],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.json);
    assert_eq!(
        as_user(&cp, "carol", "reset-pass-1").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(as_user(&cp, "carol", "my-own-pass-2").await, StatusCode::OK);
    assert_eq!(
        cp.call(
            Method::PUT,
            &format!("{USERS}/nobody/password"),
            Some("admin"),
            Some(json!({"password": "password9"})),
            &[]
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
}

async fn the_last_admin_stays(url: String) {
    let cp = control_plane(&url).await;
    let me = format!("{USERS}/admin");
    for body in [
        json!({"roles": ["publisher"]}),
        json!({"status": "DISABLED"}),
    ] {
        let r = patch(&cp, &me, "admin", body.clone()).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{body}: {}", r.json);
    }
    let r = cp
        .post(
            USERS,
            "admin",
            json!({"name": "root2", "password": "password1", "roles": ["admin"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    // root2 disables admin (fine: root2 remains), then cannot delete or demote itself.
    let r = patch(&cp, &me, "root2", json!({"status": "DISABLED"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let r = patch(
        &cp,
        &format!("{USERS}/root2"),
        "root2",
        json!({"roles": ["subscriber"]}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "the only active admin left");
    let r = cp
        .call(
            Method::DELETE,
            &format!("{USERS}/root2"),
            Some("root2"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    patch(&cp, &me, "root2", json!({"status": "ACTIVE"})).await;
    let r = cp
        .call(
            Method::DELETE,
            &format!("{USERS}/root2"),
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "another admin remains");
    assert_eq!(
        cp.get(USERS, "root2").await.status,
        StatusCode::UNAUTHORIZED
    );
}

/// A control plane with its key manager (tokens, revocations in the snapshot).
async fn with_key_manager(url: &str) -> Cp {
    let cp = control_plane(url).await;
    turnpike_admin::security::enable(&cp.state, "http://127.0.0.1:9")
        .await
        .expect("key manager");
    Cp {
        app: turnpike_admin::router(cp.state.clone()),
        state: cp.state,
    }
}

async fn snapshot_security(cp: &Cp) -> Value {
    let r = cp
        .call(
            Method::GET,
            "/api/am/gateway/v1/snapshot",
            None,
            None,
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    r.json["security"].clone()
}

async fn client_credentials(cp: &Cp, ck: &str, cs: &str) -> StatusCode {
    let req = http::Request::builder()
        .method(Method::POST)
        .uri("/oauth2/token")
        .header("authorization", basic_with(ck, cs))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(axum::body::Body::from("grant_type=client_credentials"))
        .expect("request");
    cp.raw(req).await.status
}

/// (revoked applications, API-key owners' applications) in the current snapshot.
async fn revoked_and_keys(cp: &Cp) -> (Value, Vec<String>) {
    let sec = snapshot_security(cp).await;
    let keys = sec["api_keys"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k["application"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    (
        sec.get("revoked_applications")
            .cloned()
            .unwrap_or(json!([])),
        keys,
    )
}

async fn disabling_revokes_credentials(url: String) {
    let cp = with_key_manager(&url).await;
    let app = cp
        .post(
            "/api/am/devportal/v1/applications",
            "sub",
            json!({"name": "shop"}),
        )
        .await;
    let id = app.json["id"].as_str().expect("id").to_string();
    let keys = cp
        .post(
            &format!("/api/am/devportal/v1/applications/{id}/generate-keys"),
            "sub",
            json!({"grantTypes": ["client_credentials"]}),
        )
        .await;
    assert_eq!(keys.status, StatusCode::CREATED, "{}", keys.json);
    let (ck, cs) = (
        keys.json["consumerKey"].as_str().expect("ck").to_string(),
        keys.json["consumerSecret"]
            .as_str()
            .expect("cs")
            .to_string(),
    );
    let k = cp
        .post(
            &format!("/api/am/devportal/v1/applications/{id}/api-keys"),
            "sub",
            json!({}),
        )
        .await;
    assert_eq!(k.status, StatusCode::CREATED);
    assert_eq!(client_credentials(&cp, &ck, &cs).await, StatusCode::OK);
    assert_eq!(revoked_and_keys(&cp).await, (json!([]), vec![id.clone()]));

    // An admin disables the application (If-Match honoured).
    let app_path = format!("{ADMIN_APPS}/{id}");
    let r = cp
        .call(
            Method::PATCH,
            &app_path,
            Some("admin"),
            Some(json!({"status": "DISABLED"})),
            &[("if-match", "\"00000000-1\"")],
        )
        .await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    let r = patch(&cp, &app_path, "admin", json!({"status": "DISABLED"})).await;
    assert_eq!(r.json["status"], "DISABLED", "{}", r.json);
    assert_eq!(
        patch(&cp, &app_path, "sub", json!({"status": "ACTIVE"}))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        client_credentials(&cp, &ck, &cs).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(revoked_and_keys(&cp).await, (json!([id]), vec![]));
    patch(&cp, &app_path, "admin", json!({"status": "ACTIVE"})).await;
    assert_eq!(client_credentials(&cp, &ck, &cs).await, StatusCode::OK);
    assert_eq!(revoked_and_keys(&cp).await, (json!([]), vec![id.clone()]));

    // Disabling the owner does the same, and enabling them restores it.
    patch(
        &cp,
        &format!("{USERS}/sub"),
        "admin",
        json!({"status": "DISABLED"}),
    )
    .await;
    assert_eq!(
        client_credentials(&cp, &ck, &cs).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(revoked_and_keys(&cp).await, (json!([id]), vec![]));
    patch(
        &cp,
        &format!("{USERS}/sub"),
        "admin",
        json!({"status": "ACTIVE"}),
    )
    .await;
    assert_eq!(client_credentials(&cp, &ck, &cs).await, StatusCode::OK);

    // Deleting the owner disables the application for good: a new user of the same
    // name does not inherit it.
    let r = cp
        .call(
            Method::DELETE,
            &format!("{USERS}/sub"),
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        client_credentials(&cp, &ck, &cs).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(revoked_and_keys(&cp).await, (json!([id]), vec![]));
    cp.post(
        USERS,
        "admin",
        json!({"name": "sub", "password": "password1", "roles": ["subscriber"]}),
    )
    .await;
    assert_eq!(
        client_credentials(&cp, &ck, &cs).await,
        StatusCode::UNAUTHORIZED
    );
    let r = cp.get(&app_path, "admin").await;
    assert_eq!(r.json["status"], "DISABLED");
    let listed = cp.get(&format!("{ADMIN_APPS}?owner=sub"), "admin").await;
    assert_eq!(listed.json["count"], 1, "{}", listed.json);
}

async fn self_signup_with_and_without_approval(url: String) {
    let cp = control_plane(&url).await;
    let signup = |name: &str| json!({"name": name, "password": "password1"});
    let path = "/api/am/devportal/v1/self-signup";
    let r = cp
        .call(Method::POST, path, None, Some(signup("dave")), &[])
        .await;
    assert_eq!(
        (r.status, r.json["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("self_signup_disabled"))
    );
    let settings = "/api/am/admin/v1/settings/self-signup";
    let r = cp
        .call(
            Method::PUT,
            settings,
            Some("admin"),
            Some(json!({"enabled": true, "approval": true})),
            &[],
        )
        .await;
    assert_eq!(r.json, json!({"enabled": true, "approval": true}));
    let r = cp
        .call(
            Method::PUT,
            settings,
            Some("sub"),
            Some(json!({"enabled": false})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "admins only");
    let r = cp
        .call(Method::POST, path, None, Some(signup("dave")), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(
        (r.json["status"].as_str(), &r.json["roles"]),
        (Some("PENDING"), &json!(["subscriber"]))
    );
    assert_eq!(
        as_user(&cp, "dave", "password1").await,
        StatusCode::UNAUTHORIZED,
        "awaits approval"
    );
    let r = cp
        .call(Method::POST, path, None, Some(signup("dave")), &[])
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let r = cp
        .call(
            Method::POST,
            path,
            None,
            Some(json!({"name": "a:b", "password": "short", "roles": ["admin"]})),
            &[],
        )
        .await;
    let mut f = r.fields();
    f.sort();
    assert_eq!(
        f,
        ["name", "password", "roles"],
        "no roles of one's choosing"
    );
    patch(
        &cp,
        &format!("{USERS}/dave"),
        "admin",
        json!({"status": "ACTIVE"}),
    )
    .await;
    assert_eq!(
        as_user(&cp, "dave", "password1").await,
        StatusCode::OK,
        "approved"
    );
    cp.call(
        Method::PUT,
        settings,
        Some("admin"),
        Some(json!({"approval": false})),
        &[],
    )
    .await;
    let r = cp
        .call(Method::POST, path, None, Some(signup("erin")), &[])
        .await;
    assert_eq!(r.json["status"], "ACTIVE", "{}", r.json);
    assert_eq!(as_user(&cp, "erin", "password1").await, StatusCode::OK);
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    self_signup_with_and_without_approval,
    roles_status_and_passwords,
    the_last_admin_stays,
    disabling_revokes_credentials,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
