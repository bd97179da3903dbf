//! Rolling upgrades: a control plane of this build serves a gateway one wire version
//! older. `tests/fixtures/wire-v1/` holds what the previous wire version's control plane
//! (main before the `x-turnpike-wire` header, commit 3c6a4d6) answered to the previous
//! follower's two requests over one fixed store content: the first full snapshot and then
//! a delta. Recorded once (`TURNPIKE_RECORD_WIRE_FIXTURE=1`) when wire version 2 was
//! introduced, by code whose snapshot bodies (`snapshot/build.rs`, `delta.rs`,
//! `index.rs`, `subs.rs`, `turnpike_sync::wire`) were main's at 3c6a4d6, unchanged; never
//! regenerated: a new wire version adds a new directory.
//!
//! What is tested, over a real socket on 127.0.0.1:0 against this build's control plane
//! with the same content:
//! - the previous follower's requests, header for header as it sends them (no
//!   `x-turnpike-wire`), get the same status, version, hash and kind headers and
//!   byte-identical bodies: the old follower parses exactly what it parsed before
//!   (its types refuse unknown fields), so it accepts them, and its hash check agrees;
//! - this build's follower code (`turnpike_sync::wire`) reads the previous version's
//!   bodies: the full file splits into parts with the recorded hash, and the recorded
//!   delta applied to them gives the recorded hash (a new gateway following an older
//!   control plane, the reverse skew);
//! - a follower that announces a wire version older than the oldest served gets 426.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_admin::{AdminConfig, AppState};
use turnpike_store::{
    bulk_app_id, ApiInput, BulkSpec, LifecycleAction, PasswordParams, Resource, Store,
    SubscriptionState,
};
use turnpike_sync::wire::{hash_hex, Delta, Parts};

const TOKEN: &str = "wire-fixture-token";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire-v1")
}

/// The store content both recordings were made from: three open APIs, four
/// applications, six subscriptions.
async fn first_content(store: &Store) {
    store
        .bulk_load(&BulkSpec {
            apis: 3,
            prefix: "fx".into(),
            endpoint: "http://127.0.0.1:9".into(),
            open: true,
            applications: 4,
            owner: "admin".into(),
            subscriptions: 6,
        })
        .await
        .expect("bulk load");
}

