//! End to end over real sockets: a control plane, the echo back end and two gateways
//! following the control plane. A published API becomes live on both (default-version
//! routing included); the control plane restarts while both keep serving, and a change
//! made after the restart reaches both.

mod support;

use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use turnpike_admin::runtime::{self, ControlPlaneArgs};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, GatewayHandle, ServerSettings};
use turnpike_sync::{FollowerConfig, FollowerHandle};

async fn status(addr: std::net::SocketAddr, path: &str) -> u16 {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let uri: http::Uri = format!("http://{addr}{path}").parse().expect("uri");
    client
        .get(uri)
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

async fn gateway(
    cp: std::net::SocketAddr,
    token: &str,
    id: &str,
    dir: &std::path::Path,
) -> (GatewayHandle, FollowerHandle, std::net::SocketAddr) {
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{cp}"), token, id),
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

fn cp_args(db: &str, port: u16) -> ControlPlaneArgs {
    ControlPlaneArgs {
        database: db.to_string(),
        bind: [127, 0, 0, 1].into(),
        port,
        gateway_token: Some(support::TOKEN.into()),
        admin_password: Some("password1".into()),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size: turnpike_admin::DEFAULT_IMPORT_LIMIT,
        tls: Default::default(),
    }
}

async fn publish(state: &turnpike_admin::AppState, context: &str, endpoint: &str) -> u64 {
    let cp = support::Cp {
        state: state.clone(),
        app: turnpike_admin::router(state.clone()),
    };
    let r = cp
        .post(
            "/api/am/publisher/v1/apis",
            "admin",
            serde_json::json!({"name": "Demo", "context": context, "version": "v1", "isDefaultVersion": true,
                "endpoints": [endpoint], "resources": [{"path": "/*", "methods": ["GET"]}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_string();
    // Open API: this test is about distribution, not security (APIs default to OAuth2).
    let r = cp
        .call(
            http::Method::PUT,
            &format!("/api/am/publisher/v1/apis/{id}/security"),
            Some("admin"),
            Some(serde_json::json!("none")),
            &[],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let path = format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish");
    let r = cp
        .call(http::Method::POST, &path, Some("admin"), None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    state.store().current_version().await.expect("version")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_goes_live_on_two_gateways_and_survives_a_control_plane_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}/cp.db", dir.path().display());
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo");
    let cp = runtime::start(&cp_args(&db, 0))
        .await
        .expect("control plane");
    let port = cp.addr.port();
    let (g1, f1, a1) = gateway(cp.addr, support::TOKEN, "gw-1", dir.path()).await;
    let (g2, f2, a2) = gateway(cp.addr, support::TOKEN, "gw-2", dir.path()).await;

    let v = publish(&cp.state, "/demo", &format!("http://{echo}")).await;
    f1.wait_for(v).await;
    f2.wait_for(v).await;
    for a in [a1, a2] {
        assert_eq!(status(a, "/demo/v1/anything").await, 200, "versioned path");
        assert_eq!(status(a, "/demo/anything").await, 200, "default version");
        assert_eq!(status(a, "/nothing/v1/x").await, 404);
    }

    // Restart: the gateways keep serving their last good snapshot meanwhile.
    cp.stop().await;
    for a in [a1, a2] {
        assert_eq!(
            status(a, "/demo/v1/x").await,
            200,
            "serving while the control plane is down"
        );
    }
    let cp = runtime::start(&cp_args(&db, port))
        .await
        .expect("control plane again");
    assert_eq!(
        cp.created_admin_password, None,
        "the admin survives the restart"
    );
    let v2 = publish(&cp.state, "/after", &format!("http://{echo}")).await;
    assert!(v2 > v);
    f1.wait_for(v2).await;
    f2.wait_for(v2).await;
    for a in [a1, a2] {
        assert_eq!(
            status(a, "/after/v1/x").await,
            200,
            "caught up after the restart"
        );
        assert_eq!(status(a, "/demo/v1/x").await, 200);
    }
    let gws = cp.state.store().current_version().await.expect("v");
    assert_eq!(gws, v2);
    f1.stop();
    f2.stop();
    let _ = g1.shutdown().await;
    let _ = g2.shutdown().await;
    cp.stop().await;
}
