//! Three throttlers (three gateways) share one real Redis: the global limit holds within
//! the documented bound `limit + nodes x batch`, and when Redis dies they keep serving on
//! local limits, then resynchronise when it returns. Two throttlers share one token
//! budget the same way (what one gateway's calls used refuses the other's).

mod support;

use std::net::IpAddr;
use std::sync::Arc;

use support::Redis;
use turnpike_policy::ai::{TokenEstimate, TokenUsage};
use turnpike_throttle::*;

const T0: UnixNanos = UnixNanos::from_secs(1_704_067_200);

struct Node {
    throttler: Throttler,
    cluster: Arc<Cluster>,
}

fn spec(limit: u64) -> ThrottleSpec {
    ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            quota: Some(Limit::requests(limit, TimeUnit::Minute)),
            ..SubscriptionTier::per_minute("Shared", limit)
        }],
        ..Default::default()
    }
}

fn nodes(redis: &Redis, limit: u64, batch: u64, mode: FailMode, clock: &ManualClock) -> Vec<Node> {
    (0..3)
        .map(|i| {
            let store = CounterStore::new(StoreConfig::default());
            let cfg = ClusterConfig {
                batch,
                fail_mode: mode,
                node_id: Some(format!("node{i}")),
                ..ClusterConfig::new(redis.url())
            };
            let cluster = Cluster::attach(&store, cfg, Arc::new(clock.clone())).expect("attach");
            let throttler = Throttler::build(&spec(limit), store).expect("spec");
            Node { throttler, cluster }
        })
        .collect()
}

fn req() -> RequestFacts<'static> {
    RequestFacts {
        application_id: Some("app1"),
        subscription_tier: Some("Shared"),
        ..RequestFacts::new("pets", IpAddr::from([10, 0, 0, 1]))
    }
}

fn admit(n: &Node, count: usize, now: UnixNanos) -> u64 {
    (0..count)
        .filter(|_| n.throttler.check(&req(), now).allowed)
        .count() as u64
}

/// Uneven traffic (node 0 busiest) with a sync after each round, until a few rounds
/// in a row admit nothing. Returns what was admitted in all.
async fn drive(nodes: &[Node], now: UnixNanos, pattern: [usize; 3]) -> u64 {
    let (mut total, mut idle) = (0, 0);
    while idle < 3 {
        let mut round = 0;
        for (i, n) in nodes.iter().enumerate() {
            round += admit(n, pattern[i], now);
        }
        for n in nodes {
            n.cluster.sync_once().await;
        }
        total += round;
        idle = if round == 0 { idle + 1 } else { 0 };
    }
    total
}

#[tokio::test]
async fn three_gateways_hold_a_global_limit_within_the_bound() {
    let redis = Redis::start();
    let clock = ManualClock::new(T0);
    let (limit, batch) = (600, 20);
    let nodes = nodes(&redis, limit, batch, FailMode::Open, &clock);
    let admitted = drive(&nodes, T0, [13, 7, 3]).await;
    let bound = 3 * batch;
    eprintln!(
        "cluster: limit {limit}, 3 nodes, batch {batch}: admitted {admitted} \
         (over-admission {}, bound {bound})",
        admitted as i64 - limit as i64
    );
    assert!(admitted <= limit + bound, "admitted {admitted}");
    assert!(admitted + bound >= limit, "under-admitted: {admitted}");
    assert_eq!(redis.totals().await, vec![limit]);
    // The next window starts afresh everywhere. Traffic heavier than a batch per sync
    // keeps every node on its credit: the worst case for over-admission.
    let next = T0.plus(std::time::Duration::from_secs(60));
    clock.set(next);
    let heavy = drive(&nodes, next, [50, 50, 50]).await;
    eprintln!(
        "cluster (heavy): admitted {heavy} (over-admission {}, bound {bound})",
        heavy as i64 - limit as i64
    );
    assert!(
        heavy <= limit + bound && heavy + bound >= limit,
        "admitted {heavy}"
    );
}

/// Admits `step` at a time and syncs until a sync fails (Redis is seen down only when a
/// node needs a lease). Returns what it admitted.
async fn until_down(n: &Node, step: usize) -> u64 {
    let mut admitted = 0;
    for _ in 0..100 {
        admitted += admit(n, step, T0);
        if n.cluster.sync_once().await.failed {
            return admitted;
        }
    }
    panic!("redis still seen up");
}

