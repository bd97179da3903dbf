//! The analytics observer on a real gateway (127.0.0.1:0) in front of the real echo back
//! end: a scripted mix of requests produces one event each, with the right outcome,
//! statuses and a latency split that adds up; a sink that never returns makes the ring
//! drop (counted) while every request still completes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use turnpike_analytics::rollup::{compact, roll_up, Row, MINUTE};
use turnpike_analytics::{
    Analytics, Event, EventFormat, FileFormat, JsonLinesSink, Outcome, PipelineSettings, Sink,
    SinkError,
};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, GatewayHandle, ServerSettings};

/// `sha256("turnpike-bench-key")`.
const KEY_SHA: &str = "28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef";
const KEY: &str = "turnpike-bench-key";

fn yaml(echo: &str, dead: &str) -> String {
    format!(
        r#"security:
  api_keys:
    - {{ sha256: "{KEY_SHA}", application: app-1, application_name: Mobile, subscriber: alice, scopes: [pets:read] }}
  subscriptions:
    - {{ api: /shop/v1, application: app-1, state: ACTIVE, tier: Unlimited }}
throttling:
  advanced_policies:
    - name: ThreePerMin
      default_limit: {{ requests: 3, per: minute }}
apis:
  - name: shop
    context: /shop
    version: v1
    throttling: ThreePerMin
    endpoints: ["http://{echo}"]
    auth: {{ oauth2: false, api_key: true }}
    resources:
      - {{ path: "/pets/{{id}}", methods: [GET], scopes: [pets:read] }}
      - {{ path: /pets, methods: [POST], scopes: [pets:write] }}
  - name: dead
    context: /dead
    version: v1
    endpoints: ["http://{dead}"]
    resources:
      - {{ path: "/*", methods: ["*"] }}
"#
    )
}

struct Setup {
    gw: GatewayHandle,
    http: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

async fn start(analytics: Arc<Analytics>) -> Setup {
    start_with(&[analytics]).await
}

async fn start_with(observers: &[Arc<Analytics>]) -> Setup {
    let echo = turnpike_bench::echo::spawn(Default::default())
        .await
        .expect("echo starts");
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    }; // closed again: connections are refused
    let snap = Snapshot::from_yaml(&yaml(&echo.to_string(), &dead.to_string()), "test")
        .expect("valid config");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = ServerSettings::local(dir.path());
    settings.https_port = None;
    let mut builder = Gateway::builder(settings).snapshots(Arc::new(ArcSwap::from_pointee(snap)));
    for o in observers {
        builder = builder.observer(o.clone());
    }
    let bound = builder.bind().await.expect("gateway binds");
    let http = bound.http_addr().expect("http");
    Setup {
        gw: bound.spawn(),
        http,
        _dir: dir,
    }
}

async fn call(http: std::net::SocketAddr, method: &str, path: &str, key: bool) -> u16 {
    let client = reqwest::Client::new();
    let mut req = client.request(
        method.parse().expect("method"),
        format!("http://{http}{path}"),
    );
    if key {
        req = req.header("apikey", KEY);
    }
    if method == "POST" {
        req = req.body("{\"name\":\"rex\"}");
    }
    req.send().await.expect("answered").status().as_u16()
}

