//! Endpoint resilience through a real gateway on 127.0.0.1:0: WSO2-style suspension
//! and recovery on an injected clock, retries (never POST), active health checks,
//! weights, least connections, sandbox routing, the endpoint states in `/metrics`, and
//! `examples/resilience.yaml` with one endpoint down.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::net::TcpListener;
use turnpike_config::endpoint_state::{EndpointHealth, EndpointRegistry};
use turnpike_config::{PolicyRuntime, Snapshot};
use turnpike_model::clock::{ManualClock, UnixNanos};

/// A back end whose answer status (and `/health` status) the test sets; counts calls
/// and the bytes of bodies it received.
#[derive(Clone)]
struct Backend {
    addr: SocketAddr,
    status: Arc<AtomicU16>,
    health: Arc<AtomicU16>,
    calls: Arc<AtomicUsize>,
    body_bytes: Arc<AtomicUsize>,
}

impl Backend {
    async fn start(name: &'static str) -> Backend {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let b = Backend {
            addr: listener.local_addr().expect("addr"),
            status: Arc::new(AtomicU16::new(200)),
            health: Arc::new(AtomicU16::new(200)),
            calls: Arc::new(AtomicUsize::new(0)),
            body_bytes: Arc::new(AtomicUsize::new(0)),
        };
        let me = b.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let me = me.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let me = me.clone();
                        async move { Ok::<_, Infallible>(me.answer(name, req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
        b
    }

    async fn answer(&self, name: &str, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let health = req.uri().path() == "/health";
        let body = req.into_body().collect().await.map(|b| b.to_bytes().len());
        let status = if health {
            self.health.load(SeqCst)
        } else {
            self.calls.fetch_add(1, SeqCst);
            self.body_bytes.fetch_add(body.unwrap_or(0), SeqCst);
            self.status.load(SeqCst)
        };
        let mut r = Response::new(Full::new(Bytes::from(name.to_owned())));
        *r.status_mut() = hyper::StatusCode::from_u16(status).expect("status");
        r
    }

    fn url(&self) -> String {
        http(self.addr)
    }

    fn calls(&self) -> usize {
        self.calls.load(SeqCst)
    }
}

fn yaml(endpoints: &str, extra: &str) -> String {
    format!(
        "apis:\n  - name: r\n    context: /r\n    version: v1\n    endpoints: {endpoints}\n{extra}    resources:\n      - {{ path: \"/*\", methods: [\"*\"] }}\n"
    )
}

fn health(gw: &TestGateway, i: usize) -> EndpointHealth {
    let snap = gw.snapshots().load();
    let state = snap.apis[0].endpoints[i].state.clone();
    state.map(|s| s.health()).expect("tracked endpoint")
}

async fn get(gw: &TestGateway) -> (u16, String) {
    let r = client().get(gw.url("/r/v1/x")).send().await.expect("send");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// A gateway whose endpoint states read `clock`.
async fn gateway_on(clock: &ManualClock, yaml: &str) -> TestGateway {
    let runtime = PolicyRuntime::new();
    let c = clock.clone();
    runtime
        .kernel()
        .get_or_init(move || EndpointRegistry::with_clock(Arc::new(c)));
    let snap = Snapshot::from_yaml_with(yaml, "test", &runtime).expect("valid");
    gateway_serving(snap, |_| {}).await
}

#[tokio::test]
async fn a_failing_endpoint_is_suspended_probed_and_restored_on_wso2s_progression() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let clock = ManualClock::new(UnixNanos::from_secs(1_000_000));
    let extra = "    load_balancing: failover\n    resilience:\n      suspension: { on: [connect_failure, timeout, 503], initial_duration: 10s, progression_factor: 2, max_duration: 30s }\n      retries: { attempts: 1 }\n";
    let gw = gateway_on(
        &clock,
        &yaml(&format!("[\"{}\", \"{}\"]", a.url(), b.url()), extra),
    )
    .await;
    a.status.store(503, SeqCst);
    // a fails: suspended, and the GET is retried on b.
    assert_eq!(get(&gw).await, (200, "b".into()));
    assert_eq!((a.calls(), health(&gw, 0)), (1, EndpointHealth::Suspended));
    // While suspended, a is not called at all.
    clock.advance(Duration::from_millis(9_999));
    assert_eq!(get(&gw).await, (200, "b".into()));
    assert_eq!(a.calls(), 1);
    // The suspension ends: one probe, which fails: suspended twice as long.
    clock.advance(Duration::from_millis(1));
    assert_eq!(get(&gw).await, (200, "b".into()));
    assert_eq!((a.calls(), health(&gw, 0)), (2, EndpointHealth::Suspended));
    clock.advance(Duration::from_millis(19_999));
    assert_eq!(get(&gw).await, (200, "b".into()));
    assert_eq!(a.calls(), 2, "the second suspension lasts 20 s");
    // a recovers; the next probe succeeds and a takes traffic again.
    a.status.store(200, SeqCst);
    clock.advance(Duration::from_millis(1));
    assert_eq!(get(&gw).await, (200, "a".into()));
    assert_eq!(health(&gw, 0), EndpointHealth::Active);
    assert_eq!(get(&gw).await, (200, "a".into()));
    assert_eq!(b.calls(), 4);

    // The state is in /metrics with the API and endpoint.
    a.status.store(503, SeqCst);
    get(&gw).await;
    let text = turnpike_gateway::GatewayMetrics::new(gw.snapshots().clone()).render();
    let line = format!(
        "turnpike_upstream_endpoint_state{{api=\"r\",version=\"v1\",context=\"/r\",id=\"/r/v1\",endpoint=\"{}\",pool=\"production\",state=\"suspended\"}} 1",
        a.url()
    );
    assert!(text.contains(&line), "{line} not in:\n{text}");
    assert!(text.contains(&format!(
        "turnpike_upstream_endpoint_suspensions_total{{api=\"r\",version=\"v1\",context=\"/r\",id=\"/r/v1\",endpoint=\"{}\",pool=\"production\"}} 3",
        a.url()
    )));
}

#[tokio::test]
async fn the_state_survives_a_snapshot_swap() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let extra = "    load_balancing: failover\n    resilience:\n      suspension: { on: [503], initial_duration: 1h, max_duration: 1h }\n";
    let text = yaml(&format!("[\"{}\", \"{}\"]", a.url(), b.url()), extra);
    let runtime = Arc::new(PolicyRuntime::new());
    let snap = Snapshot::from_yaml_with(&text, "test", &runtime).expect("valid");
    let gw = gateway_serving(snap, |_| {}).await;
    a.status.store(503, SeqCst);
    assert_eq!(get(&gw).await.1, "a");
    assert_eq!(health(&gw, 0), EndpointHealth::Suspended);
    let again = Snapshot::from_yaml_with(&text, "test", &runtime).expect("valid");
    gw.snapshots().store(Arc::new(again));
    assert_eq!(
        health(&gw, 0),
        EndpointHealth::Suspended,
        "the swap kept it"
    );
    assert_eq!(get(&gw).await.1, "b");
}

#[tokio::test]
async fn retries_go_to_another_endpoint_for_idempotent_methods_never_for_post() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let extra = "    load_balancing: failover\n    resilience:\n      suspension: { on: [503], initial_duration: 1ms, max_duration: 1ms }\n      retries: { attempts: 2 }\n";
    let gw = gateway(&yaml(&format!("[\"{}\", \"{}\"]", a.url(), b.url()), extra)).await;
    a.status.store(503, SeqCst);
    let c = client();
    let r = c
        .post(gw.url("/r/v1/x"))
        .body("hello")
        .send()
        .await
        .expect("send");
    assert_eq!(
        (r.status().as_u16(), a.calls(), b.calls()),
        (503, 1, 0),
        "POST is not retried"
    );
    tokio::time::sleep(Duration::from_millis(5)).await; // past the 1 ms suspension
    let r = c
        .put(gw.url("/r/v1/x"))
        .body("twelve bytes")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap_or_default(), "b");
    assert_eq!((a.calls(), b.calls()), (2, 1), "PUT retried once on b");
    assert_eq!(b.body_bytes.load(SeqCst), 12, "with the whole body");
}

