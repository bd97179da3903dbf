//! Upgrades with data in them, on SQLite and on a real PostgreSQL the harness starts: for
//! every migration N this binary knows (read from `turnpike_store::migrations()`, so a new
//! migration is covered without touching this file), a fresh database is migrated to N
//! only (an older release's schema), filled with the rows that release could write (the
//! seeds of every version up to N), then opened with `Store::open`, which migrates it to
//! the head. Every row must survive (checked by SQL and through the store's own reads),
//! the version counter gateways follow must not move, and the store must keep working
//! (a write commits on the upgraded database). `migration_status` is checked before
//! (what is pending) and after (nothing).

use turnpike_model::resilience::EndpointSpec;
use turnpike_store::testing::{migrate_to, TestDbs};
use turnpike_store::*;

/// Rows an older release could write, by the migration that made them possible.
struct Seed {
    version: i64,
    rows: &'static [&'static str],
    /// `SELECT COUNT(*) ...` queries that must each find exactly one row after the upgrade.
    checks: &'static [&'static str],
}

const SEEDS: &[Seed] = &[
    Seed {
        version: 1,
        rows: &[
            "UPDATE meta SET value = 7 WHERE key = 'version'",
            "INSERT INTO users (name, password_hash, created_at) VALUES ('carol', '$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA', 1000)",
            "INSERT INTO user_roles (user_name, role) VALUES ('carol', 'publisher')",
            "INSERT INTO apis (id, name, context, version, is_default, state, api_type, description, endpoints, resources, tiers, definition, provider, revision, created_at, updated_at) VALUES ('up-api-1', 'Pets', '/pets', 'v1', 1, 'PUBLISHED', 'HTTP', 'old pets', '[\"http://127.0.0.1:9000\"]', '[{\"path\":\"/*\",\"methods\":[\"GET\"]}]', '[\"Gold\"]', NULL, 'carol', 3, 1000, 2000)",
            "INSERT INTO tiers (kind, name, description, request_count, unit_seconds, revision) VALUES ('subscription', 'Legacy', 'from release 1', 42, 60, 1)",
            "INSERT INTO applications (id, name, owner, tier, description, revision, created_at) VALUES ('up-app-1', 'Mobile', 'carol', 'Unlimited', '', 1, 1000)",
            "INSERT INTO subscriptions (id, application_id, api_id, tier, state, revision, created_at) VALUES ('up-sub-1', 'up-app-1', 'up-api-1', 'Gold', 'ACTIVE', 1, 1000)",
            "INSERT INTO change_log (version, at_ms, actor, summary) VALUES (7, 1000, 'carol', 'seeded')",
        ],
        checks: &[
            "SELECT COUNT(*) FROM user_roles WHERE user_name = 'carol' AND role = 'publisher'",
            "SELECT COUNT(*) FROM tiers WHERE name = 'Legacy' AND request_count = 42",
            "SELECT COUNT(*) FROM change_log WHERE version = 7 AND summary = 'seeded'",
        ],
    },
    Seed {
        version: 2,
        rows: &[
            "INSERT INTO oauth_clients (client_id, application_id, key_type, secret_hash, grant_types, scopes, token_format, access_ttl_s, refresh_ttl_s, audience, created_at) VALUES ('client-up', 'up-app-1', 'PRODUCTION', 'x', '[\"client_credentials\"]', '[]', 'JWT', 3600, 86400, 'aud', 1000)",
            "INSERT INTO api_keys (id, application_id, name, key_type, sha256, scopes, created_at, expires_at) VALUES ('key-up', 'up-app-1', 'k1', 'PRODUCTION', 'abc123', '[]', 1000, NULL)",
            "INSERT INTO oauth_keys (kid, alg, private_der, created_at, retired_at) VALUES ('kid-up', 'RS256', 'ZGVy', 1000, NULL)",
            "INSERT INTO oauth_revoked (jti, expires_at) VALUES ('jti-up', 99999999999)",
        ],
        checks: &[
            "SELECT COUNT(*) FROM oauth_clients WHERE client_id = 'client-up' AND token_format = 'JWT'",
            "SELECT COUNT(*) FROM oauth_keys WHERE kid = 'kid-up'",
            "SELECT COUNT(*) FROM oauth_revoked WHERE jti = 'jti-up'",
        ],
    },
    Seed {
        version: 3,
        rows: &["INSERT INTO api_security (api_id, auth) VALUES ('up-api-1', '\"none\"')"],
        checks: &[],
    },
    Seed {
        version: 4,
        rows: &[
            "INSERT INTO applications (id, name, owner, tier, description, revision, created_at) VALUES ('up-app-4', 'Web', 'carol', 'Unlimited', '', 1, 1000)",
            "INSERT INTO subscriptions (id, application_id, api_id, tier, state, revision, created_at) VALUES ('up-sub-4', 'up-app-4', 'up-api-1', 'Gold', 'BLOCKED', 1, 1000)",
        ],
        checks: &["SELECT COUNT(*) FROM meta WHERE key = 'subscription_changes' AND value >= 1"],
    },
    Seed {
        version: 5,
        rows: &[
            "INSERT INTO applications (id, name, owner, tier, description, revision, created_at) VALUES ('up-app-5', 'Batch', 'carol', 'Unlimited', '', 1, 1000)",
            "INSERT INTO subscriptions (id, application_id, api_id, tier, state, revision, created_at) VALUES ('up-sub-5', 'up-app-5', 'up-api-1', 'Gold', 'ACTIVE', 1, 1000)",
        ],
        checks: &["SELECT COUNT(*) FROM (SELECT DISTINCT api_id FROM subscription_log WHERE api_id = 'up-api-1') t"],
    },
    Seed {
        version: 6,
        rows: &[
            "INSERT INTO users (name, password_hash, created_at, status) VALUES ('dave', 'x', 1000, 'PENDING')",
            "INSERT INTO applications (id, name, owner, tier, description, revision, created_at, status) VALUES ('up-app-6', 'Old', 'carol', 'Unlimited', '', 1, 1000, 'DISABLED')",
        ],
        checks: &["SELECT COUNT(*) FROM users WHERE name = 'dave' AND status = 'PENDING'"],
    },
    Seed {
        version: 7,
        rows: &[
            "INSERT INTO apis (id, name, context, version, is_default, state, api_type, description, endpoints, resources, tiers, definition, provider, revision, created_at, updated_at, options) VALUES ('up-api-7', 'Hosted', '/hosted', 'v2', 0, 'CREATED', 'HTTP', '', '[\"http://127.0.0.1:9001\"]', '[]', '[]', NULL, 'carol', 1, 1000, 1000, '{\"host\":\"api.example.com\"}')",
            "INSERT INTO settings (key, value) VALUES ('selfSignup', '{\"enabled\":true}')",
            "INSERT INTO api_documents (id, api_id, name, summary, content, revision, created_at) VALUES ('doc-up', 'up-api-1', 'Guide', '', '# hello', 1, 1000)",
            "UPDATE oauth_clients SET callback_url = 'https://app.example.com/cb' WHERE client_id = 'client-up'",
        ],
        checks: &[
            "SELECT COUNT(*) FROM settings WHERE key = 'selfSignup'",
            "SELECT COUNT(*) FROM oauth_clients WHERE callback_url = 'https://app.example.com/cb'",
        ],
    },
    Seed {
        version: 8,
        rows: &["INSERT INTO analytics_rollups (period, bucket, gateway, api_name, api_context, api_version, resource, method, application_id, application_name, status_class, outcome, reason, requests, errors, throttled, cache_hits, bytes_in, bytes_out, lat_total, lat_gateway, lat_upstream, lat_before, lat_after) VALUES (60, 600, 'gw', 'Pets', '/pets', 'v1', '/*', 'GET', 'up-app-1', 'Mobile', 2, 'success', '', 5, 0, 0, 0, 10, 20, '1:5', '1:5', '1:5', '1:5', '1:5')"],
        checks: &["SELECT COUNT(*) FROM analytics_rollups WHERE requests = 5 AND application_id = 'up-app-1'"],
    },
    Seed {
        version: 11,
        rows: &[
            "INSERT INTO analytics_rollups (period, bucket, gateway, api_name, api_context, api_version, resource, method, application_id, application_name, status_class, outcome, reason, requests, errors, throttled, cache_hits, bytes_in, bytes_out, lat_total, lat_gateway, lat_upstream, lat_before, lat_after, provider, model, prompt_tokens, completion_tokens, cached_tokens, lat_ttft) VALUES (60, 660, 'gw', 'Chat', '/ai', 'v1', '/chat/completions', 'POST', 'up-app-1', 'Mobile', 2, 'served', '', 1, 0, 0, 0, 10, 20, '1:1', '1:1', '1:1', '1:1', '1:1', 'openai', 'gpt-4o-mini', 7, 3, 0, '1:1')",
            "INSERT INTO ai_prices (model, input_micro_usd, output_micro_usd, cached_input_micro_usd, updated_at) VALUES ('up-model', 1000000, 2000000, 500000, 1000)",
        ],
        checks: &[
            "SELECT COUNT(*) FROM analytics_rollups WHERE model = 'gpt-4o-mini' AND prompt_tokens = 7",
            "SELECT COUNT(*) FROM ai_prices WHERE model = 'up-model'",
        ],
    },
];

