//! Schema migrations, applied in order at start inside one transaction each. Owns the DDL
//! for both dialects; everything else in the crate writes portable SQL.

use sqlx::AnyPool;

use crate::{Backend, StoreError};

/// One migration: a version, a name, and its SQL for each dialect, statements separated
/// by `separator` (`;` unless a statement holds `;` itself, as trigger bodies do).
struct Migration {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
    separator: &'static str,
}

const CORE: &str = r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO meta (key, value) VALUES ('version', 1);
CREATE TABLE roles (name TEXT PRIMARY KEY, description TEXT NOT NULL);
INSERT INTO roles (name, description) VALUES ('admin', 'manages tiers, users and everything else');
INSERT INTO roles (name, description) VALUES ('publisher', 'creates, versions and publishes APIs');
INSERT INTO roles (name, description) VALUES ('subscriber', 'creates applications and subscribes to APIs');
CREATE TABLE users (
  name TEXT PRIMARY KEY,
  password_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE user_roles (
  user_name TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
  role TEXT NOT NULL REFERENCES roles(name),
  PRIMARY KEY (user_name, role)
);
CREATE TABLE apis (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  context TEXT NOT NULL,
  version TEXT NOT NULL,
  is_default BIGINT NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  api_type TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  endpoints TEXT NOT NULL,
  resources TEXT NOT NULL,
  tiers TEXT NOT NULL,
  definition TEXT,
  provider TEXT NOT NULL,
  revision BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (context, version)
);
CREATE INDEX apis_state ON apis (state);
CREATE TABLE tiers (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  request_count BIGINT,
  unit_seconds BIGINT NOT NULL,
  revision BIGINT NOT NULL,
  PRIMARY KEY (kind, name)
);
CREATE TABLE applications (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  tier TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  revision BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (owner, name)
);
CREATE TABLE subscriptions (
  id TEXT PRIMARY KEY,
  application_id TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  api_id TEXT NOT NULL REFERENCES apis(id) ON DELETE CASCADE,
  tier TEXT NOT NULL,
  state TEXT NOT NULL,
  revision BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (application_id, api_id)
);
CREATE INDEX subscriptions_api ON subscriptions (api_id);
CREATE TABLE change_log (
  version BIGINT PRIMARY KEY,
  at_ms BIGINT NOT NULL,
  actor TEXT NOT NULL,
  summary TEXT NOT NULL
)
"#;

/// The key manager's tables: OAuth2 clients (one per application and key type, secret as
/// an argon2 PHC string), refresh tokens (SHA-256 hex, with families), opaque access
/// tokens (SHA-256 hex), revoked token ids, signing keys, and API keys (SHA-256 hex).
const OAUTH: &str = r#"
CREATE TABLE oauth_clients (
  client_id TEXT PRIMARY KEY,
  application_id TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  key_type TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  grant_types TEXT NOT NULL,
  scopes TEXT NOT NULL,
  token_format TEXT NOT NULL,
  access_ttl_s BIGINT NOT NULL,
  refresh_ttl_s BIGINT NOT NULL,
  audience TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (application_id, key_type)
);
CREATE TABLE oauth_refresh (
  hash TEXT PRIMARY KEY,
  family TEXT NOT NULL,
  client_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  username TEXT,
  scopes TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  used BIGINT NOT NULL DEFAULT 0,
  access_jti TEXT NOT NULL,
  access_expires_at BIGINT NOT NULL
);
CREATE INDEX oauth_refresh_family ON oauth_refresh (family);
CREATE TABLE oauth_opaque (
  hash TEXT PRIMARY KEY,
  jti TEXT NOT NULL,
  client_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  username TEXT,
  scopes TEXT NOT NULL,
  audience TEXT NOT NULL,
  issued_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE oauth_revoked (
  jti TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL
);
CREATE TABLE oauth_keys (
  kid TEXT PRIMARY KEY,
  alg TEXT NOT NULL,
  private_der TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  retired_at BIGINT
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  application_id TEXT NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  key_type TEXT NOT NULL,
  sha256 TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT
);
CREATE INDEX api_keys_app ON api_keys (application_id)
"#;

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "core",
        separator: ";",
        sqlite: CORE,
        postgres: CORE,
    },
    Migration {
        version: 2,
        name: "oauth",
        separator: ";",
        sqlite: OAUTH,
        postgres: OAUTH,
    },
    Migration {
        version: 3,
        name: "api_security",
        separator: ";",
        sqlite: API_SECURITY,
        postgres: API_SECURITY,
    },
    Migration {
        version: 4,
        name: "subscription_changes",
        separator: "\n/\n",
        sqlite: SUBSCRIPTION_CHANGES_SQLITE,
        postgres: SUBSCRIPTION_CHANGES_POSTGRES,
    },
    Migration {
        version: 5,
        name: "subscription_log",
        separator: "\n/\n",
        sqlite: SUBSCRIPTION_LOG_SQLITE,
        postgres: SUBSCRIPTION_LOG_POSTGRES,
    },
    Migration {
        version: 6,
        name: "account_status",
        separator: ";",
        sqlite: ACCOUNT_STATUS,
        postgres: ACCOUNT_STATUS,
    },
    Migration {
        version: 7,
        name: "options",
        separator: ";",
        sqlite: OPTIONS,
        postgres: OPTIONS,
    },
    Migration {
        version: 8,
        name: "analytics",
        separator: ";",
        sqlite: ANALYTICS,
        postgres: ANALYTICS,
    },
    Migration {
        version: 9,
        name: "sandbox_endpoints",
        separator: ";",
        sqlite: SANDBOX_ENDPOINTS,
        postgres: SANDBOX_ENDPOINTS,
    },
    Migration {
        version: 10,
        name: "cluster",
        separator: ";",
        sqlite: crate::cluster::CLUSTER_SQL,
        postgres: crate::cluster::CLUSTER_SQL,
    },
    Migration {
        version: 11,
        name: "ai_usage",
        separator: ";",
        sqlite: AI_USAGE,
        postgres: AI_USAGE,
    },
    Migration {
        version: 12,
        name: "mcp_audit",
        separator: ";",
        sqlite: MCP_AUDIT,
        postgres: MCP_AUDIT,
    },
];

