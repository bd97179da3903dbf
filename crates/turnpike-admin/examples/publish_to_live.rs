//! Benchmark: publish → first 200 at a gateway. Starts a control plane (SQLite in a temp
//! dir), the echo back end and one gateway following the control plane, then 100 times:
//! creates and publishes a new API through the REST router and polls the gateway until the
//! API answers 200. Prints p50, p99 and max.
//!
//! `cargo run --release -p turnpike-admin --example publish_to_live [-- N]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use axum::body::Body;
use base64::Engine;
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::ServiceExt;
use turnpike_admin::runtime::{self, ControlPlaneArgs};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, ServerSettings};
use turnpike_sync::FollowerConfig;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Result<serde_json::Value, BoxError> {
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("admin:benchpassword")
    );
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body.map(Body::from).unwrap_or_else(Body::empty))?;
    let resp = app.clone().oneshot(req).await?;
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await?
        .to_bytes();
    Ok(serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let echo = turnpike_bench::echo::spawn(Default::default()).await?;
    let cp = runtime::start(&ControlPlaneArgs {
        database: format!("sqlite://{}/cp.db", dir.path().display()),
        bind: [127, 0, 0, 1].into(),
        port: 0,
        gateway_token: Some("bench".into()),
        admin_password: Some("benchpassword".into()),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size: turnpike_admin::DEFAULT_IMPORT_LIMIT,
        tls: Default::default(),
    })
    .await?;
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{}", cp.addr), "bench", "bench"),
        snapshots.clone(),
    );
    let mut settings = ServerSettings::local(dir.path());
    settings.https_port = None;
    let gw = Gateway::builder(settings)
        .snapshots(snapshots)
        .bind()
        .await?;
    let gw_addr = gw.http_addr().ok_or("no http listener")?;
    let gw = gw.spawn();
    let app = turnpike_admin::router(cp.state.clone());
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let body = serde_json::json!({"name": format!("B{i}"), "context": format!("/b{i}"), "version": "v1",
            "endpoints": [format!("http://{echo}")], "resources": [{"path": "/*", "methods": ["GET"]}]});
        let api = call(
            &app,
            "POST",
            "/api/am/publisher/v1/apis",
            Some(body.to_string()),
        )
        .await?;
        let id = api["id"].as_str().ok_or("create failed")?.to_string();
        // Open API: this measures distribution, not security (APIs default to OAuth2).
        call(
            &app,
            "PUT",
            &format!("/api/am/publisher/v1/apis/{id}/security"),
            Some("\"none\"".into()),
        )
        .await?;
        let uri: http::Uri = format!("http://{gw_addr}/b{i}/v1/x").parse()?;
        let start = Instant::now();
        call(
            &app,
            "POST",
            &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish"),
            None,
        )
        .await?;
        loop {
            let ok = client
                .get(uri.clone())
                .await
                .map(|r| r.status() == 200)
                .unwrap_or(false);
            if ok {
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                return Err(format!("API {i} not live after 10 s").into());
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        samples.push(start.elapsed());
    }
    samples.sort();
    let pct =
        |p: f64| samples[((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1];
    println!(
        "publish -> first 200 over {n} publishes: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
    follower.stop();
    let _ = gw.shutdown().await;
    cp.stop().await;
    Ok(())
}