#[tokio::test]
async fn post_is_retried_only_when_the_api_lists_it() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let extra = "    load_balancing: failover\n    resilience:\n      suspension: { on: [503] }\n      retries: { attempts: 1, methods: [GET, POST] }\n";
    let gw = gateway(&yaml(&format!("[\"{}\", \"{}\"]", a.url(), b.url()), extra)).await;
    a.status.store(503, SeqCst);
    let r = client()
        .post(gw.url("/r/v1/x"))
        .body("hi")
        .send()
        .await
        .expect("send");
    assert_eq!(r.text().await.unwrap_or_default(), "b");
    assert_eq!(b.body_bytes.load(SeqCst), 2);
}

#[tokio::test]
async fn health_checks_take_an_endpoint_out_and_bring_it_back() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let extra = "    load_balancing: failover\n    resilience:\n      health_check: { path: /health, interval: 50ms, timeout: 1s, healthy_threshold: 2, unhealthy_threshold: 2 }\n";
    let gw = gateway(&yaml(&format!("[\"{}\", \"{}\"]", a.url(), b.url()), extra)).await;
    assert_eq!(get(&gw).await.1, "a");
    a.health.store(500, SeqCst);
    wait_for(&gw, EndpointHealth::Unhealthy).await;
    assert_eq!(
        get(&gw).await.1,
        "b",
        "an unhealthy endpoint takes no traffic"
    );
    a.health.store(200, SeqCst);
    wait_for(&gw, EndpointHealth::Active).await;
    assert_eq!(get(&gw).await.1, "a");
}