/// The audit trail of MCP tool calls (`mcp_audit.rs`, issue 31): one row per audited
/// call, its arguments redacted by the gateway; empty texts for what a call lacked.
const MCP_AUDIT: &str = r#"
CREATE TABLE mcp_audit (
  at_ms BIGINT NOT NULL,
  request_id TEXT NOT NULL,
  gateway TEXT NOT NULL,
  api_name TEXT NOT NULL,
  api_context TEXT NOT NULL,
  api_version TEXT NOT NULL,
  tool TEXT NOT NULL,
  application_id TEXT NOT NULL,
  application_name TEXT NOT NULL,
  subject TEXT NOT NULL,
  session_id TEXT NOT NULL,
  arguments TEXT NOT NULL,
  truncated BIGINT NOT NULL,
  outcome TEXT NOT NULL,
  code TEXT NOT NULL,
  status BIGINT NOT NULL,
  latency_us BIGINT NOT NULL
);
CREATE INDEX mcp_audit_time ON mcp_audit (at_ms);
CREATE INDEX mcp_audit_api ON mcp_audit (api_context, api_version, at_ms)
"#;

/// AI (LLM) API calls in the rollups: provider and model in the key, tokens summed, the
/// time to first token as a histogram (issue 30); and the price table the cost reports
/// read (`ai_prices.rs`): USD per million tokens, in millionths of a dollar.
const AI_USAGE: &str = r#"
ALTER TABLE analytics_rollups ADD COLUMN provider TEXT NOT NULL DEFAULT '';
ALTER TABLE analytics_rollups ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE analytics_rollups ADD COLUMN prompt_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE analytics_rollups ADD COLUMN completion_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE analytics_rollups ADD COLUMN cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE analytics_rollups ADD COLUMN lat_ttft TEXT NOT NULL DEFAULT '';
CREATE INDEX analytics_rollups_model ON analytics_rollups (model, bucket);
CREATE TABLE ai_prices (
  model TEXT PRIMARY KEY,
  input_micro_usd BIGINT NOT NULL,
  output_micro_usd BIGINT NOT NULL,
  cached_input_micro_usd BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
)
"#;

