//! Deltas over real sockets: a control plane (in process, SQLite in a temp dir) bulk-loaded
//! with many APIs, a gateway following it, and the echo back end. After the first full
//! snapshot a gateway gets only what changed (an added API, a removed one, one bucket of
//! subscriptions); an unknown base or a hash it does not recognise gets the whole file;
//! a delta whose result does not hash to what the control plane announced makes the
//! follower fetch the whole file (a scripted control plane plays that part).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use turnpike_admin::runtime::{self, ControlPlaneArgs, Running};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, GatewayHandle, ServerSettings};
use turnpike_store::BulkSpec;
use turnpike_sync::wire::{hash_hex, Delta, Parts};
use turnpike_sync::{FollowerConfig, FollowerHandle};

const TOKEN: &str = "gateway-token";

struct Reply {
    status: u16,
    headers: http::HeaderMap,
    body: Bytes,
}

async fn request(
    method: http::Method,
    uri: String,
    headers: &[(&str, String)],
    body: Option<serde_json::Value>,
) -> Reply {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut req = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = req
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let resp = client.request(req).await.expect("response");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}

/// A REST call as the admin; panics unless it answers `want`.
async fn admin(
    cp: SocketAddr,
    method: http::Method,
    path: &str,
    body: Option<serde_json::Value>,
    want: u16,
) -> serde_json::Value {
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("admin:password1")
    );
    let r = request(
        method,
        format!("http://{cp}{path}"),
        &[("authorization", auth)],
        body,
    )
    .await;
    let json = serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
    assert_eq!(r.status, want, "{path}: {json}");
    json
}

async fn control_plane(dir: &std::path::Path, bulk: &BulkSpec) -> Running {
    let cp = runtime::start(&ControlPlaneArgs {
        database: format!("sqlite://{}/cp.db", dir.display()),
        bind: [127, 0, 0, 1].into(),
        port: 0,
        gateway_token: Some(TOKEN.into()),
        admin_password: Some("password1".into()),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size: turnpike_admin::DEFAULT_IMPORT_LIMIT,
        tls: Default::default(),
    })
    .await
    .expect("control plane");
    cp.state.store().bulk_load(bulk).await.expect("bulk load");
    cp
}

fn bulk(apis: usize, apps: usize, subs: usize, endpoint: String) -> BulkSpec {
    BulkSpec {
        apis,
        prefix: "bulk".into(),
        endpoint,
        open: true,
        applications: apps,
        owner: "admin".into(),
        subscriptions: subs,
    }
}

async fn gateway(
    cp: SocketAddr,
    dir: &std::path::Path,
) -> (GatewayHandle, FollowerHandle, SocketAddr) {
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    gateway_on(cp, dir, snapshots).await
}

/// [`gateway`] serving from `snapshots` (which a test reads too).
async fn gateway_on(
    cp: SocketAddr,
    dir: &std::path::Path,
    snapshots: Arc<ArcSwap<Snapshot>>,
) -> (GatewayHandle, FollowerHandle, SocketAddr) {
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{cp}"), TOKEN, "gw-delta"),
        snapshots.clone(),
    );
    let mut settings = ServerSettings::local(dir);
    settings.https_port = None;
    let bound = Gateway::builder(settings)
        .snapshots(snapshots)
        .bind()
        .await
        .expect("bind gateway");
    let addr = bound.http_addr().expect("http addr");
    (bound.spawn(), follower, addr)
}

async fn status(addr: SocketAddr, path: &str) -> u16 {
    request(http::Method::GET, format!("http://{addr}{path}"), &[], None)
        .await
        .status
}

/// A snapshot request as a gateway holding `base` (with `hash`) would send it.
async fn snapshot(cp: SocketAddr, base: Option<(u64, &str)>) -> Reply {
    let mut headers = vec![("authorization", format!("Bearer {TOKEN}"))];
    let after = base.map(|(v, _)| v).unwrap_or(0);
    if let Some((v, h)) = base {
        headers.push(("x-turnpike-accept-delta", "1".into()));
        headers.push(("x-turnpike-serving", v.to_string()));
        headers.push(("x-turnpike-serving-hash", h.to_string()));
    }
    let uri = format!("http://{cp}/api/am/gateway/v1/snapshot?after={after}&wait=0");
    request(http::Method::GET, uri, &headers, None).await
}

