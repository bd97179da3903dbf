//! The key manager's store contract over SQL, on SQLite and on a real PostgreSQL the
//! harness starts: clients joined with their applications, users for the password grant,
//! refresh rotation (one winner among concurrent uses), family revocation, opaque tokens,
//! revocations that expire, signing keys that survive a restart, API keys.

use std::sync::Arc;
use std::time::Duration;

use turnpike_keymanager::{
    ClientStore, Grant, GrantType, KeyManager, KeyManagerConfig, KeyStore, ManualClock,
    OpaqueRecord, RefreshRecord, RefreshUse, RevokedJti, Stores, TokenFormat, TokenStore,
};
use turnpike_store::testing::TestDbs;
use turnpike_store::*;

async fn open(url: &str) -> Store {
    Store::open_with(url, PasswordParams::insecure_fast())
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

async fn app(s: &Store, name: &str) -> Application {
    let mut tx = s.begin_write().await.expect("begin");
    let a = tx
        .create_application("alice", name, "Unlimited", "")
        .await
        .expect("app");
    tx.commit("alice", "app").await.expect("commit");
    a
}

fn client_input(secret_hash: &str) -> OAuthClientInput {
    OAuthClientInput {
        key_type: "PRODUCTION".into(),
        secret_hash: secret_hash.into(),
        grant_types: vec![GrantType::ClientCredentials, GrantType::Password],
        scopes: vec!["read".into(), "write".into()],
        token_format: TokenFormat::Opaque,
        access_ttl_s: 600,
        refresh_ttl_s: 3600,
        audience: vec![],
        callback_url: None,
    }
}

fn grant() -> Grant {
    Grant {
        client_id: "c1".into(),
        subject: "bob".into(),
        username: Some("bob".into()),
        scopes: vec!["read".into()],
    }
}

fn refresh(hash: u8, family: &str, jti: &str) -> RefreshRecord {
    RefreshRecord {
        hash: [hash; 32],
        family: family.into(),
        grant: grant(),
        expires_at: 4_000_000_000,
        access_jti: jti.into(),
        access_expires_at: 4_000_000_100,
    }
}

async fn clients_and_users(url: String) {
    let s = open(&url).await;
    let a = app(&s, "shop").await;
    let mut tx = s.begin_write().await.expect("begin");
    let c = tx
        .create_oauth_client(&a.id, "cid-1", &client_input("$argon2id$old"))
        .await
        .expect("client");
    tx.commit("alice", "keys").await.expect("commit");
    assert_eq!(c.token_format, TokenFormat::Opaque);
    let rec = s.client("cid-1").await.expect("read").expect("known");
    assert_eq!(
        (rec.application_id.as_str(), rec.application_name.as_str()),
        (a.id.as_str(), "shop")
    );
    assert_eq!(rec.owner, "alice");
    assert_eq!(rec.secret_hash, "$argon2id$old");
    assert_eq!(
        rec.grant_types,
        [GrantType::ClientCredentials, GrantType::Password]
    );
    assert_eq!(rec.access_token_ttl, Duration::from_secs(600));
    assert!(!rec.can_introspect);
    assert!(s.client("nope").await.expect("read").is_none());

    let mut tx = s.begin_write().await.expect("begin");
    let dup = tx
        .create_oauth_client(&a.id, "cid-2", &client_input("x"))
        .await;
    assert!(matches!(dup, Err(StoreError::Conflict(_))), "{dup:?}");
    drop(tx);
    let mut tx = s.begin_write().await.expect("begin");
    tx.set_client_secret(&a.id, "PRODUCTION", "$argon2id$new")
        .await
        .expect("regenerate");
    tx.commit("alice", "regen").await.expect("commit");
    let rec = s.client("cid-1").await.expect("read").expect("known");
    assert_eq!(rec.secret_hash, "$argon2id$new");
    assert_eq!(s.oauth_clients(&a.id).await.expect("list").len(), 1);

    // Users are the control plane's users, with their argon2 hashes.
    let hash = s.hash_password("pw").await.expect("hash");
    let mut tx = s.begin_write().await.expect("begin");
    tx.create_user("bob", &hash, &["subscriber".into()])
        .await
        .expect("user");
    tx.commit("admin", "user").await.expect("commit");
    let u = user_hash(&s, "bob").await;
    assert!(turnpike_keymanager::verify_secret("pw", &u));
    assert!(ClientStore::user(&s, "ghost")
        .await
        .expect("read")
        .is_none());
}

async fn user_hash(s: &Store, name: &str) -> String {
    ClientStore::user(s, name)
        .await
        .expect("read")
        .expect("known")
        .password_hash
}

async fn refresh_rotation(url: String) {
    let s = open(&url).await;
    s.put_refresh(refresh(1, "fam", "j1")).await.expect("put");
    s.put_refresh(refresh(2, "fam", "j2")).await.expect("put");
    assert!(s.find_refresh(&[1; 32]).await.expect("find").is_some());
    assert!(matches!(
        s.use_refresh(&[1; 32]).await.expect("use"),
        RefreshUse::Fresh(r) if r.grant == grant() && r.access_jti == "j1"
    ));
    assert!(matches!(
        s.use_refresh(&[1; 32]).await.expect("use"),
        RefreshUse::Reused(_)
    ));
    assert!(s.find_refresh(&[1; 32]).await.expect("find").is_none());
    assert!(matches!(
        s.use_refresh(&[9; 32]).await.expect("use"),
        RefreshUse::Unknown
    ));
    let mut jtis = s.revoke_family("fam").await.expect("revoke family");
    jtis.sort_by(|a, b| a.jti.cmp(&b.jti));
    assert_eq!(
        jtis.iter().map(|j| j.jti.as_str()).collect::<Vec<_>>(),
        ["j1", "j2"]
    );
    assert_eq!(jtis[0].expires_at, 4_000_000_100);
    // The unused sibling is dead too: presenting it is a replay.
    assert!(matches!(
        s.use_refresh(&[2; 32]).await.expect("use"),
        RefreshUse::Reused(_)
    ));
}

async fn concurrent_refresh_has_one_winner(url: String) {
    let s = open(&url).await;
    s.put_refresh(refresh(7, "f", "j")).await.expect("put");
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.use_refresh(&[7; 32]).await.expect("use") })
        })
        .collect();
    let mut fresh = 0;
    for t in tasks {
        if matches!(t.await.expect("join"), RefreshUse::Fresh(_)) {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);
}