/// Where an API's SANDBOX-key calls go (a JSON array of URLs, like `endpoints`); APIs
/// created before have none, and their sandbox calls are refused, not sent to production.
const SANDBOX_ENDPOINTS: &str = r#"
ALTER TABLE apis ADD COLUMN sandbox_endpoints TEXT NOT NULL DEFAULT '[]'
"#;

/// Analytics rollups (`analytics.rs`): one row per period (60, 3600 or 86400 seconds),
/// bucket start and key, with sums and latency histograms (`index:count,...` text).
/// No primary key: rows of the same key add up when read, so ingest is insert-only.
const ANALYTICS: &str = r#"
CREATE TABLE analytics_rollups (
  period BIGINT NOT NULL,
  bucket BIGINT NOT NULL,
  gateway TEXT NOT NULL,
  api_name TEXT NOT NULL,
  api_context TEXT NOT NULL,
  api_version TEXT NOT NULL,
  resource TEXT NOT NULL,
  method TEXT NOT NULL,
  application_id TEXT NOT NULL,
  application_name TEXT NOT NULL,
  status_class BIGINT NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL,
  requests BIGINT NOT NULL,
  errors BIGINT NOT NULL,
  throttled BIGINT NOT NULL,
  cache_hits BIGINT NOT NULL,
  bytes_in BIGINT NOT NULL,
  bytes_out BIGINT NOT NULL,
  lat_total TEXT NOT NULL,
  lat_gateway TEXT NOT NULL,
  lat_upstream TEXT NOT NULL,
  lat_before TEXT NOT NULL,
  lat_after TEXT NOT NULL
);
CREATE INDEX analytics_rollups_time ON analytics_rollups (bucket, period);
CREATE INDEX analytics_rollups_api ON analytics_rollups (api_context, api_version, bucket);
CREATE INDEX analytics_rollups_app ON analytics_rollups (application_id, bucket)
"#;

/// What the declarative file can say beyond the first columns, as JSON objects: an API's
/// gateway settings (host, load balancing, body limit, timeouts, its advanced policy) and
/// a tier's bandwidth, burst, billing and conditional groups; and the control plane's own
/// settings (self sign-up, gateway environments), one JSON value per key; an OAuth2
/// client's callback URL; APIs' documents (markdown).
const OPTIONS: &str = r#"
ALTER TABLE apis ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE tiers ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
ALTER TABLE oauth_clients ADD COLUMN callback_url TEXT;
CREATE TABLE api_documents (
  id TEXT PRIMARY KEY,
  api_id TEXT NOT NULL REFERENCES apis(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  summary TEXT NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  revision BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (api_id, name)
)
"#;

/// Users and applications can be disabled (and users await approval after a self
/// sign-up): an application works only while it and its owner are `ACTIVE`.
const ACCOUNT_STATUS: &str = r#"
ALTER TABLE users ADD COLUMN status TEXT NOT NULL DEFAULT 'ACTIVE';
ALTER TABLE applications ADD COLUMN status TEXT NOT NULL DEFAULT 'ACTIVE';
CREATE INDEX applications_status ON applications (status)
"#;

/// Which APIs' subscriptions changed, in order (`Store::subscription_log_since`): the
/// snapshot builder rereads only those APIs' rows, and prunes what it has read. Kept by
/// triggers like the counter; PostgreSQL logs each API once per statement.
const SUBSCRIPTION_LOG_SQLITE: &str = r#"
CREATE TABLE subscription_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, api_id TEXT NOT NULL)
/
CREATE TRIGGER subscriptions_logged_ins AFTER INSERT ON subscriptions BEGIN INSERT INTO subscription_log (api_id) VALUES (NEW.api_id); END
/
CREATE TRIGGER subscriptions_logged_upd AFTER UPDATE ON subscriptions BEGIN INSERT INTO subscription_log (api_id) VALUES (NEW.api_id); INSERT INTO subscription_log (api_id) SELECT OLD.api_id WHERE OLD.api_id <> NEW.api_id; END
/
CREATE TRIGGER subscriptions_logged_del AFTER DELETE ON subscriptions BEGIN INSERT INTO subscription_log (api_id) VALUES (OLD.api_id); END
"#;