/// Polls endpoint 0's state (the checks run on real time) for up to 10 s.
async fn wait_for(gw: &TestGateway, want: EndpointHealth) {
    for _ in 0..1000 {
        if health(gw, 0) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("endpoint never became {want:?}");
}

#[tokio::test]
async fn weights_are_honoured() {
    let (a, b) = (Backend::start("a").await, Backend::start("b").await);
    let eps = format!(
        "\n      - {{ url: \"{}\", weight: 3 }}\n      - {{ url: \"{}\", weight: 1, timeouts: {{ connect: 1s, read: 5s }} }}",
        a.url(),
        b.url()
    );
    let gw = gateway(&yaml(&eps, "    load_balancing: weighted_round_robin\n")).await;
    for _ in 0..40 {
        assert_eq!(get(&gw).await.0, 200);
    }
    assert_eq!((a.calls(), b.calls()), (30, 10));
}

#[tokio::test]
async fn least_connections_avoids_the_busy_endpoint() {
    let mut busy = holding().await;
    let b = Backend::start("b").await;
    let extra = "    load_balancing: least_connections\n";
    let gw = Arc::new(
        gateway(&yaml(
            &format!("[\"{}\", \"{}\"]", http(busy.addr), b.url()),
            extra,
        ))
        .await,
    );
    // Requests until one is held by the busy endpoint.
    let held = {
        let gw = gw.clone();
        tokio::spawn(async move {
            loop {
                if get(&gw).await.1 == "released" {
                    return;
                }
            }
        })
    };
    busy.arrivals.recv().await.expect("one request held");
    let before = b.calls();
    for _ in 0..10 {
        assert_eq!(get(&gw).await.1, "b");
    }
    assert_eq!(b.calls() - before, 10);
    busy.release.notify_waiters();
    held.await.expect("the held request ends");
}

const SANDBOX_KEY_SHA256: &str = "db6bcf6a2a36ee93dafa7dfcdc40973da39f2e2843e4c6f76e08aefc767b0caa";
const PROD_KEY_SHA256: &str = "28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef";

#[tokio::test]
async fn sandbox_keys_go_to_the_sandbox_endpoints_or_get_403() {
    let (prod, sandbox) = (
        Backend::start("prod").await,
        Backend::start("sandbox").await,
    );
    let api = |name: &str, sandbox_eps: &str| {
        format!(
            "  - name: {name}\n    context: /{name}\n    version: v1\n    endpoints: [\"{}\"]\n{sandbox_eps}    auth: {{ oauth2: false, api_key: true }}\n    resources:\n      - {{ path: \"/*\", methods: [GET] }}\n",
            prod.url()
        )
    };
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{PROD_KEY_SHA256}\", application: app-1, subscriber: alice }}\n    - {{ sha256: \"{SANDBOX_KEY_SHA256}\", application: app-2, subscriber: alice, sandbox: true }}\n  subscriptions:\n    - {{ api: /s/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n    - {{ api: /s/v1, application: app-2, state: ACTIVE, tier: Unlimited }}\n    - {{ api: /n/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n    - {{ api: /n/v1, application: app-2, state: ACTIVE, tier: Unlimited }}\napis:\n{}{}",
        api("s", &format!("    sandbox_endpoints: [\"{}\"]\n", sandbox.url())),
        api("n", "")
    );
    let gw = gateway(&yaml).await;
    let c = client();
    let call =
        |path: &'static str, key: &'static str| c.get(gw.url(path)).header("apikey", key).send();
    let r = call("/s/v1/x", "turnpike-bench-key").await.expect("send");
    assert_eq!(r.text().await.unwrap_or_default(), "prod");
    let r = call("/s/v1/x", "sandbox-key").await.expect("send");
    assert_eq!(r.text().await.unwrap_or_default(), "sandbox");
    let r = call("/n/v1/x", "turnpike-bench-key").await.expect("send");
    assert_eq!(r.status(), 200, "production keys are unaffected");
    let r = call("/n/v1/x", "sandbox-key").await.expect("send");
    assert_eq!(r.status(), 403);
    assert_eq!(error_body(r).await["code"], "sandbox_not_configured");
    assert_eq!((prod.calls(), sandbox.calls()), (2, 1));
}

