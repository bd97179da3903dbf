//! `Throttler::check` cost: one hot key (subscription + application tier + API policy),
//! many distinct keys (unauthenticated, per client IP), and the hot key from 2 threads.
//! Run: `cargo bench -p turnpike-throttle --bench check`.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use turnpike_throttle::*;

const T0: UnixNanos = UnixNanos::from_secs(1_704_067_200);

fn throttler() -> Throttler {
    let mut spec = ThrottleSpec::wso2_defaults();
    // Limits high enough that the bench measures admissions, not refusals.
    spec.subscription_tiers
        .push(SubscriptionTier::per_minute("Huge", u64::MAX >> 30));
    spec.application_tiers
        .push(ApplicationTier::per_minute("Huge", u64::MAX >> 30));
    spec.advanced_policies
        .push(AdvancedPolicy::per_minute("Huge", u64::MAX >> 30));
    Throttler::build(&spec, CounterStore::new(StoreConfig::default()))
        .unwrap_or_else(|e| panic!("{e:?}"))
}

fn hot() -> RequestFacts<'static> {
    RequestFacts {
        application_id: Some("app-0001"),
        user: Some("alice@example.com"),
        subscription_tier: Some("Huge"),
        application_tier: Some("Huge"),
        api_policy: Some("Huge"),
        ..RequestFacts::new("api-pets-v1", IpAddr::from([10, 0, 0, 1]))
    }
}

fn bench(c: &mut Criterion) {
    let t = throttler();
    let f = hot();
    c.bench_function("check/hot_key_3_levels", |b| {
        b.iter(|| std::hint::black_box(t.check(&f, T0)))
    });

    let off = RequestFacts {
        subscription_tier: Some("Unlimited"),
        application_tier: Some("Unlimited"),
        api_policy: None,
        ..hot()
    };
    c.bench_function("check/unlimited", |b| {
        b.iter(|| std::hint::black_box(t.check(&off, T0)))
    });

    let t = throttler();
    let mut i = 0u32;
    c.bench_function("check/many_keys_unauthenticated_ip", |b| {
        b.iter(|| {
            i = (i + 1) % 1_000_000;
            let f = RequestFacts::new("api-pets-v1", IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i)));
            std::hint::black_box(t.check(&f, T0))
        })
    });

    let t = Arc::new(throttler());
    c.bench_function("check/hot_key_2_threads", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..2 {
                    let t = t.clone();
                    s.spawn(move || {
                        let f = hot();
                        for _ in 0..iters {
                            std::hint::black_box(t.check(&f, T0));
                        }
                    });
                }
            });
            // Per check, both threads together: wall time / (2 x iters).
            start.elapsed() / 2
        })
    });

    let mut h = http::HeaderMap::new();
    let d = throttler().check(&hot(), T0);
    let t = throttler();
    c.bench_function("write_headers/ietf", |b| {
        b.iter(|| {
            h.clear();
            t.write_headers(&d, HeaderStyle::Ietf, &mut h);
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