/// The change between the two requests: a new published API, one subscription blocked.
async fn change(store: &Store) {
    let mut tx = store.begin_write().await.expect("begin");
    let input = ApiInput {
        name: "Added".into(),
        context: "/added".into(),
        version: "v1".into(),
        is_default: true,
        api_type: "HTTP".into(),
        description: String::new(),
        endpoints: vec!["http://127.0.0.1:9".into()],
        sandbox_endpoints: vec![],
        resources: vec![Resource {
            path: "/*".into(),
            methods: vec!["GET".into()],
            ..Default::default()
        }],
        tiers: vec!["Unlimited".into()],
        definition: None,
        options: Default::default(),
    };
    let api = tx.create_api(&input, "admin").await.expect("create");
    tx.set_api_security(&api.id, Some(r#""none""#))
        .await
        .expect("open");
    tx.change_lifecycle(&api.id, LifecycleAction::Publish, None)
        .await
        .expect("publish");
    let app = bulk_app_id("fx", 0);
    let subs = store
        .list_subscriptions(Some(app.as_str()), None, 10, 0)
        .await
        .expect("subscriptions");
    let mut ids: Vec<String> = subs.items.into_iter().map(|s| s.id).collect();
    ids.sort();
    let first = ids.first().expect("a subscription of app 0");
    tx.set_subscription_state(first, SubscriptionState::Blocked, None)
        .await
        .expect("block");
    tx.commit("admin", "fixture change").await.expect("commit");
}

async fn serve(store: Store) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let state = AppState::new(
        store,
        AdminConfig {
            gateway_token: TOKEN.into(),
            long_poll: Duration::from_secs(1),
            ..AdminConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(turnpike_admin::serve(listener, state, async move {
        let _ = rx.await;
    }));
    (addr, stop)
}

struct Answer {
    status: u16,
    headers: Value,
    body: Bytes,
}

/// The headers a follower reads, as recorded (`x-turnpike-wire` is never sent to a
/// version 1 follower, so its recorded answers hold the first three only).
const READ_HEADERS: [&str; 4] = [
    "x-turnpike-version",
    "x-turnpike-hash",
    "x-turnpike-kind",
    "x-turnpike-wire",
];

async fn get(addr: SocketAddr, path: &str, headers: &[(String, String)]) -> Answer {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut req = http::Request::get(format!("http://{addr}{path}"));
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = client
        .request(req.body(Empty::new()).expect("request"))
        .await
        .expect("response");
    let status = resp.status().as_u16();
    let mut read = serde_json::Map::new();
    for name in READ_HEADERS {
        if let Some(v) = resp.headers().get(name).and_then(|v| v.to_str().ok()) {
            read.insert(name.into(), json!(v));
        }
    }
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        headers: Value::Object(read),
        body,
    }
}

/// The previous follower's requests: first with nothing served, then accepting a delta
/// against the full snapshot it got.
fn old_requests(full_version: &str, full_hash: &str) -> [(String, Vec<(String, String)>); 2] {
    let base = |serving: &str, hash: &str| {
        vec![
            ("authorization".to_string(), format!("Bearer {TOKEN}")),
            ("x-turnpike-gateway".to_string(), "gw-v1".to_string()),
            ("x-turnpike-serving".to_string(), serving.to_string()),
            ("x-turnpike-serving-hash".to_string(), hash.to_string()),
        ]
    };
    let mut delta = base(full_version, full_hash);
    delta.push(("x-turnpike-accept-delta".to_string(), "1".to_string()));
    [
        (
            "/api/am/gateway/v1/snapshot?after=0&wait=1".to_string(),
            base("0", ""),
        ),
        (
            format!("/api/am/gateway/v1/snapshot?after={full_version}&wait=1"),
            delta,
        ),
    ]
}

fn header(a: &Answer, name: &str) -> String {
    a.headers[name].as_str().unwrap_or_default().to_string()
}

/// Runs the previous follower's exchange against this build's control plane.
async fn exchange() -> (Answer, Answer, Vec<Value>) {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/cp.db", dir.path().display());
    let store = Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .expect("store");
    first_content(&store).await;
    let (addr, stop) = serve(store.clone()).await;
    let [(p1, h1), _] = old_requests("", "");
    let full = get(addr, &p1, &h1).await;
    change(&store).await;
    let [_, (p2, h2)] = old_requests(
        &header(&full, "x-turnpike-version"),
        &header(&full, "x-turnpike-hash"),
    );
    let delta = get(addr, &p2, &h2).await;
    let _ = stop.send(());
    let requests = [(p1, h1), (p2, h2)]
        .into_iter()
        .map(|(p, h)| json!({"path": p, "headers": h}))
        .collect();
    (full, delta, requests)
}

#[tokio::test]
async fn a_follower_older_than_the_oldest_served_is_told_to_upgrade_and_a_new_one_learns_the_version(
) {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}/cp.db", dir.path().display());
    let store = Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .expect("store");
    first_content(&store).await;
    let (addr, stop) = serve(store).await;
    let [(path, mut headers), _] = old_requests("", "");
    headers.push((
        turnpike_sync::WIRE_HEADER.into(),
        (turnpike_sync::OLDEST_WIRE - 1).to_string(),
    ));
    let old = get(addr, &path, &headers).await;
    assert_eq!(old.status, 426);
    let body: Value = serde_json::from_slice(&old.body).expect("json error");
    assert_eq!(body["code"], "wire_version_unsupported", "{body}");
    headers.pop();
    headers.push((
        turnpike_sync::WIRE_HEADER.into(),
        turnpike_sync::WIRE_VERSION.to_string(),
    ));
    let new = get(addr, &path, &headers).await;
    assert_eq!(new.status, 200);
    assert_eq!(
        header(&new, turnpike_sync::WIRE_HEADER),
        turnpike_sync::WIRE_VERSION.to_string()
    );
    let _ = stop.send(());
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

#[tokio::test]
async fn the_previous_wire_versions_follower_gets_what_it_got_before() {
    let (full, delta, requests) = exchange().await;
    if std::env::var_os("TURNPIKE_RECORD_WIRE_FIXTURE").is_some() {
        // Only to record a NEW wire version's fixture from the build that defines it.
        let meta = json!({
            "requests": requests,
            "answers": [
                {"status": full.status, "headers": full.headers},
                {"status": delta.status, "headers": delta.headers},
            ],
        });
        let pretty = serde_json::to_vec_pretty(&meta).expect("json");
        std::fs::write(fixtures().join("exchange.json"), pretty).expect("write");
        std::fs::write(fixtures().join("full.json"), &full.body).expect("write");
        std::fs::write(fixtures().join("delta.json"), &delta.body).expect("write");
        return;
    }
    let meta: Value = serde_json::from_slice(&read("exchange.json")).expect("exchange.json");
    assert_eq!(
        meta["requests"],
        Value::Array(requests),
        "the old follower's requests"
    );
    for (i, got) in [&full, &delta].into_iter().enumerate() {
        let want = &meta["answers"][i];
        assert_eq!(u64::from(got.status), want["status"].as_u64().unwrap_or(0));
        assert_eq!(got.headers, want["headers"], "answer {i}'s headers");
    }
    assert_eq!(header(&delta, "x-turnpike-kind"), "delta");
    assert!(
        full.body.as_ref() == read("full.json").as_slice(),
        "the full snapshot differs from what the previous version sent:\n{}",
        String::from_utf8_lossy(&full.body)
    );
    assert!(
        delta.body.as_ref() == read("delta.json").as_slice(),
        "the delta differs from what the previous version sent:\n{}",
        String::from_utf8_lossy(&delta.body)
    );
}

#[test]
fn this_builds_follower_reads_the_previous_versions_bodies() {
    let meta: Value = serde_json::from_slice(&read("exchange.json")).expect("exchange.json");
    let file: turnpike_model::GatewayFile =
        serde_json::from_slice(&read("full.json")).expect("a v1 full snapshot parses");
    let mut parts = Parts::from_file(&file).expect("parts");
    assert_eq!(
        hash_hex(parts.hash()),
        meta["answers"][0]["headers"]["x-turnpike-hash"]
            .as_str()
            .unwrap_or_default()
    );
    let delta: Delta = serde_json::from_slice(&read("delta.json")).expect("a v1 delta parses");
    assert!(!delta.apis.is_empty() && !delta.subscriptions.is_empty());
    parts.apply(delta).expect("the v1 delta applies");
    assert_eq!(
        hash_hex(parts.hash()),
        meta["answers"][1]["headers"]["x-turnpike-hash"]
            .as_str()
            .unwrap_or_default()
    );
    let applied = parts.to_file().expect("file");
    assert_eq!(applied.apis.len(), 4);
    turnpike_config::compile(applied, 2).expect("the applied v1 snapshot compiles");
}