#[tokio::test]
async fn redis_outage_keeps_serving_then_resynchronises() {
    let mut redis = Redis::start();
    let clock = ManualClock::new(T0);
    let (limit, batch) = (3000, 10);
    let nodes = nodes(&redis, limit, batch, FailMode::Open, &clock);
    let mut used = [0u64; 3];
    for _ in 0..5 {
        for (i, n) in nodes.iter().enumerate() {
            used[i] += admit(n, 6, T0);
            n.cluster.sync_once().await;
        }
    }
    assert_eq!(used, [30; 3]);
    redis.stop();
    for (i, n) in nodes.iter().enumerate() {
        used[i] += until_down(n, 5).await;
        assert!(!n.cluster.is_up());
        // Fail-open: each node serves on its local limit, far past its grants.
        used[i] += admit(n, 100, T0);
        n.cluster.sync_once().await;
        assert_eq!(n.cluster.outages(), 1, "logged and counted once");
    }
    assert!(used.iter().all(|u| *u >= 130), "{used:?}");
    redis.restart();
    for (i, n) in nodes.iter().enumerate() {
        // The first round may still meet the dead connection; it reconnects by itself.
        let mut rounds = 0;
        loop {
            used[i] += admit(n, 1, T0);
            if !n.cluster.sync_once().await.failed && n.cluster.is_up() {
                break;
            }
            rounds += 1;
            assert!(rounds < 50, "no resync");
        }
    }
    // The fresh Redis now holds every node's consumption, plus at most a batch each.
    let sum: u64 = used.iter().sum();
    let totals = redis.totals().await;
    eprintln!("resync: nodes used {used:?} = {sum}; redis total {totals:?}");
    assert_eq!(totals.len(), 1);
    assert!(
        (sum..=sum + 3 * batch).contains(&totals[0]),
        "{totals:?} vs {sum}"
    );
    assert_eq!(admit(&nodes[0], 5, T0), 5);
}

#[tokio::test]
async fn fail_closed_stops_at_what_was_granted() {
    let mut redis = Redis::start();
    let clock = ManualClock::new(T0);
    let nodes = nodes(&redis, 1000, 50, FailMode::Closed, &clock);
    let n = &nodes[0];
    assert_eq!(admit(n, 10, T0), 10);
    n.cluster.sync_once().await;
    // Granted: 10 used + one batch of 50; one more batch of credit until the outage shows.
    redis.stop();
    let before = until_down(n, 40).await;
    assert!(before <= 100, "{before}");
    assert!(!n.cluster.is_up());
    assert_eq!(
        admit(n, 100, T0),
        0,
        "fail-closed admits nothing past its grants"
    );
}

#[tokio::test]
async fn the_background_task_leases_on_its_own() {
    let redis = Redis::start();
    let clock = ManualClock::new(T0);
    let nodes = nodes(&redis, 100, 10, FailMode::Open, &clock);
    let tasks: Vec<_> = nodes.iter().map(|n| n.cluster.spawn()).collect();
    // Without manual syncs, admission goes on past the first credit once leases land.
    let mut admitted = 0;
    for _ in 0..2000 {
        admitted += admit(&nodes[0], 1, T0);
        if admitted >= 50 {
            break;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    assert!(admitted >= 50, "only {admitted} admitted");
    for t in tasks {
        t.abort();
    }
}

/// Each node asks for `n` requests and syncs after; returns how many were refused.
async fn round_refusals(nodes: &[Node], n: usize, now: UnixNanos) -> u64 {
    let mut refused = 0;
    for node in nodes {
        refused += n as u64 - admit(node, n, now);
    }
    for node in nodes {
        node.cluster.sync_once().await;
    }
    refused
}

#[tokio::test]
async fn no_false_refusal_far_below_the_limit_when_leases_come_late() {
    let mut redis = Redis::start();
    let clock = ManualClock::new(T0);
    let (limit, batch) = (10_000_000, 100);
    let gws = nodes(&redis, limit, batch, FailMode::Open, &clock);
    // Five batches per node between two lease rounds (a late sync, a busy runtime, a
    // node faster than `b` per interval): the global count stays far below the limit, so
    // not one request may be refused. This refused 4 of every 5 requests with a credit of
    // one batch.
    let mut refused = 0;
    for _ in 0..10 {
        refused += round_refusals(&gws, 5 * batch as usize, T0).await;
    }
    assert_eq!(refused, 0, "refused far below the limit");
    // A new window, before any lease of it.
    let next = T0.plus(std::time::Duration::from_secs(60));
    clock.set(next);
    assert_eq!(round_refusals(&gws, 2000, next).await, 0, "window start");
    // Redis lost, then back (empty): serving goes on, and after it returns as well.
    redis.stop();
    for n in &gws {
        let mut rounds = 0;
        while !n.cluster.sync_once().await.failed {
            assert_eq!(admit(n, 50, next), 50);
            rounds += 1;
            assert!(rounds < 100, "redis still seen up");
        }
        assert_eq!(admit(n, 1000, next), 1000, "fail-open");
    }
    redis.restart();
    for n in &gws {
        let mut rounds = 0;
        while n.cluster.sync_once().await.failed || !n.cluster.is_up() {
            assert_eq!(admit(n, 1, next), 1);
            rounds += 1;
            assert!(rounds < 50, "no resync");
        }
    }
    for _ in 0..5 {
        assert_eq!(
            round_refusals(&gws, 1000, next).await,
            0,
            "after Redis returned"
        );
    }
    // The bound still holds near the limit: a small limit with heavy traffic.
    let third = next.plus(std::time::Duration::from_secs(60));
    clock.set(third);
    let small = nodes(&redis, 600, 20, FailMode::Open, &clock);
    let admitted = drive(&small, third, [50, 50, 50]).await;
    assert!(admitted <= 600 + 3 * 20, "admitted {admitted}");
}

const TOKENS: u64 = 10_000;
const TOKEN_BATCH: u64 = 100;

fn token_node(redis: &Redis, i: usize, clock: &ManualClock) -> Node {
    let spec = ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            name: "AiShared".into(),
            tokens: vec![TokenLimit::total(TOKENS, TimeUnit::Minute)],
            ..SubscriptionTier::unlimited()
        }],
        ..Default::default()
    };
    let store = CounterStore::new(StoreConfig::default());
    let cfg = ClusterConfig {
        batch: TOKEN_BATCH,
        node_id: Some(format!("node{i}")),
        ..ClusterConfig::new(redis.url())
    };
    let cluster = Cluster::attach(&store, cfg, Arc::new(clock.clone())).expect("attach");
    let throttler = Throttler::build(&spec, store).expect("spec");
    Node { throttler, cluster }
}

