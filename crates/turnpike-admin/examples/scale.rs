//! Scale run (a benchmark, not a test): loads 10,000 APIs and 1,000,000 subscriptions into a
//! control plane (SQLite in a temp dir, one bulk transaction), measures the full snapshot
//! (size, build time at the control plane, apply + compile time at a follower) and the
//! delta of a one-API change and of a one-subscription change, then starts a `turnpike gateway` process following the
//! control plane and drives steady open-loop load at one API with the bench kit, first
//! without changes, then while APIs are published one after another (each publish timed
//! to its first 200 at the gateway). Prints the gateway's RSS at its first 200, settled
//! before the publishes, at its peak during them (sampled every 20 ms) and after.
//!
//! `TURNPIKE_BIN=target/release/turnpike cargo run --release -p turnpike-admin --example scale -- [--apis N] [--subs N] [--apps N] [--seconds S] [--rate RPS] [--publishes N]`
//! (`bench/scale.sh` builds both and runs it).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use axum::body::Body;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::ServiceExt;
use turnpike_admin::runtime::{self, ControlPlaneArgs};
use turnpike_bench::run::{execute, RunArgs, RunResult};
use turnpike_config::Snapshot;
use turnpike_store::BulkSpec;
use turnpike_sync::FollowerConfig;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
const TOKEN: &str = "scale";

struct Opts {
    apis: usize,
    subs: usize,
    apps: usize,
    seconds: u64,
    rate: f64,
    publishes: usize,
}

fn opts() -> Opts {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(default)
    };
    Opts {
        apis: get("--apis", 10_000.0) as usize,
        subs: get("--subs", 1_000_000.0) as usize,
        apps: get("--apps", 10_000.0) as usize,
        seconds: get("--seconds", 20.0) as u64,
        rate: get("--rate", 2_000.0),
        publishes: get("--publishes", 20.0) as usize,
    }
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<String>,
) -> Result<serde_json::Value, BoxError> {
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("admin:scalepassword")
    );
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body.map(Body::from).unwrap_or_else(Body::empty))?;
    let resp = app.clone().oneshot(req).await?;
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok(serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
}

/// Creates an open API at `context` and publishes it.
async fn publish(app: &axum::Router, context: &str, endpoint: &str) -> Result<(), BoxError> {
    let body = serde_json::json!({"name": context, "context": context, "version": "v1",
        "endpoints": [endpoint], "resources": [{"path": "/*", "methods": ["GET"]}]});
    let r = call(
        app,
        "POST",
        "/api/am/publisher/v1/apis",
        Some(body.to_string()),
    )
    .await?;
    let id = r["id"]
        .as_str()
        .ok_or_else(|| format!("create: {r}"))?
        .to_string();
    call(
        app,
        "PUT",
        &format!("/api/am/publisher/v1/apis/{id}/security"),
        Some("\"none\"".into()),
    )
    .await?;
    let path = format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish");
    call(app, "POST", &path, None).await?;
    Ok(())
}