async fn opaque_and_revocations(url: String) {
    let s = open(&url).await;
    let rec = OpaqueRecord {
        jti: "op-1".into(),
        grant: grant(),
        issued_at: 100,
        expires_at: 4_000_000_000,
        audience: vec!["turnpike".into()],
    };
    s.put_opaque([3; 32], rec).await.expect("put");
    let got = s.find_opaque(&[3; 32]).await.expect("find").expect("known");
    assert_eq!((got.jti.as_str(), got.issued_at), ("op-1", 100));
    assert_eq!(got.audience, ["turnpike"]);
    assert!(s.find_opaque(&[4; 32]).await.expect("find").is_none());

    for (jti, exp) in [("old", 50), ("live", 5000), ("live", 5000)] {
        s.revoke_jti(RevokedJti {
            jti: jti.into(),
            expires_at: exp,
        })
        .await
        .expect("revoke (idempotent)");
    }
    assert!(s.is_revoked("live").await.expect("read"));
    assert!(!s.is_revoked("other").await.expect("read"));
    let live = s.revoked_since(100).await.expect("since");
    assert_eq!(
        live,
        [RevokedJti {
            jti: "live".into(),
            expires_at: 5000
        }]
    );
    assert!(
        !s.is_revoked("old").await.expect("read"),
        "expired entries are purged"
    );
}

async fn signing_keys_survive_restart(url: String) {
    let clock = Arc::new(ManualClock::at_secs(1_700_000_000));
    let start = |s: Store| {
        let clock = clock.clone();
        async move {
            let st = Arc::new(s);
            KeyManager::new(
                KeyManagerConfig::new("http://cp.test"),
                Stores {
                    clients: st.clone(),
                    tokens: st.clone(),
                    keys: st,
                },
                clock,
            )
            .await
            .expect("key manager")
        }
    };
    let s = open(&url).await;
    let km = start(s.clone()).await;
    let first = serde_json::to_value(km.jwks()).expect("jwks");
    assert_eq!(s.load_keys().await.expect("keys").len(), 1);
    s.close().await;
    // A new process on the same database publishes the same key.
    let s2 = open(&url).await;
    let km2 = start(s2.clone()).await;
    assert_eq!(serde_json::to_value(km2.jwks()).expect("jwks"), first);
    km2.rotate_keys().await.expect("rotate");
    let keys = s2.load_keys().await.expect("keys");
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().any(|k| k.retired_at.is_some()), "{keys:?}");
    s2.delete_key(&keys[0].kid).await.expect("delete");
    assert_eq!(s2.load_keys().await.expect("keys").len(), 1);
}

async fn api_keys(url: String) {
    let s = open(&url).await;
    let a = app(&s, "shop").await;
    let v0 = s.current_version().await.expect("version");
    let mut tx = s.begin_write().await.expect("begin");
    let k = tx
        .create_api_key(&a.id, "ci", "PRODUCTION", &"ab".repeat(32), &[], None)
        .await
        .expect("create");
    let _old = tx
        .create_api_key(&a.id, "old", "PRODUCTION", &"cd".repeat(32), &[], Some(10))
        .await
        .expect("create");
    tx.commit("alice", "keys").await.expect("commit");
    assert!(s.current_version().await.expect("version") > v0);
    assert_eq!(s.api_keys(&a.id).await.expect("list").len(), 2);
    let live = s.all_api_keys(1000).await.expect("all");
    assert_eq!(live.len(), 1, "expired keys are not shipped");
    assert_eq!(
        (live[0].key.id.as_str(), live[0].owner.as_str()),
        (k.id.as_str(), "alice")
    );
    let mut tx = s.begin_write().await.expect("begin");
    tx.delete_api_key(&a.id, &k.id).await.expect("delete");
    assert!(matches!(
        tx.delete_api_key(&a.id, &k.id).await,
        Err(StoreError::NotFound(_))
    ));
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    clients_and_users,
    refresh_rotation,
    concurrent_refresh_has_one_winner,
    opaque_and_revocations,
    signing_keys_survive_restart,
    api_keys,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keymanager_store_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keymanager_store_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
