//! The verified-token cache's byte budget, measured rather than assumed: this test binary
//! runs on mimalloc (the gateway's allocator) and reads the process's resident memory
//! before and after a million identities of the shape our key manager issues (10,000
//! applications) go into a cache with the default budget. Every token must still be held
//! and the growth must stay within the budget. One test in this binary, so nothing else
//! allocates while it measures.

use std::sync::Arc;

use turnpike_auth::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Resident set size in bytes, from /proc/self/statm.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4096
}

/// A uniform 32-byte stand-in for a token's SHA-256 (hashing a million strings
/// unoptimised would dominate the run).
fn key(i: u64) -> TokenKey {
    let mut k = [0u8; 32];
    let mut x = i;
    for chunk in k.chunks_mut(8) {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    TokenKey(k)
}

/// What the JWT validator builds for a key-manager token of user `i` (`sub`, a
/// 36-character `jti`), its application's fields interned.
fn identity(i: u64, principals: &Principals) -> Arc<Identity> {
    let app = i % 10_000;
    Arc::new(Identity {
        kind: CredentialKind::Jwt,
        subject: format!("user-{i}").into(),
        expires_at: Some(2_000_000_000),
        token_id: Some(format!("{i:08x}-0000-4000-8000-{app:012x}").into()),
        principal: principals.intern(Principal {
            issuer: Some("https://gateway.example.com:9400/oauth2/token".into()),
            client_id: Some(format!("client-{app:06}")),
            application_id: Some(format!("app-{app:06}")),
            application_name: Some(format!("Application {app}")),
            subscriber: Some(format!("owner-{app}")),
            scopes: vec!["read".into(), "write".into()],
            key_type: KeyType::Production,
            key_id: Some("km-key-1".into()),
            claims: Default::default(),
            resources: Vec::new(),
        }),
    })
}

#[test]
fn a_million_tokens_fit_the_default_budget() {
    const N: u64 = 1_000_000;
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::at_secs(1_000_000_000));
    let principals = Principals::default();
    let before = rss();
    let cache: TokenCache<Arc<Identity>> = TokenCache::new(DEFAULT_TOKEN_CACHE_BYTES, clock);
    for i in 0..N {
        cache.insert(key(i), identity(i, &principals), 2_000_000_000);
    }
    let grown = rss().saturating_sub(before);
    let s = cache.stats();
    eprintln!(
        "{} tokens: RSS +{:.1} MiB ({:.0} B per token); weights {:.1} MiB ({:.0} B per token); budget {} MiB",
        s.entries,
        grown as f64 / 1048576.0,
        grown as f64 / s.entries as f64,
        s.bytes as f64 / 1048576.0,
        s.bytes as f64 / s.entries as f64,
        DEFAULT_TOKEN_CACHE_BYTES >> 20,
    );
    assert_eq!(s.entries, N, "every token is held");
    assert!(
        grown <= DEFAULT_TOKEN_CACHE_BYTES,
        "RSS grew {grown} bytes for {N} tokens; budget {DEFAULT_TOKEN_CACHE_BYTES}"
    );
    // The weights the cache bounds track what memory really holds (or the budget would
    // not bound memory): within 25 % of the measured growth.
    let ratio = s.bytes as f64 / grown as f64;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "weights {} vs RSS growth {grown}",
        s.bytes
    );
    assert!(cache.get(&key(0)).is_some() && cache.get(&key(N - 1)).is_some());
}