/// GET at the control plane's snapshot endpoint as a gateway holding `base`.
async fn snapshot(
    cp: SocketAddr,
    base: Option<(u64, &str)>,
) -> Result<(u64, String, Bytes, Duration), BoxError> {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let after = base.map(|b| b.0).unwrap_or(0);
    let mut req = http::Request::get(format!(
        "http://{cp}/api/am/gateway/v1/snapshot?after={after}&wait=0"
    ))
    .header("authorization", format!("Bearer {TOKEN}"));
    if let Some((v, h)) = base {
        req = req
            .header("x-turnpike-accept-delta", "1")
            .header("x-turnpike-serving", v.to_string())
            .header("x-turnpike-serving-hash", h);
    }
    let t = Instant::now();
    let resp = client.request(req.body(Empty::new())?).await?;
    let h = |n: &str| {
        resp.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (version, hash) = (h("x-turnpike-version").parse()?, h("x-turnpike-hash"));
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((version, hash, body, t.elapsed()))
}

async fn status(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
    url: &str,
) -> u16 {
    match url.parse::<http::Uri>() {
        Ok(u) => client
            .get(u)
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

/// Waits until `follower` serves the control plane's current version and prints what the
/// change cost: delta size, apply + compile, and the time since `t` (the change started).
async fn swapped(
    cp: &runtime::Running,
    follower: &turnpike_sync::FollowerHandle,
    what: &str,
    t: Instant,
) -> Result<(), BoxError> {
    let v = cp.state.store().current_version().await?;
    follower.wait_for(v).await;
    let st = follower.stats();
    println!(
        "{what}: delta {} bytes, apply + compile {:.0} ms ({} APIs compiled), change -> swapped {:.0} ms",
        st.last_body_bytes.load(Ordering::Relaxed),
        st.last_compile_us.load(Ordering::Relaxed) as f64 / 1000.0,
        st.last_compiled_apis.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// `n` subscription changes (one subscription blocked, then unblocked, and so on), each
/// timed from the call to the follower's swap: the control plane rereads the changed
/// API's subscriptions and the follower carries its table over with the changed buckets
/// (a publish does neither). Prints p50 / p99 / max.
async fn subscription_changes(
    app: &axum::Router,
    cp: &runtime::Running,
    follower: &turnpike_sync::FollowerHandle,
    n: usize,
) -> Result<(), BoxError> {
    let base = "/api/am/publisher/v1/subscriptions";
    let mut times = Vec::with_capacity(n);
    for i in 0..n.max(1) {
        let call_path = match i % 2 {
            0 => format!("{base}/block-subscription?subscriptionId=bulk-sub-5&blockState=BLOCKED"),
            _ => format!("{base}/unblock-subscription?subscriptionId=bulk-sub-5"),
        };
        let t = Instant::now();
        call(app, "POST", &call_path, None).await?;
        swapped(cp, follower, "one subscription changed", t).await?;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "subscription change -> swapped over {} changes: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        times.len(),
        pct(&times, 0.50),
        pct(&times, 0.99),
        pct(&times, 1.0)
    );
    Ok(())
}

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

fn load_args(url: String, o: &Opts) -> RunArgs {
    let mut a = RunArgs::closed(
        url,
        1,
        Duration::from_secs(o.seconds),
        Duration::from_secs(2),
    );
    a.users = None;
    a.rate = Some(o.rate);
    a.connections = 20;
    a.threads = Some(1);
    a
}

fn line(name: &str, r: &RunResult) {
    let s = &r.summary;
    println!(
        "{name}: {:.0} req/s, errors {}, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        s.throughput_rps, s.errors, s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms
    );
}

/// The echo back end on a thread and runtime of its own: the control plane's work in this
/// process must not delay the gateway's upstream.
fn echo_thread() -> Result<SocketAddr, BoxError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
                return;
            }
        };
        rt.block_on(async move {
            let r = turnpike_bench::echo::spawn(Default::default()).await;
            let _ = tx.send(r.map_err(|e| e.to_string()));
            std::future::pending::<()>().await;
        });
    });
    Ok(rx.recv()??)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let o = opts();
    // `SCALE_LOG=info` shows the control plane's build times and the follower's swaps.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            std::env::var("SCALE_LOG").unwrap_or_else(|_| "warn".into()),
        ))
        .init();
    let bin = std::env::var("TURNPIKE_BIN").unwrap_or_else(|_| "target/release/turnpike".into());
    let dir = tempfile::tempdir()?;
    let echo = echo_thread()?;
    let endpoint = format!("http://{echo}");
    let cp = runtime::start(&ControlPlaneArgs {
        database: format!("sqlite://{}/cp.db", dir.path().display()),
        bind: [127, 0, 0, 1].into(),
        port: 0,
        gateway_token: Some(TOKEN.into()),
        admin_password: Some("scalepassword".into()),
        public_url: None,
        analytics: Default::default(),
        gateway_max_lag: 30.0,
        max_import_size: turnpike_admin::DEFAULT_IMPORT_LIMIT,
        tls: Default::default(),
    })
    .await?;
    let app = turnpike_admin::router(cp.state.clone());
    let t = Instant::now();
    cp.state
        .store()
        .bulk_load(&BulkSpec {
            apis: o.apis,
            prefix: "bulk".into(),
            endpoint: endpoint.clone(),
            open: true,
            applications: o.apps,
            owner: "admin".into(),
            subscriptions: o.subs,
        })
        .await?;
    println!(
        "scale: {} APIs, {} applications, {} subscriptions",
        o.apis, o.apps, o.subs
    );
    println!("bulk load: {:.1} s", t.elapsed().as_secs_f64());

    let (v1, h1, full, took) = snapshot(cp.addr, None).await?;
    println!(
        "full snapshot: {:.1} MiB, built and sent by the control plane in {:.0} ms",
        full.len() as f64 / 1048576.0,
        took.as_secs_f64() * 1000.0
    );
    let (_, _, _, again) = snapshot(cp.addr, None).await?;
    println!(
        "full snapshot again (cached): {:.0} ms",
        again.as_secs_f64() * 1000.0
    );
    drop(full);

    // Apply + compile at a follower, in this process: the full file, then one delta.
    let snapshots = Arc::new(ArcSwap::from_pointee(Snapshot::default()));
    let follower = turnpike_sync::spawn(
        FollowerConfig::new(format!("http://{}", cp.addr), TOKEN, "probe"),
        snapshots.clone(),
    );
    follower.wait_for(v1).await;
    let st = follower.stats();
    println!(
        "follower full: parse + split + compile {:.0} ms",
        st.last_compile_us.load(Ordering::Relaxed) as f64 / 1000.0
    );
    let t = Instant::now();
    publish(&app, "/probe", &endpoint).await?;
    swapped(&cp, &follower, "one-API publish (3 commits)", t).await?;
    subscription_changes(&app, &cp, &follower, o.publishes).await?;
    let (_, _, d, _) = snapshot(cp.addr, Some((v1, &h1))).await?;
    println!("delta from the first version to now: {} bytes", d.len());
    follower.stop();
    drop(snapshots);

    // The gateway under test, as its own process.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut gw = std::process::Command::new(&bin)
        .args([
            "gateway",
            "--control-plane",
            &format!("http://{}", cp.addr),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            "scale",
        ])
        .args([
            "--http-port",
            &port.to_string(),
            "--https-port",
            "off",
            "--data-dir",
        ])
        .arg(dir.path().join("gw"))
        .env("TURNPIKE_LOG", "warn")
        .spawn()?;
    let pid = gw.id();
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let target = format!("http://127.0.0.1:{port}/bulk0/v1/x");
    let t = Instant::now();
    while status(&client, &target).await != 200 {
        if t.elapsed() > Duration::from_secs(300) {
            let _ = gw.kill();
            return Err("the gateway did not serve within 300 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "gateway process: first 200 after {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let rss_first = rss_mb(pid);

    let steady = execute(&load_args(target.clone(), &o)).await?;
    line("load without swaps", &steady);
    // Settled: the first install's transient memory (the 100 MiB body, the parsed file)
    // has been freed and returned by now.
    let rss_before = rss_mb(pid);
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max((rss_mb(pid) * 1024.0) as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    // Publishes while the same load runs; each is timed to its first 200 at the gateway.
    let publisher = {
        let (app, endpoint, client) = (app.clone(), endpoint.clone(), client.clone());
        let n = o.publishes;
        let spread = Duration::from_millis(2_000 + o.seconds * 1000 / (n as u64 + 1));
        tokio::spawn(async move {
            let mut times = Vec::new();
            for i in 0..n {
                tokio::time::sleep(spread.min(Duration::from_secs(1))).await;
                let ctx = format!("/live{i}");
                let t = Instant::now();
                if publish(&app, &ctx, &endpoint).await.is_err() {
                    continue;
                }
                let url = format!("http://127.0.0.1:{port}{ctx}/v1/x");
                while status(&client, &url).await != 200 {
                    if t.elapsed() > Duration::from_secs(60) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                times.push(t.elapsed());
            }
            times
        })
    };
    let swapping = execute(&load_args(target, &o)).await?;
    let mut times = publisher.await?;
    times.sort();
    line("load during swaps   ", &swapping);
    println!(
        "publish -> first 200 over {} publishes: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        times.len(),
        pct(&times, 0.50),
        pct(&times, 0.99),
        times
            .last()
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    );
    sampler.abort();
    let rss_peak = peak.load(Ordering::Relaxed) as f64 / 1024.0;
    let rss_after = rss_mb(pid);
    println!(
        "gateway RSS: {rss_first:.0} MiB at the first 200, {rss_before:.0} MiB settled before the publishes, peak {rss_peak:.0} MiB during them ({:.2}x), {rss_after:.0} MiB after",
        rss_peak / rss_before.max(1.0)
    );
    let _ = gw.kill();
    let _ = gw.wait();
    cp.stop().await;
    Ok(())
}
