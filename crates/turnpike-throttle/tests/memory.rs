//! The Unauthenticated tier's key space (one counter per client IP) stays bounded under
//! millions of distinct addresses: idle slots are swept once their window ends, and a
//! hard cap holds even when every address arrives inside one window.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use turnpike_throttle::*;

const T0: UnixNanos = UnixNanos::from_secs(1_704_067_200);

fn addr(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))
}

#[test]
fn two_million_ips_over_ten_minutes_keep_about_one_window_of_slots() {
    let store = CounterStore::new(StoreConfig::default());
    let t = Throttler::build(&ThrottleSpec::wso2_defaults(), store.clone()).expect("spec");
    let clock = ManualClock::new(T0);
    let mut peak = 0;
    // 2M requests, 300 µs apart: 600 s, ten one-minute windows of 200k addresses each.
    for i in 0..2_000_000u32 {
        let now = clock.now();
        assert!(t.check(&RequestFacts::new("pets", addr(i)), now).allowed);
        clock.advance(Duration::from_micros(300));
        // The gateway's background task: a sweep every few (simulated) seconds.
        if i % 16_667 == 0 {
            store.sweep(now);
            peak = peak.max(store.len());
        }
    }
    store.sweep(clock.now());
    assert!(
        peak <= 217_000,
        "peak {peak} slots: more than one window's addresses"
    );
    assert!(store.len() <= 217_000);
    assert!(store.swept_total() >= 1_700_000);
    assert_eq!(store.untracked_total(), 0);
}

#[test]
fn a_flood_inside_one_window_stops_at_the_cap() {
    let store = CounterStore::new(StoreConfig {
        max_entries: 50_000,
    });
    let t = Throttler::build(&ThrottleSpec::wso2_defaults(), store.clone()).expect("spec");
    for i in 0..200_000u32 {
        // Every address is new: a first request passes whether tracked or not.
        assert!(t.check(&RequestFacts::new("pets", addr(i)), T0).allowed);
    }
    assert!(store.len() <= 50_000, "{} slots", store.len());
    assert!(store.untracked_total() >= 150_000);
    // Tracked addresses are still limited.
    let known = RequestFacts::new("pets", addr(0));
    let admitted = (0..600).filter(|_| t.check(&known, T0).allowed).count();
    assert_eq!(admitted, 499);
    // When the window is over, the next new key sweeps its full shard and is tracked.
    let later = T0.plus(Duration::from_secs(60));
    assert!(
        t.check(&RequestFacts::new("pets", addr(999_999)), later)
            .allowed
    );
    assert!(store.len() < 50_000);
}