const SUBSCRIPTION_LOG_POSTGRES: &str = r#"
CREATE TABLE subscription_log (seq BIGSERIAL PRIMARY KEY, api_id TEXT NOT NULL)
/
CREATE FUNCTION turnpike_subscriptions_logged() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO subscription_log (api_id) SELECT DISTINCT api_id FROM changed; RETURN NULL; END $$
/
CREATE TRIGGER subscriptions_logged_ins AFTER INSERT ON subscriptions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION turnpike_subscriptions_logged()
/
CREATE TRIGGER subscriptions_logged_upd_new AFTER UPDATE ON subscriptions REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION turnpike_subscriptions_logged()
/
CREATE TRIGGER subscriptions_logged_upd_old AFTER UPDATE ON subscriptions REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION turnpike_subscriptions_logged()
/
CREATE TRIGGER subscriptions_logged_del AFTER DELETE ON subscriptions REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION turnpike_subscriptions_logged()
"#;

/// A counter that every write to `subscriptions` moves, cascades from deleted APIs and
/// applications included, so the snapshot builder rereads a million subscriptions only
/// when one of them changed (`Store::subscription_changes`). A trigger rather than code
/// in each write: no write path can forget it. SQLite has row triggers only (one counter
/// update per row, about a second per million rows in a bulk load); PostgreSQL moves it
/// once per statement.
const SUBSCRIPTION_CHANGES_SQLITE: &str = r#"
INSERT INTO meta (key, value) VALUES ('subscription_changes', 0)
/
CREATE TRIGGER subscriptions_inserted AFTER INSERT ON subscriptions BEGIN UPDATE meta SET value = value + 1 WHERE key = 'subscription_changes'; END
/
CREATE TRIGGER subscriptions_updated AFTER UPDATE ON subscriptions BEGIN UPDATE meta SET value = value + 1 WHERE key = 'subscription_changes'; END
/
CREATE TRIGGER subscriptions_deleted AFTER DELETE ON subscriptions BEGIN UPDATE meta SET value = value + 1 WHERE key = 'subscription_changes'; END
"#;

const SUBSCRIPTION_CHANGES_POSTGRES: &str = r#"
INSERT INTO meta (key, value) VALUES ('subscription_changes', 0)
/
CREATE FUNCTION turnpike_subscriptions_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE meta SET value = value + 1 WHERE key = 'subscription_changes'; RETURN NULL; END $$
/
CREATE TRIGGER subscriptions_changed AFTER INSERT OR UPDATE OR DELETE ON subscriptions FOR EACH STATEMENT EXECUTE FUNCTION turnpike_subscriptions_changed()
"#;

/// Which credentials each API accepts (`turnpike_model::security::ApiAuthSpec` as JSON);
/// no row means the default (OAuth2 and a subscription required, as in WSO2).
const API_SECURITY: &str = r#"
CREATE TABLE api_security (
  api_id TEXT PRIMARY KEY REFERENCES apis(id) ON DELETE CASCADE,
  auth TEXT NOT NULL
)
"#;

/// One migration as a reader sees it: what `turnpike migrate --check` lists and what the
/// upgrade tests iterate over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationInfo {
    pub version: i64,
    pub name: &'static str,
}

/// Every migration this binary knows, oldest first.
pub fn migrations() -> Vec<MigrationInfo> {
    MIGRATIONS
        .iter()
        .map(|m| MigrationInfo {
            version: m.version,
            name: m.name,
        })
        .collect()
}

/// What an upgrade of one database would do (read only: nothing is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// The newest migration applied to the database (0: none, or no database yet).
    pub current: i64,
    /// The newest migration this binary knows.
    pub head: i64,
    /// Migrations a start (or `turnpike migrate`) would apply, oldest first.
    pub pending: Vec<MigrationInfo>,
    /// Versions applied to the database that this binary does not know: the database was
    /// migrated by a newer release (a rollback needs the backup taken before the upgrade).
    pub unknown: Vec<i64>,
}