fn llm_req() -> RequestFacts<'static> {
    RequestFacts {
        application_id: Some("app1"),
        subscription_tier: Some("AiShared"),
        ..RequestFacts::new("llm", IpAddr::from([10, 0, 0, 1]))
    }
}

/// One call holding `prompt + max` and using `used`: whether it was admitted.
fn token_call(n: &Node, prompt: u64, max: u64, used: u64) -> bool {
    let est = TokenEstimate {
        prompt,
        max_completion: max,
    };
    let d = n.throttler.check_tokens(&llm_req(), None, Some(&est), T0);
    if d.allowed {
        let usage = TokenUsage {
            prompt,
            completion: used.saturating_sub(prompt),
            total: used,
            ..TokenUsage::default()
        };
        n.throttler.settle_tokens(&d, Some(&usage), T0);
    }
    d.allowed
}

async fn sync_all(nodes: &[&Node]) {
    for n in nodes {
        n.cluster.sync_once().await;
    }
}

#[tokio::test]
async fn two_gateways_share_one_token_budget() {
    let redis = Redis::start();
    let clock = ManualClock::new(T0);
    let (a, b) = (token_node(&redis, 0, &clock), token_node(&redis, 1, &clock));
    // Gateway A spends 9,000 tokens in nine calls (each held 1,200, used 1,000).
    for i in 0..9 {
        assert!(token_call(&a, 200, 1_000, 1_000), "A's call {i}");
        sync_all(&[&a, &b]).await;
    }
    // Gateway B: its first call is admitted on what B knows before any lease (nothing
    // of A's); its lease tells it A's 9,000: alone it would admit 15 more calls of 600,
    // sharing the budget none (9,600 + 600 > 10,000), while 300 still fit.
    assert!(token_call(&b, 100, 500, 600), "B's first call");
    sync_all(&[&a, &b]).await;
    assert!(!token_call(&b, 100, 500, 600), "B must see A's 9,000");
    assert!(token_call(&b, 100, 200, 300), "9,900: fits");
    sync_all(&[&a, &b]).await;
    assert!(!token_call(&b, 100, 100, 200), "100 left");
    // A learns B's 900 at its next lease round (its hold asks for one): then a call of
    // 100 on top of 9,950 is refused.
    assert!(token_call(&a, 25, 25, 50), "A's view is its last lease's");
    sync_all(&[&a, &b]).await;
    assert!(!token_call(&a, 50, 50, 100), "A must see B's usage");
    // Redis never granted past the budget.
    let totals = redis.totals().await;
    eprintln!(
        "cluster tokens: limit {TOKENS}, used 9,950 over two gateways, Redis granted {totals:?}"
    );
    assert!(totals.iter().all(|t| *t <= TOKENS), "{totals:?}");
}