fn header(r: &Reply, name: &str) -> String {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

async fn publish_open(cp: SocketAddr, context: &str, endpoint: &str) -> String {
    let body = serde_json::json!({"name": "New", "context": context, "version": "v1",
        "endpoints": [endpoint], "resources": [{"path": "/*", "methods": ["GET"]}]});
    let r = admin(
        cp,
        http::Method::POST,
        "/api/am/publisher/v1/apis",
        Some(body),
        201,
    )
    .await;
    let id = r["id"].as_str().expect("id").to_string();
    let path = format!("/api/am/publisher/v1/apis/{id}/security");
    admin(
        cp,
        http::Method::PUT,
        &path,
        Some(serde_json::json!("none")),
        200,
    )
    .await;
    lifecycle(cp, &id, "Publish").await;
    id
}

async fn lifecycle(cp: SocketAddr, id: &str, action: &str) {
    let path = format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action={action}");
    admin(cp, http::Method::POST, &path, None, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_first_full_snapshot_changes_and_removals_arrive_as_deltas() {
    let dir = tempfile::tempdir().expect("tmp");
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo");
    let endpoint = format!("http://{echo}");
    let cp = control_plane(dir.path(), &bulk(50, 10, 200, endpoint.clone())).await;
    let (gw, follower, addr) = gateway(cp.addr, dir.path()).await;
    let v0 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v0).await;
    assert_eq!(status(addr, "/bulk7/v1/x").await, 200);
    assert_eq!(follower.stats().fulls.load(Ordering::Relaxed), 1);

    publish_open(cp.addr, "/fresh", &endpoint).await;
    let v1 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v1).await;
    assert_eq!(status(addr, "/fresh/v1/x").await, 200, "added by a delta");

    lifecycle(cp.addr, "bulk-api-7", "Demote%20to%20Created").await;
    let v2 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v2).await;
    assert_eq!(status(addr, "/bulk7/v1/x").await, 404, "removed by a delta");
    assert_eq!(status(addr, "/bulk8/v1/x").await, 200, "the others stay");

    let s = follower.stats();
    assert_eq!(s.fulls.load(Ordering::Relaxed), 1, "one full snapshot only");
    assert!(s.deltas.load(Ordering::Relaxed) >= 2);
    assert_eq!(s.delta_failures.load(Ordering::Relaxed), 0);
    follower.stop();
    let _ = gw.shutdown().await;
    cp.stop().await;
}

