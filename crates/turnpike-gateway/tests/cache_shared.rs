//! The response cache's shared level: two gateways, each with its own runtime, store
//! and link to one real redis-server (started here on a free port), in front of one back
//! end that counts its calls. B serves what A stored without calling the back end; a
//! purge reaches both and the shared level; Redis killed, both still answer, at once;
//! Redis back, sharing resumes without a restart.

mod cache_support;
mod support;

#[allow(dead_code)]
#[path = "../../turnpike-throttle/tests/support/mod.rs"]
mod redis_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cache_support::*;
use redis_server::Redis;
use turnpike_cache::{SharedConfig, SharedLevel};

const SHARED: &str = "          shared: redis\n";
/// The name clients use for every gateway (as behind a balancer): a stored answer is
/// selected by `Host` as in memory.
const HOST: [(&str, &str); 1] = [("host", "api.example")];

/// A gateway's link to `redis`, its task started and connected. The request timeout is
/// generous so a busy test machine never turns a Redis hit into a miss; the default
/// (10 ms) is what production uses.
async fn level(redis: &Redis) -> Arc<SharedLevel> {
    let mut cfg = SharedConfig::new(redis.url());
    cfg.timeout = Duration::from_millis(500);
    cfg.probe_interval = Duration::from_millis(50);
    let level = SharedLevel::new(cfg).expect("url");
    // Stops with the test's runtime.
    drop(level.spawn());
    wait_for("the shared level to connect", || level.is_up()).await;
    level
}

async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A connection of the test's own to `redis`.
async fn connect(redis: &Redis) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(redis.url()).expect("url");
    client
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// How many entries the shared level holds in `redis`.
async fn entries(redis: &Redis) -> usize {
    let mut c = connect(redis).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("turnpike:cache:*|e|*")
        .query_async(&mut c)
        .await
        .expect("keys");
    keys.len()
}