impl MigrationStatus {
    /// True when the database is exactly at this binary's head.
    pub fn up_to_date(&self) -> bool {
        self.pending.is_empty() && self.unknown.is_empty()
    }
}

/// Reads which migrations are applied, without creating the table or writing anything.
pub(crate) async fn status(
    pool: &AnyPool,
    backend: Backend,
) -> Result<MigrationStatus, StoreError> {
    let exists_sql = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
        }
    };
    let exists: i64 = sqlx::query_scalar(exists_sql).fetch_one(pool).await?;
    let applied: Vec<i64> = match exists {
        0 => Vec::new(),
        _ => {
            sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
                .fetch_all(pool)
                .await?
        }
    };
    Ok(status_of(&applied))
}

pub(crate) fn status_of(applied: &[i64]) -> MigrationStatus {
    let current = applied.iter().copied().max().unwrap_or(0);
    MigrationStatus {
        current,
        head: MIGRATIONS.last().map_or(0, |m| m.version),
        pending: migrations()
            .into_iter()
            .filter(|m| m.version > current)
            .collect(),
        unknown: applied
            .iter()
            .copied()
            .filter(|v| !MIGRATIONS.iter().any(|m| m.version == *v))
            .collect(),
    }
}

/// Applies every migration newer than the database's.
pub(crate) async fn run(pool: &AnyPool, backend: Backend) -> Result<(), StoreError> {
    // Control planes starting together on one PostgreSQL: one migrates, the others wait
    // and then find nothing left to do.
    let mut held = match backend {
        Backend::Postgres => {
            let mut conn = pool.acquire().await?;
            sqlx::query("SELECT pg_advisory_lock($1)")
                .bind(crate::cluster::MIGRATE_KEY)
                .execute(&mut *conn)
                .await?;
            Some(conn)
        }
        Backend::Sqlite => None,
    };
    let done = run_to(pool, backend, i64::MAX).await;
    if let Some(conn) = held.as_mut() {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(crate::cluster::MIGRATE_KEY)
            .execute(&mut **conn)
            .await?;
    }
    done
}

/// Applies the migrations newer than the database's, up to `target` included (the
/// upgrade tests stop at each older schema to put rows in it).
pub(crate) async fn run_to(
    pool: &AnyPool,
    backend: Backend,
    target: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .execute(pool)
    .await?;
    let current: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM schema_migrations")
        .fetch_one(pool)
        .await?;
    let current = current.unwrap_or(0);
    if let Some(newest) = MIGRATIONS.last().filter(|m| m.version < current) {
        tracing::warn!(
            database = current,
            binary = newest.version,
            "store: the database schema is newer than this binary (a rollback without restoring the backup); new columns and tables are left alone"
        );
    }
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > current && m.version <= target)
    {
        apply(pool, backend, m).await?;
    }
    Ok(())
}

/// One migration in its own transaction, recorded in `schema_migrations`.
async fn apply(pool: &AnyPool, backend: Backend, m: &Migration) -> Result<(), StoreError> {
    let sql = match backend {
        Backend::Sqlite => m.sqlite,
        Backend::Postgres => m.postgres,
    };
    let mut tx = pool.begin().await?;
    for stmt in sql
        .split(m.separator)
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        sqlx::query(stmt).execute(&mut *tx).await?;
    }
    sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
        .bind(m.version)
        .bind(m.name)
        .bind(crate::now_ms())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(
        version = m.version,
        name = m.name,
        "store: migration applied"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lists_what_is_pending_and_what_is_unknown() {
        let head = MIGRATIONS.last().map_or(0, |m| m.version);
        let fresh = status_of(&[]);
        assert_eq!((fresh.current, fresh.head), (0, head));
        assert_eq!(fresh.pending.len(), MIGRATIONS.len());
        let at_two = status_of(&[1, 2]);
        assert_eq!(at_two.pending.first().map(|m| m.version), Some(3));
        assert!(!at_two.up_to_date());
        let all: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert!(status_of(&all).up_to_date());
        let newer = status_of(&[&all[..], &[head + 1]].concat());
        assert_eq!(newer.unknown, vec![head + 1]);
        assert!(newer.pending.is_empty() && !newer.up_to_date());
    }

    #[test]
    fn versions_increase() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
    }
}