fn seeds_up_to(version: i64) -> impl Iterator<Item = &'static Seed> {
    SEEDS.iter().filter(move |s| s.version <= version)
}

async fn fill(pool: &sqlx::AnyPool, version: i64) {
    for seed in seeds_up_to(version) {
        for row in seed.rows {
            sqlx::query(row).execute(pool).await.unwrap_or_else(|e| {
                panic!("seed of v{} at schema {version}: {e}\n{row}", seed.version)
            });
        }
    }
}

/// The rows of every seed up to `from`, read back after the upgrade.
async fn rows_survived(url: &str, store: &Store, from: i64) {
    let pool = migrate_to(url, i64::MAX).await;
    for seed in seeds_up_to(from) {
        for check in seed.checks {
            let n: i64 = sqlx::query_scalar(check)
                .fetch_one(&pool)
                .await
                .unwrap_or_else(|e| panic!("{check}: {e}"));
            assert_eq!(n, 1, "from schema {from}: {check}");
        }
    }
    pool.close().await;
    if from < 1 {
        return;
    }
    assert_eq!(store.current_version().await.expect("version"), 7);
    let api = store.get_api("up-api-1").await.expect("the v1 API");
    assert_eq!((api.name.as_str(), api.context.as_str()), ("Pets", "/pets"));
    assert_eq!(
        api.endpoints,
        vec![EndpointSpec::from("http://127.0.0.1:9000")]
    );
    assert_eq!(api.lifecycle_status, LifecycleState::Published);
    assert_eq!(
        store.user("carol").await.expect("carol").roles,
        ["publisher"]
    );
    let subs = store
        .list_subscriptions(None, Some("up-api-1"), 100, 0)
        .await
        .expect("subscriptions");
    let expected = seeds_up_to(from)
        .flat_map(|s| s.rows.iter())
        .filter(|r| r.starts_with("INSERT INTO subscriptions"))
        .count();
    assert_eq!(subs.total as usize, expected, "from schema {from}");
    if from >= 2 {
        let keys = store.api_keys("up-app-1").await.expect("keys");
        assert_eq!(keys.len(), 1);
    }
    if from >= 3 {
        let auth = store.api_security("up-api-1").await.expect("security");
        assert_eq!(auth.as_deref(), Some("\"none\""));
    }
    if from >= 6 {
        let app = store.get_application("up-app-6").await.expect("app");
        assert_eq!(app.status, AccountStatus::Disabled);
    }
    if from >= 7 {
        let api = store.get_api("up-api-7").await.expect("the v7 API");
        assert_eq!(
            api.options.get("host"),
            Some(&serde_json::json!("api.example.com"))
        );
        assert_eq!(
            store.api_documents("up-api-1").await.expect("docs").len(),
            1
        );
    }
}

