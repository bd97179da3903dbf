//! The response cache's bound holds in memory, not only in weight: answers stored
//! through a real gateway from a real back end (both on 127.0.0.1:0) grow the process
//! by no more than the weight the store charges them, which is what `max_size` bounds.
//!
//! What it would have caught: each stored 50-byte answer kept a slice of its upstream
//! connection's 8 KiB+ read buffer, so an entry charged ~0.7 KiB held ~10 KiB, and a
//! store bounded at 256 MiB grew the gateway to 1.9 GB (bench/RESULTS.md, session 18).
//! Every entry is also served once, so its head's map (built by its first hit) is
//! counted too. The process's resident memory is the measure (the test is alone in its binary, on
//! one thread): thousands of entries make the growth megabytes, far above the noise.

mod cache_support;
mod support;

use cache_support::*;
use turnpike_config::Snapshot;

/// Entries stored between the two measures.
const STORED: usize = 4000;

/// The process's resident bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

fn usage(r: &Rig) -> (usize, u64) {
    let snap: std::sync::Arc<Snapshot> = r.gw.snapshots().load_full();
    let api = snap
        .apis
        .iter()
        .find(|a| a.label.context.as_ref() == "/cached");
    let cache = api.and_then(|a| a.chain.find::<turnpike_cache::ResponseCache>());
    cache.expect("the cache policy is built").store().usage()
}

/// Asks for keys `from..to`, each answered as `label` says.
async fn ask(r: &Rig, from: usize, to: usize, label: &str) {
    for i in from..to {
        let got = r.get(&format!("/m?n={i}"), "", &[]).await;
        assert_eq!((got.status, got.x_cache.as_str()), (200, label));
    }
}

#[tokio::test]
async fn stored_answers_hold_no_more_memory_than_their_weight() {
    let backend = Backend::default();
    let addr = backend.start().await;
    // A store large enough that its admission queue keeps every entry stored here.
    let text =
        yaml(addr, "          admission: always\n").replace("max_size: 64MiB", "max_size: 2GiB");
    let r = rig_of(backend, &text).await;
    // Warm up the connections, buffers and allocator arenas the measure should not count.
    ask(&r, 0, 500, "MISS").await;
    ask(&r, 0, 500, "HIT").await;
    let (entries0, weight0) = usage(&r);
    let rss0 = resident();
    ask(&r, 500, 500 + STORED, "MISS").await;
    // Each served once: an entry's head map is built by its first hit, and must be in
    // the charge from the start (the charge is fixed when the entry is stored).
    ask(&r, 500, 500 + STORED, "HIT").await;
    let rss1 = resident();
    let (entries1, weight1) = usage(&r);
    assert_eq!(entries1 - entries0, STORED, "every answer stayed stored");
    let (grown, charged) = (rss1.saturating_sub(rss0), weight1 - weight0);
    let per = |n: u64| n / STORED as u64;
    eprintln!(
        "{STORED} entries: resident +{} B/entry, charged {} B/entry",
        per(grown),
        per(charged)
    );
    // Held at most what was charged (a quarter more for the allocator's pages, and
    // 512 KiB for the process's own noise).
    assert!(
        grown <= charged + charged / 4 + 512 * 1024,
        "entries hold {} B each, charged {} B",
        per(grown),
        per(charged)
    );
}
