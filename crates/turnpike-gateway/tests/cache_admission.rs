//! Adaptive admission (docs/caching.md, "Admission") through a real gateway on
//! 127.0.0.1:0: a burst of unique keys makes the store selective (a key's second
//! request is then a MISS that stores, its third a HIT), a burst of repeated keys never
//! does, the mode ends with its burst (a quiet gateway stores a key's first GET again),
//! `admission: always` never switches, and `/metrics` shows the mode.
//!
//! The store decides every [`WINDOW`] lookups here (4096 in a gateway): a burst is a
//! few windows of requests sent one after another.

mod cache_support;
mod support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::*;
use turnpike_cache::ApiStore;

const WINDOW: u32 = 64;

fn store(r: &Rig) -> Arc<ApiStore> {
    let snap = r.gw.snapshots().load();
    let store = turnpike_cache::api_store(&snap.apis[0].chain).cloned();
    store.expect("the API has a cache")
}

/// A gateway whose store decides every [`WINDOW`] lookups.
async fn small_window_rig(extra: &str) -> Rig {
    let r = rig(extra).await;
    store(&r).set_admission_window(WINDOW);
    r
}

/// Three windows of GETs, each of a new key (the first window only starts the clock).
async fn unique_burst(r: &Rig) {
    for i in 0..3 * WINDOW {
        assert_eq!(r.get(&format!("/u/{i}"), "", &[]).await.status, 200);
    }
}

#[tokio::test]
async fn a_burst_of_unique_keys_stores_only_keys_asked_before() {
    let r = small_window_rig("").await;
    unique_burst(&r).await;
    let s = store(&r);
    assert!(s.selective(), "no hits in a quick window");
    let unadmitted = s.unadmitted_total();
    assert!(
        unadmitted >= u64::from(WINDOW),
        "the third window stored nothing"
    );
    let held = s.usage().0;
    let first = r.get("/k", "", &[]).await;
    assert_eq!((first.x_cache.as_str(), first.age), ("MISS", None));
    assert_eq!(s.usage().0, held, "a key asked once is not stored");
    assert_eq!(s.unadmitted_total(), unadmitted + 1);
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "MISS", "the second");
    assert_eq!(r.backend.calls("/k"), 2, "the second reached the upstream");
    assert_eq!(s.usage().0, held + 1, "and its answer was stored");
    let third = r.get("/k", "", &[]).await;
    assert_eq!(third.x_cache, "HIT");
    assert!(third.body.starts_with("/k call 2 "), "{}", third.body);
    assert_eq!(r.backend.calls("/k"), 2);

    let text = turnpike_gateway::GatewayMetrics::new(r.gw.snapshots().clone()).render();
    let labels = "api=\"cached\",version=\"v1\",context=\"/cached\",id=\"/cached/v1\"";
    for line in [
        format!("turnpike_cache_selective{{{labels}}} 1"),
        format!(
            "turnpike_cache_unadmitted_total{{{labels}}} {}",
            unadmitted + 1
        ),
    ] {
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
}

#[tokio::test]
async fn a_burst_of_repeated_keys_keeps_storing_every_miss() {
    let r = small_window_rig("").await;
    for i in 0..3 * WINDOW {
        r.get(&format!("/r/{}", i % 8), "", &[]).await;
    }
    assert!(!store(&r).selective());
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "MISS");
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "HIT");
    assert_eq!(r.backend.calls("/k"), 1);
}

#[tokio::test]
async fn once_the_burst_has_ended_a_keys_first_get_stores_again() {
    let r = small_window_rig("").await;
    unique_burst(&r).await;
    assert!(store(&r).selective());
    // Longer than the mode lasts unconfirmed (a second): its watcher ends it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!store(&r).selective(), "the mode ended with the burst");
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "MISS");
    let second = r.get("/k", "", &[]).await;
    assert_eq!(second.x_cache, "HIT");
    assert!(second.age.is_some(), "a hit carries Age");
    assert_eq!(r.backend.calls("/k"), 1);
}

#[tokio::test]
async fn admission_always_stores_every_miss_whatever_the_burst() {
    let r = small_window_rig("          admission: always\n").await;
    unique_burst(&r).await;
    assert!(!store(&r).selective());
    assert_eq!(store(&r).unadmitted_total(), 0);
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "MISS");
    assert_eq!(r.get("/k", "", &[]).await.x_cache, "HIT");
    assert_eq!(r.backend.calls("/k"), 1);
}

#[tokio::test]
async fn a_miss_keeps_the_age_its_answer_came_with_and_gets_none_of_ours() {
    let r = rig("").await;
    assert_eq!(
        r.get("/x", "", &[]).await.age,
        None,
        "made for this request"
    );
    assert_eq!(
        r.get("/aged", "", &[]).await.age,
        Some(59),
        "came through a cache"
    );
}