async fn read_lines(path: &std::path::Path, want: usize) -> Vec<Event> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let events: Vec<Event> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is an event"))
            .collect();
        if events.len() >= want || Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_scripted_mix_arrives_with_outcomes_and_a_split_that_adds_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("events.jsonl");
    let analytics = Analytics::start(
        PipelineSettings {
            flush: Duration::from_millis(20),
            gateway: "gw-test".into(),
            ..PipelineSettings::default()
        },
        Box::new(JsonLinesSink::new(&file, EventFormat::Turnpike)),
    );
    let s = start(analytics.clone()).await;
    // (method, path, key, status, outcome, reason, upstream status)
    let script: [(&str, &str, bool, u16, Outcome, Option<&str>, Option<u16>); 8] = [
        (
            "GET",
            "/shop/v1/pets/1",
            true,
            200,
            Outcome::Served,
            None,
            Some(200),
        ),
        (
            "GET",
            "/shop/v1/pets/2?delay_ms=30&size=10",
            true,
            200,
            Outcome::Served,
            None,
            Some(200),
        ),
        (
            "GET",
            "/shop/v1/pets/1",
            false,
            401,
            Outcome::AuthFailed,
            Some("missing_credentials"),
            None,
        ),
        (
            "POST",
            "/shop/v1/pets",
            true,
            403,
            Outcome::AuthFailed,
            Some("insufficient_scope"),
            None,
        ),
        (
            "GET",
            "/shop/v1/pets/3",
            true,
            200,
            Outcome::Served,
            None,
            Some(200),
        ),
        (
            "GET",
            "/shop/v1/pets/4",
            true,
            429,
            Outcome::Throttled,
            Some("ThreePerMin"),
            None,
        ),
        (
            "GET",
            "/nowhere",
            false,
            404,
            Outcome::NotFound,
            Some("not_found"),
            None,
        ),
        (
            "GET",
            "/dead/v1/x",
            false,
            502,
            Outcome::BackendError,
            Some("upstream_unavailable"),
            None,
        ),
    ];
    let mut took = Vec::new();
    for (method, path, key, status, ..) in &script {
        let t = Instant::now();
        assert_eq!(
            call(s.http, method, path, *key).await,
            *status,
            "{method} {path}"
        );
        took.push(t.elapsed());
    }
    let events = read_lines(&file, script.len()).await;
    assert_eq!(
        events.len(),
        script.len(),
        "one event per request: {events:#?}"
    );
    for (i, (e, (method, path, key, status, outcome, reason, upstream))) in
        events.iter().zip(&script).enumerate()
    {
        let at = format!("{method} {path}");
        assert_eq!(e.method, *method, "{at}");
        assert_eq!(e.status, *status, "{at}");
        assert_eq!(e.outcome, *outcome, "{at}");
        assert_eq!(e.reason.as_deref(), *reason, "{at}");
        assert_eq!(e.upstream_status, *upstream, "{at}");
        assert_eq!(e.gateway, "gw-test");
        let l = e.latency;
        assert_eq!(l.before_us + l.upstream_us + l.after_us, l.total_us, "{at}");
        assert!(
            Duration::from_micros(l.total_us) <= took[i],
            "{at}: the gateway's total {l:?} is within what the client measured {:?}",
            took[i]
        );
        if path.starts_with("/shop") {
            assert_eq!(e.api_name.as_deref(), Some("shop"));
            assert_eq!(e.api_version.as_deref(), Some("v1"));
            assert_eq!(e.snapshot_version, 1, "{at}");
        }
        // A credential refused (403) names no application: the auth step admits first.
        if *key && *status != 403 {
            assert_eq!(e.application_id.as_deref(), Some("app-1"), "{at}");
            assert_eq!(e.application_name.as_deref(), Some("Mobile"), "{at}");
            assert_eq!(e.subscriber.as_deref(), Some("alice"), "{at}");
            assert_eq!(e.key_type.as_deref(), Some("PRODUCTION"), "{at}");
        }
    }
    assert_eq!(events[0].resource.as_deref(), Some("/pets/{id}"));
    assert_eq!(events[3].resource.as_deref(), Some("/pets"));
    assert_eq!(events[6].api_name, None, "an unrouted request names no API");
    // The back end waited 30 ms: the upstream part of the split carries it.
    assert!(
        events[1].latency.upstream_us >= 30_000,
        "{:?}",
        events[1].latency
    );
    assert!(events[1].latency.before_us < 30_000);
    assert!(events[2].latency.upstream_us == 0, "no upstream for a 401");
    assert_eq!(events[1].bytes_out, 10);
    assert_eq!(
        events[3].bytes_in, 14,
        "the declared body of the refused POST"
    );
    assert_eq!(analytics.stats().dropped, 0);
    let _ = s.gw.shutdown().await;
}

/// A sink that takes the first batch and never returns.
struct Stuck;