/// Waits until the written-through entries reach `n` (writes leave the request path).
async fn written(redis: &Redis, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while entries(redis).await < n {
        assert!(Instant::now() < deadline, "{n} entries never reached redis");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

struct Pair {
    a: Rig,
    b: Rig,
    levels: [Arc<SharedLevel>; 2],
    backend: Backend,
    addr: std::net::SocketAddr,
}

async fn pair(redis: &Redis, extra: &str) -> Pair {
    let backend = Backend::default();
    let addr = backend.start().await;
    let levels = [level(redis).await, level(redis).await];
    let a = rig_sharing(backend.clone(), addr, extra, levels[0].clone()).await;
    let b = rig_sharing(backend.clone(), addr, extra, levels[1].clone()).await;
    Pair {
        a,
        b,
        levels,
        backend,
        addr,
    }
}

#[tokio::test]
async fn b_serves_what_a_stored_with_its_age_and_no_second_upstream_call() {
    let redis = Redis::start();
    let p = pair(&redis, SHARED).await;
    let first = p.a.get("/x", KEY_A, &HOST).await;
    assert_eq!(first.x_cache, "MISS");
    // An answer that arrived 59 s old keeps aging across gateways.
    assert_eq!(p.a.get("/aged", "", &HOST).await.x_cache, "MISS");
    written(&redis, 2).await;
    let from_b = p.b.get("/x", KEY_A, &HOST).await;
    assert_eq!((from_b.status, from_b.x_cache.as_str()), (200, "HIT"));
    assert_eq!(from_b.body, first.body, "A's answer, byte for byte");
    assert!(from_b.age.is_some(), "a shared hit carries Age");
    let aged = p.b.get("/aged", "", &HOST).await;
    assert_eq!(aged.x_cache, "HIT");
    assert!(aged.age.is_some_and(|a| a >= 59), "Age {:?}", aged.age);
    assert_eq!(p.backend.calls("/x"), 1, "B did not call the back end");
    assert_eq!(p.backend.calls("/aged"), 1);
    // Now in B's memory: a hit without Redis.
    assert_eq!(p.b.get("/x", KEY_A, &HOST).await.x_cache, "HIT");
    // Another caller's key, and answers never stored, are not shared either.
    assert_eq!(p.b.get("/x", KEY_B, &HOST).await.x_cache, "MISS");
    for path in ["/private", "/cookie"] {
        assert_eq!(p.a.get(path, KEY_A, &HOST).await.x_cache, "MISS");
        assert_eq!(p.b.get(path, KEY_A, &HOST).await.x_cache, "MISS", "{path}");
        assert_eq!(p.backend.calls(path), 2, "{path}");
    }
}

#[tokio::test]
async fn an_api_without_shared_never_touches_redis() {
    let redis = Redis::start();
    let p = pair(&redis, "").await;
    assert_eq!(p.a.get("/x", KEY_A, &HOST).await.x_cache, "MISS");
    assert_eq!(p.a.get("/x", KEY_A, &HOST).await.x_cache, "HIT");
    assert_eq!(p.b.get("/x", KEY_A, &HOST).await.x_cache, "MISS");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(entries(&redis).await, 0);
    let stats = command_stats(&redis).await;
    assert!(!stats.contains("cmdstat_mget"), "no read: {stats}");
    assert!(!stats.contains("cmdstat_set:"), "no write: {stats}");
    assert_eq!(p.backend.calls("/x"), 2);
}

/// Redis's count of each command it ran (`INFO commandstats`).
async fn command_stats(redis: &Redis) -> String {
    let mut c = connect(redis).await;
    redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .expect("info")
}

#[tokio::test]
async fn a_purge_reaches_both_gateways_and_the_shared_level() {
    let redis = Redis::start();
    let p = pair(&redis, SHARED).await;
    for path in ["/x", "/p/a", "/p/b"] {
        assert_eq!(p.a.get(path, KEY_A, &HOST).await.x_cache, "MISS");
    }
    written(&redis, 3).await;
    for path in ["/x", "/p/a"] {
        assert_eq!(p.b.get(path, KEY_A, &HOST).await.x_cache, "HIT", "{path}");
    }
    // A purge by prefix, as the control plane ships it with the snapshot.
    let purged = format!("{SHARED}          purges: [ {{ id: 1, prefix: /p/ }} ]\n");
    for gw in [&p.a, &p.b] {
        gw.swap(p.addr, &purged);
        assert_eq!(gw.get("/p/a", KEY_A, &HOST).await.x_cache, "MISS");
        assert_eq!(gw.get("/x", KEY_A, &HOST).await.x_cache, "HIT", "untouched");
    }
    assert_eq!(p.backend.calls("/p/a"), 3);
    // Both applied the purge; it bumped the API's generation in Redis once.
    let deadline = Instant::now() + Duration::from_secs(10);
    while generation(&redis).await != Some(1) {
        assert!(Instant::now() < deadline, "the purge never reached redis");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A third gateway whose snapshot lists no purge (as after an apply without them)
    // finds nothing of the old generation there: not a purged path nobody asked for
    // since, and, as a purge of any kind empties the shared level, not the others.
    let c = rig_sharing(p.backend.clone(), p.addr, SHARED, level(&redis).await).await;
    assert_eq!(c.get("/p/b", KEY_A, &HOST).await.x_cache, "MISS");
    assert_eq!(c.get("/x", KEY_A, &HOST).await.x_cache, "MISS");
    assert_eq!(p.backend.calls("/p/b"), 2);
    assert_eq!(generation(&redis).await, Some(1), "two gateways, one bump");
}

/// The API's purge generation in the shared level.
async fn generation(redis: &Redis) -> Option<u64> {
    let mut conn = connect(redis).await;
    redis::cmd("GET")
        .arg("turnpike:cache:/cached/v1|gen")
        .query_async(&mut conn)
        .await
        .expect("get")
}

#[tokio::test]
async fn with_redis_killed_both_answer_at_once_and_sharing_resumes_when_it_returns() {
    let mut redis = Redis::start();
    let p = pair(&redis, SHARED).await;
    assert_eq!(p.a.get("/before", KEY_A, &HOST).await.x_cache, "MISS");
    written(&redis, 1).await;
    redis.stop();
    for i in 0..20 {
        for gw in [&p.a, &p.b] {
            let started = Instant::now();
            let got = gw.get(&format!("/down/{i}"), KEY_A, &HOST).await;
            assert_eq!((got.status, got.x_cache.as_str()), (200, "MISS"));
            // Loose: a request never waits for a connect or a timeout in a row.
            assert!(started.elapsed() < Duration::from_secs(2), "{i}: stalled");
        }
    }
    assert!(p.levels.iter().all(|l| !l.is_up()), "the circuit is open");
    assert!(p.levels.iter().all(|l| l.outages() == 1), "one outage each");
    // Each gateway still hits its own memory.
    assert_eq!(p.a.get("/before", KEY_A, &HOST).await.x_cache, "HIT");
    redis.restart();
    wait_for("both links to come back", || {
        p.levels.iter().all(|l| l.is_up())
    })
    .await;
    assert_eq!(p.a.get("/after", KEY_A, &HOST).await.x_cache, "MISS");
    written(&redis, 1).await;
    assert_eq!(p.b.get("/after", KEY_A, &HOST).await.x_cache, "HIT");
    assert_eq!(p.backend.calls("/after"), 1);
}
