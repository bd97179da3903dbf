//! Per-resource cache settings through a real gateway on 127.0.0.1:0 (docs/caching.md,
//! "Per resource"): one resource cached with the API's settings, one switched off, one
//! with its own TTL (time moved by hand); a resource cached on an API with no cache of
//! its own; and bad resource settings refused with the resource's document path.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use support::*;
use turnpike_config::{PolicyRuntime, Snapshot};
use turnpike_model::clock::{ManualClock, UnixNanos};

/// An open API on `addr` with `resources` and, when given, the API's `cache` entry.
fn yaml(addr: std::net::SocketAddr, resources: &str, api_cache: Option<&str>) -> String {
    let policies = api_cache
        .map(|c| format!("    policies:\n      - cache: {c}\n"))
        .unwrap_or_default();
    format!(
        "apis:\n  - name: res\n    context: /res\n    version: v1\n    endpoints: [\"{}\"]\n    auth: none\n    resources:\n{resources}{policies}",
        http(addr)
    )
}

/// A gateway serving `text` whose cache reads `clock`.
async fn gateway_on(clock: &ManualClock, text: &str) -> TestGateway {
    let runtime = PolicyRuntime::new().with_clock(Arc::new(clock.clone()));
    let snap = Snapshot::from_yaml_with(text, "test", &runtime).expect("valid");
    gateway_serving(snap, |_| {}).await
}

/// `(X-Cache or "-", body)` of a GET of `path` below the API.
async fn get(gw: &TestGateway, path: &str) -> (String, String) {
    let resp = client()
        .get(gw.url(&format!("/res/v1{path}")))
        .send()
        .await
        .expect("response");
    assert_eq!(resp.status(), 200);
    let x = resp
        .headers()
        .get("x-cache")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    (x, resp.text().await.expect("body"))
}

/// The system time, as the manual clock's start (the back end's `Date` is real time).
fn now() -> ManualClock {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    ManualClock::new(UnixNanos::from_secs(since.as_secs()))
}

const THREE: &str = "      - { path: \"/cached/*\", methods: [GET] }\n      - { path: \"/off/*\", methods: [GET], cache: false }\n      - { path: \"/short/*\", methods: [GET], cache: { ttl: 5s } }\n";

#[tokio::test]
async fn a_resource_is_cached_switched_off_or_fresh_for_its_own_ttl() {
    let up = numbered().await;
    let clock = now();
    let gw = gateway_on(&clock, &yaml(up.addr, THREE, Some("{ ttl: 60s }"))).await;

    // The API's settings: MISS then HIT, one upstream call.
    assert_eq!(get(&gw, "/cached/a").await.0, "MISS");
    let hit = get(&gw, "/cached/a").await;
    assert_eq!(hit, ("HIT".into(), "/cached/a call 1".into()));

    // Switched off: no cache work at all (no X-Cache), every GET goes upstream.
    let first = get(&gw, "/off/a").await;
    let second = get(&gw, "/off/a").await;
    assert_eq!(first, ("-".into(), "/off/a call 2".into()));
    assert_eq!(second, ("-".into(), "/off/a call 3".into()));

    // Its own TTL: fresh for 5 s, while the API's 60 s still hold for /cached.
    assert_eq!(get(&gw, "/short/a").await.0, "MISS");
    assert_eq!(get(&gw, "/short/a").await.0, "HIT");
    clock.advance(Duration::from_secs(10));
    let refreshed = get(&gw, "/short/a").await;
    assert_eq!(refreshed, ("MISS".into(), "/short/a call 5".into()));
    assert_eq!(
        get(&gw, "/cached/a").await,
        ("HIT".into(), "/cached/a call 1".into())
    );
    assert_eq!(up.calls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_resource_is_cached_on_an_api_without_a_cache_of_its_own() {
    let up = numbered().await;
    let resources = "      - { path: \"/plain/*\", methods: [GET] }\n      - { path: \"/hot/*\", methods: [GET], cache: { ttl: 30s, statuses: [200] } }\n";
    let gw = gateway_on(&now(), &yaml(up.addr, resources, None)).await;
    assert_eq!(get(&gw, "/hot/a").await.0, "MISS");
    assert_eq!(
        get(&gw, "/hot/a").await,
        ("HIT".into(), "/hot/a call 1".into())
    );
    assert_eq!(
        get(&gw, "/plain/a").await,
        ("-".into(), "/plain/a call 2".into())
    );
    assert_eq!(
        get(&gw, "/plain/a").await,
        ("-".into(), "/plain/a call 3".into())
    );
}

#[test]
fn bad_resource_settings_are_refused_at_the_resources_path() {
    let addr = refused_addr();
    let resources = "      - { path: \"/a\", methods: [GET], cache: { ttl: soon, max_size: 1MiB } }\n      - { path: \"/b\", methods: [GET], cache: { purges: [ { id: 1 } ] } }\n";
    let text = yaml(addr, resources, Some("{ ttl: 60s }"));
    let Err(err) = Snapshot::from_yaml_with(&text, "test", &PolicyRuntime::new()) else {
        panic!("refused");
    };
    let err = err.to_string();
    for path in [
        "apis[0].resources[0].cache.ttl",
        "apis[0].resources[0].cache.max_size",
        "apis[0].resources[1].cache.purges",
    ] {
        assert!(err.contains(path), "{path} not in {err}");
    }
    let typo = yaml(
        addr,
        "      - { path: \"/a\", methods: [GET], cache: { tll: 5s } }\n",
        None,
    );
    let Err(err) = Snapshot::from_yaml_with(&typo, "test", &PolicyRuntime::new()) else {
        panic!("refused");
    };
    let err = err.to_string();
    assert!(err.contains("tll"), "{err}");
}