#[tokio::test]
async fn the_example_serves_every_get_with_one_endpoint_down() {
    let up = Backend::start("up").await;
    let down = refused_addr();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/resilience.yaml"
    ))
    .expect("examples/resilience.yaml");
    assert!(text.contains("http://127.0.0.1:9001") && text.contains("http://127.0.0.1:9002"));
    let text = text
        .replace("http://127.0.0.1:9001", &http(down))
        .replace("http://127.0.0.1:9002", &up.url());
    let gw = gateway(&text).await;
    for _ in 0..20 {
        let r = client()
            .get(gw.url("/resilient/v1/items"))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
    }
    assert_eq!(up.calls(), 20);
}

#[tokio::test]
async fn the_example_serves_every_get_while_one_endpoint_answers_500() {
    let (up, failing) = (Backend::start("up").await, Backend::start("failing").await);
    failing.status.store(500, SeqCst);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/resilience.yaml"
    ))
    .expect("examples/resilience.yaml")
    .replace("http://127.0.0.1:9001", &failing.url())
    .replace("http://127.0.0.1:9002", &up.url());
    let gw = gateway(&text).await;
    for _ in 0..20 {
        let r = client()
            .get(gw.url("/resilient/v1/items"))
            .send()
            .await
            .expect("send");
        let answer = (r.status().as_u16(), r.text().await.unwrap_or_default());
        assert_eq!(answer, (200, "up".into()));
    }
    assert_eq!(failing.calls(), 1, "suspended after its first 500");
}