/// Publishing an API changes no subscription: the gateway keeps the subscription table it
/// compiled (the same allocation) and the control plane ships no bucket. Blocking one
/// subscription ships its bucket and the gateway carries its table over with that bucket
/// replaced: the result is what a full compile of the same version makes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_without_subscription_changes_keeps_the_compiled_subscription_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo");
    let endpoint = format!("http://{echo}");
    let cp = control_plane(dir.path(), &bulk(40, 10, 300, endpoint.clone())).await;
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{}", cp.addr), TOKEN, "gw-keep"),
        snapshots.clone(),
    );
    let v0 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v0).await;
    let table0 = snapshots
        .load()
        .subscriptions()
        .expect("subscription table");
    assert_eq!(table0.len(), 300);

    publish_open(cp.addr, "/fresh", &endpoint).await;
    let v1 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v1).await;
    assert_eq!(snapshots.load().version, v1);
    let table1 = snapshots
        .load()
        .subscriptions()
        .expect("subscription table");
    assert!(
        Arc::ptr_eq(&table0, &table1),
        "a publish recompiled the subscriptions"
    );
    assert!(snapshots.load().apis.iter().any(|a| a.name == "New"));

    let path = "/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId=bulk-sub-5&blockState=BLOCKED";
    admin(cp.addr, http::Method::POST, path, None, 200).await;
    let v2 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v2).await;
    let table2 = snapshots
        .load()
        .subscriptions()
        .expect("subscription table");
    assert!(
        !Arc::ptr_eq(&table1, &table2),
        "a blocked subscription kept the old table"
    );
    assert_eq!(table2.len(), 300);
    // The carried-over table is the one a full compile of the same version makes.
    let full = snapshot(cp.addr, None).await;
    assert_eq!(header(&full, "x-turnpike-version"), v2.to_string());
    let file: turnpike_model::GatewayFile = serde_json::from_slice(&full.body).expect("file");
    let compiled = turnpike_config::compile(file, v2).expect("compile");
    let rows = |t: &turnpike_config::Subscriptions| {
        let mut v: Vec<_> = t
            .iter()
            .map(|s| {
                (
                    s.api_id.clone(),
                    s.application_id.clone(),
                    s.state.as_str(),
                    s.tier.clone(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let carried = rows(&table2);
    assert_eq!(carried, rows(&compiled.subscriptions().expect("table")));
    let blocked = carried.iter().filter(|r| r.2 == "BLOCKED");
    assert_eq!(
        blocked.count(),
        1,
        "the blocked subscription is in the carried table"
    );
    let s = follower.stats();
    assert_eq!(s.fulls.load(Ordering::Relaxed), 1, "one full snapshot only");
    assert_eq!(s.delta_failures.load(Ordering::Relaxed), 0);
    follower.stop();
    cp.stop().await;
}

/// A delta compiles only what it touched: a publish leaves every served API's
/// `Arc<CompiledApi>` in place (pointer-equal across the swap), and blocking one
/// subscription recompiles exactly the API it names (whose subscription map moved).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_recompiles_only_the_apis_it_touches() {
    let dir = tempfile::tempdir().expect("tmp");
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo");
    let endpoint = format!("http://{echo}");
    let cp = control_plane(dir.path(), &bulk(40, 10, 300, endpoint.clone())).await;
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let (gw, follower, addr) = gateway_on(cp.addr, dir.path(), snapshots.clone()).await;
    let v0 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v0).await;
    let s0 = snapshots.load_full();

    publish_open(cp.addr, "/fresh", &endpoint).await;
    let v1 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v1).await;
    let s1 = snapshots.load_full();
    assert_eq!(s1.apis.len(), s0.apis.len() + 1);
    let same = |a: &Snapshot, b: &Snapshot| -> Vec<String> {
        a.apis
            .iter()
            .filter(|x| !b.apis.iter().any(|y| Arc::ptr_eq(x, y)))
            .map(|x| x.name.clone())
            .collect()
    };
    assert!(
        same(&s0, &s1).is_empty(),
        "recompiled: {:?}",
        same(&s0, &s1)
    );
    assert_eq!(status(addr, "/fresh/v1/x").await, 200);

    let path = "/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId=bulk-sub-5&blockState=BLOCKED";
    admin(cp.addr, http::Method::POST, path, None, 200).await;
    let v2 = cp.state.store().current_version().await.expect("version");
    follower.wait_for(v2).await;
    let s2 = snapshots.load_full();
    let blocked = s2
        .subscriptions()
        .expect("table")
        .iter()
        .find(|s| s.state.as_str() == "BLOCKED")
        .map(|s| s.api_id.clone())
        .expect("the blocked row");
    let recompiled: Vec<String> = s2
        .apis
        .iter()
        .filter(|x| !s1.apis.iter().any(|y| Arc::ptr_eq(x, y)))
        .map(|x| format!("{}/{}", x.context, x.version))
        .collect();
    assert_eq!(recompiled, vec![blocked]);
    assert_eq!(s2.compiled_apis(), 1);
    assert_eq!(status(addr, "/bulk3/v1/x").await, 200);
    assert_eq!(follower.stats().delta_failures.load(Ordering::Relaxed), 0);
    follower.stop();
    let _ = gw.shutdown().await;
    cp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_base_or_hash_gets_the_whole_file_and_a_one_api_change_ships_one_api() {
    let dir = tempfile::tempdir().expect("tmp");
    let cp = control_plane(
        dir.path(),
        &bulk(2_000, 100, 20_000, "http://127.0.0.1:9".into()),
    )
    .await;
    let full = snapshot(cp.addr, None).await;
    assert_eq!(
        (full.status, header(&full, "x-turnpike-kind").as_str()),
        (200, "full")
    );
    let v1: u64 = header(&full, "x-turnpike-version")
        .parse()
        .expect("version");
    let h1 = header(&full, "x-turnpike-hash");
    // The announced hash is the file's structural hash.
    let parts =
        Parts::from_file(&serde_json::from_slice(&full.body).expect("file")).expect("parts");
    assert_eq!(hash_hex(parts.hash()), h1);

    lifecycle(cp.addr, "bulk-api-42", "Demote%20to%20Created").await;
    let d = snapshot(cp.addr, Some((v1, &h1))).await;
    assert_eq!(header(&d, "x-turnpike-kind"), "delta");
    let delta: Delta = serde_json::from_slice(&d.body).expect("delta");
    assert_eq!(delta.removed_apis, vec!["/bulk42/v1".to_string()]);
    assert!(delta.apis.is_empty());
    // The API's subscriptions leave the snapshot with it: only their buckets travel.
    assert!(
        delta.subscriptions.len() <= 10,
        "{} buckets",
        delta.subscriptions.len()
    );
    assert!(
        d.body.len() * 20 < full.body.len(),
        "delta {} bytes vs full {} bytes",
        d.body.len(),
        full.body.len()
    );
    let mut held = parts.clone();
    held.apply(delta).expect("apply");
    assert_eq!(hash_hex(held.hash()), header(&d, "x-turnpike-hash"));

    let unknown = snapshot(cp.addr, Some((v1 - 1, "0000000000000000"))).await;
    assert_eq!(header(&unknown, "x-turnpike-kind"), "full", "unknown base");
    let wrong_hash = snapshot(cp.addr, Some((v1, "0123456789abcdef"))).await;
    assert_eq!(
        header(&wrong_hash, "x-turnpike-kind"),
        "full",
        "hash differs"
    );
    let no_header = snapshot(cp.addr, None).await;
    assert_eq!(header(&no_header, "x-turnpike-kind"), "full");
    cp.stop().await;
}

/// A scripted control plane: the first poll gets a full file (version 1), the next a delta
/// to version 2 announcing a hash the delta does not produce, then the full version 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_that_does_not_hash_to_the_announced_value_makes_the_follower_fetch_the_whole_file()
{
    use turnpike_model::{ApiSpec, GatewayFile};
    let api = |c: &str| ApiSpec {
        name: c.into(),
        context: format!("/{c}"),
        version: "v1".into(),
        endpoints: vec!["http://127.0.0.1:9".into()],
        resources: vec![turnpike_model::ResourceSpec {
            path: "/*".into(),
            methods: vec!["*".into()],
            ..Default::default()
        }],
        ..ApiSpec::default()
    };
    let f1 = GatewayFile {
        apis: vec![api("a")],
        ..GatewayFile::default()
    };
    let f2 = GatewayFile {
        apis: vec![api("a"), api("b")],
        ..GatewayFile::default()
    };
    for f in [&f1, &f2] {
        if let Err(e) = turnpike_config::compile(f.clone(), 1) {
            panic!("the scripted files must compile: {e}");
        }
    }
    let p1 = Parts::from_file(&f1).expect("parts");
    let p2 = Parts::from_file(&f2).expect("parts");
    let mut bad = p2.delta_from(&p1.manifest(1), 2);
    bad.hash = "00000000deadbeef".into();
    let script: Vec<(u64, String, &str, Vec<u8>)> = vec![
        (
            1,
            hash_hex(p1.hash()),
            "full",
            serde_json::to_vec(&f1).expect("json"),
        ),
        (
            2,
            "00000000deadbeef".into(),
            "delta",
            serde_json::to_vec(&bad).expect("json"),
        ),
        (
            2,
            hash_hex(p2.hash()),
            "full",
            serde_json::to_vec(&f2).expect("json"),
        ),
    ];
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let log = seen.clone();
    let server = tokio::spawn(async move {
        let script = Arc::new(script);
        loop {
            let Ok((io, _)) = listener.accept().await else {
                return;
            };
            let (script, log) = (script.clone(), log.clone());
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let (script, log) = (script.clone(), log.clone());
                        async move {
                            // Status reports (POST) are not part of the script.
                            if req.method() == http::Method::POST {
                                return http::Response::builder()
                                    .status(204)
                                    .body(Full::new(Bytes::new()));
                            }
                            let n = {
                                let mut l = log.lock().expect("log");
                                l.push(req.headers().contains_key("x-turnpike-accept-delta"));
                                l.len() - 1
                            };
                            let resp = match script.get(n) {
                                Some((v, h, kind, body)) => http::Response::builder()
                                    .header("x-turnpike-version", v.to_string())
                                    .header("x-turnpike-hash", h.as_str())
                                    .header("x-turnpike-kind", *kind)
                                    .body(Full::new(Bytes::from(body.clone()))),
                                None => {
                                    tokio::time::sleep(Duration::from_millis(200)).await;
                                    http::Response::builder()
                                        .status(304)
                                        .body(Full::new(Bytes::new()))
                                }
                            };
                            resp
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(io), svc)
                    .await;
            });
        }
    });
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{addr}"), TOKEN, "gw-scripted"),
        snapshots.clone(),
    );
    follower.wait_for(2).await;
    let s = follower.stats();
    assert_eq!(s.fulls.load(Ordering::Relaxed), 2, "version 2 came whole");
    assert_eq!(s.delta_failures.load(Ordering::Relaxed), 1);
    assert_eq!(s.deltas.load(Ordering::Relaxed), 0);
    assert!(matches!(
        snapshots.load().route(None, &http::Method::GET, "/b/v1/x"),
        turnpike_config::RouteResult::Matched { .. }
    ));
    let log = seen.lock().expect("log").clone();
    assert_eq!(
        &log[..3],
        &[false, true, false],
        "full, delta, then full again"
    );
    follower.stop();
    server.abort();
}
