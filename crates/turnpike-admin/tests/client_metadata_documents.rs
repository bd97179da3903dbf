//! Client ID metadata documents under the admin's policy, over real sockets: the setting
//! (`/api/am/admin/v1/settings/client-id-metadata-documents`) lists every bad field at
//! once and is off by default; turned on, the key manager's RFC 8414 metadata says
//! `client_id_metadata_document_supported`, and an authorization request whose
//! `client_id` is the URL of a document served on 127.0.0.1 (allowed by the test
//! setting) reaches the login page, its client registered as an application of the
//! policy's owner on the SQL store.

mod km_support;

use http::Method;
use km_support::{control_plane, Auth};
use serde_json::{json, Value};

const SETTINGS: &str = "/api/am/admin/v1/settings/client-id-metadata-documents";
const REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// Serves `/client.json`, a document naming itself, on 127.0.0.1 (port 0).
async fn document() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://{}/client.json",
        listener.local_addr().expect("addr")
    );
    let body = json!({"client_id": url, "client_name": "Docs agent", "redirect_uris": [REDIRECT]});
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            let b = body.clone();
            async move { axum::Json(b) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn supported(doc: &Value) -> bool {
    doc["client_id_metadata_document_supported"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_follow_the_admins_policy() {
    let cp = control_plane(false).await;
    let meta = "/.well-known/oauth-authorization-server";
    let r = cp
        .call(Method::GET, SETTINGS, Auth::Basic("admin"), None)
        .await;
    assert_eq!(
        (r.status, &r.json["enabled"]),
        (200, &json!(false)),
        "{}",
        r.json
    );
    assert!(!supported(
        &cp.call(Method::GET, meta, Auth::None, None).await.json
    ));
    let r = cp
        .call(Method::GET, SETTINGS, Auth::Basic("pub"), None)
        .await;
    assert_eq!(r.status, 403, "admins only");

    let bad = json!({"enabled": "yes", "allowedHosts": ["ok.example", "bad host"], "owner": "nobody", "maxClients": 0, "extra": 1});
    let r = cp
        .call(Method::PUT, SETTINGS, Auth::Basic("admin"), Some(bad))
        .await;
    assert_eq!(r.status, 400, "{}", r.json);
    let fields: Vec<&str> = r.json["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["field"].as_str())
        .collect();
    for want in ["enabled", "allowedHosts[1]", "owner", "maxClients", "extra"] {
        assert!(fields.contains(&want), "{want} not in {fields:?}");
    }

    let on = json!({"enabled": true, "allowPrivateAddresses": true, "owner": "sub", "allowedHosts": ["127.0.0.1"]});
    let r = cp
        .call(Method::PUT, SETTINGS, Auth::Basic("admin"), Some(on))
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["allowedHosts"], json!(["127.0.0.1"]));
    assert!(supported(
        &cp.call(Method::GET, meta, Auth::None, None).await.json
    ));

    let client_id = document().await;
    let q = format!(
        "/oauth2/authorize?response_type=code&client_id={}&redirect_uri={}\
         &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&state=s",
        km_support::urlencode(&client_id),
        km_support::urlencode(REDIRECT)
    );
    let r = cp.call(Method::GET, &q, Auth::None, None).await;
    assert_eq!(r.status, 200, "the login page: {}", r.json);
    let apps = cp
        .ok(
            Method::GET,
            "/api/am/devportal/v1/applications",
            Auth::Basic("sub"),
            None,
        )
        .await;
    let names: Vec<&str> = apps["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("Docs agent (")),
        "{names:?}"
    );

    // A host the policy does not list is refused before anything is fetched.
    let off_list = json!({"allowedHosts": ["agents.example"]});
    cp.ok(Method::PUT, SETTINGS, Auth::Basic("admin"), Some(off_list))
        .await;
    let other = q.replace("client.json", "other.json");
    let r = cp.call(Method::GET, &other, Auth::None, None).await;
    assert_eq!(r.status, 400);
}