/// The store still writes after the upgrade: a new API commits and moves the version.
async fn still_writes(store: &Store, from: i64) {
    let before = store.current_version().await.expect("version");
    let mut tx = store.begin_write().await.expect("begin");
    let input = ApiInput {
        name: "After".into(),
        context: "/after".into(),
        version: "v1".into(),
        is_default: false,
        api_type: "HTTP".into(),
        description: String::new(),
        endpoints: vec!["http://127.0.0.1:9002".into()],
        sandbox_endpoints: vec![],
        resources: Vec::new(),
        tiers: vec!["Gold".into()],
        definition: None,
        options: Default::default(),
    };
    tx.create_api(&input, "carol")
        .await
        .unwrap_or_else(|e| panic!("write after upgrading from {from}: {e}"));
    let v = tx.commit("carol", "after upgrade").await.expect("commit");
    assert_eq!(v, before + 1);
}

async fn upgrade_from_every_version(dbs: TestDbs) {
    let all = migrations();
    let head = all.last().map_or(0, |m| m.version);
    let froms = std::iter::once(0).chain(all.iter().map(|m| m.version));
    for from in froms {
        let url = dbs.fresh_url().await;
        let pool = migrate_to(&url, from).await;
        fill(&pool, from).await;
        pool.close().await;
        let before = migration_status(&url).await.expect("status");
        assert_eq!(before.current, from);
        assert_eq!(before.head, head);
        let pending: Vec<i64> = before.pending.iter().map(|m| m.version).collect();
        let expected: Vec<i64> = all
            .iter()
            .map(|m| m.version)
            .filter(|v| *v > from)
            .collect();
        assert_eq!(pending, expected, "pending from {from}");
        let store = Store::open_with(&url, PasswordParams::insecure_fast())
            .await
            .unwrap_or_else(|e| panic!("{}: upgrading from {from}: {e}", dbs.label()));
        assert!(migration_status(&url).await.expect("status").up_to_date());
        rows_survived(&url, &store, from).await;
        still_writes(&store, from).await;
        store.close().await;
    }
    eprintln!(
        "{}: upgraded from each of {} schema versions",
        dbs.label(),
        all.len() + 1
    );
}

#[tokio::test]
async fn sqlite_upgrades_from_every_schema_version_with_data() {
    upgrade_from_every_version(TestDbs::sqlite()).await;
}

#[tokio::test]
async fn postgres_upgrades_from_every_schema_version_with_data() {
    upgrade_from_every_version(TestDbs::postgres()).await;
}

#[tokio::test]
async fn status_of_a_missing_sqlite_file_creates_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("none.db");
    let url = format!("sqlite://{}", path.display());
    let s = migration_status(&url).await.expect("status");
    assert_eq!(s.current, 0);
    assert_eq!(s.pending.len(), migrations().len());
    assert!(!path.exists(), "--check must not create the database");
}