#[async_trait::async_trait]
impl Sink for Stuck {
    async fn write(&mut self, _batch: &[Event]) -> Result<(), SinkError> {
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[tokio::test]
async fn a_stuck_sink_drops_the_oldest_and_never_holds_a_request() {
    let analytics = Analytics::start(
        PipelineSettings {
            capacity: 8,
            batch: 4,
            flush: Duration::from_millis(5),
            gateway: "gw".into(),
            ..PipelineSettings::default()
        },
        Box::new(Stuck),
    );
    let s = start(analytics.clone()).await;
    let n = 60;
    for i in 0..n {
        assert_eq!(
            call(s.http, "GET", &format!("/shop/v1/pets/{i}"), false).await,
            401
        );
    }
    let st = analytics.stats();
    assert_eq!(st.written, 0);
    assert_eq!(st.queued, 8, "the ring is full");
    // At most one batch (4) left the ring before the sink stuck; the ring holds 8.
    assert!(st.dropped >= n - 8 - 4, "{st:?}");
    let in_flight = n - st.dropped - st.queued; // the batch the sink holds
    assert!((1..=4).contains(&in_flight), "{st:?}");
    let mut text = String::new();
    analytics.render_metrics(&mut text);
    assert!(
        text.contains(&format!(
            "turnpike_analytics_events_total{{result=\"dropped\"}} {}",
            st.dropped
        )),
        "{text}"
    );
    let _ = s.gw.shutdown().await;
}

/// The gateway's own rollups (summed in its background task, shipped in pieces every
/// 30 ms) equal the rollups of its raw events: two observers on one gateway, one
/// writing events, one writing rollup rows, over a mix of outcomes, applications,
/// resources, methods and latencies.
#[tokio::test]
async fn rollups_made_in_the_gateway_equal_the_rollups_of_its_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events_file = dir.path().join("events.jsonl");
    let rollups_file = dir.path().join("rollups.jsonl");
    let settings = PipelineSettings {
        flush: Duration::from_millis(10),
        ship_every: Duration::from_millis(30),
        gateway: "gw-roll".into(),
        ..PipelineSettings::default()
    };
    let events = Analytics::start(
        settings.clone(),
        Box::new(JsonLinesSink::new(&events_file, EventFormat::Turnpike)),
    );
    let rollups = Analytics::start(
        settings,
        Box::new(JsonLinesSink::new(&rollups_file, FileFormat::Rollups)),
    );
    let s = start_with(&[events.clone(), rollups.clone()]).await;
    let script: [(&str, &str, bool); 7] = [
        ("GET", "/shop/v1/pets/1?delay_ms=3", true),
        ("GET", "/shop/v1/pets/2", false),
        ("POST", "/shop/v1/pets", true),
        ("GET", "/nowhere", false),
        ("GET", "/dead/v1/x", false),
        ("DELETE", "/dead/v1/y", false),
        ("GET", "/shop/v1/pets/9?size=100", true),
    ];
    let mut sent = 0;
    for round in 0..6 {
        for (method, path, key) in &script {
            call(s.http, method, path, *key).await;
            sent += 1;
        }
        if round % 2 == 0 {
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    }
    let evs = read_lines(&events_file, sent).await;
    assert_eq!(evs.len(), sent);
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows: Vec<Row> = loop {
        let text = std::fs::read_to_string(&rollups_file).unwrap_or_default();
        let rows: Vec<Row> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is a rollup row"))
            .collect();
        let n: u64 = rows.iter().map(|r| r.sums.requests).sum();
        if n >= sent as u64 || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let pieces = rows.len();
    let from_gateway = compact(&rows, MINUTE);
    assert!(
        pieces > from_gateway.len(),
        "the rows came in several shipments ({pieces} rows, {} keys)",
        from_gateway.len()
    );
    for r in &rows {
        r.check_minute().expect("a valid minute row");
    }
    let from_events = compact(&roll_up(&evs, MINUTE), MINUTE);
    assert_eq!(from_gateway, from_events);
    // The mix reached several keys: outcomes, applications and resources apart.
    let outcomes: std::collections::BTreeSet<&str> = from_gateway
        .iter()
        .map(|r| r.key.outcome.as_str())
        .collect();
    assert!(outcomes.len() >= 5, "{outcomes:?}");
    assert!(from_gateway.iter().any(|r| r.key.application_id == "app-1"
        && r.key.resource == "/pets/{id}"
        && r.key.application_name == "Mobile"));
    assert_eq!(rollups.stats().written, sent as u64);
    assert_eq!(rollups.stats().dropped, 0);
    let _ = s.gw.shutdown().await;
}
