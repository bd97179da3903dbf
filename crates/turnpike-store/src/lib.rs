//! The control plane's truth in SQL: users and roles, APIs (versions, lifecycle, endpoints,
//! resources, offered tiers, definitions), applications, subscriptions, tiers, and a change
//! log whose counter is the snapshot version. One code path over sqlx's `Any` driver serves
//! SQLite (embedded, WAL) and PostgreSQL. Must not depend on HTTP, the admin API or the
//! gateway. It implements the key manager's store traits (`km.rs`; depending on
//! `turnpike-keymanager` for those types only).
//!
//! Writes go through [`Store::begin_write`]: one writer at a time in this process (SQLite
//! allows no more, and it keeps version numbers dense), every write transaction bumps the
//! version and appends to the change log before it commits, and subscribers of
//! [`Store::watch_version`] learn the new version after the commit. On PostgreSQL several
//! control planes share the database: writes are serial across them too, each learns the
//! others' versions, and one at a time writes derived state (`cluster.rs`).

mod ai_prices;
mod analytics;
mod apis;
mod apps;
mod audit;
mod backup;
mod bulk;
mod cluster;
mod dcr;
mod documents;
mod km;
mod mcp_audit;
mod migrate;
pub mod model;
mod oauth;
mod outage;
mod settings;
mod snapshot_reads;
mod tiers;
mod users;

use std::str::FromStr;
use std::sync::Arc;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, Executor, Transaction};
use tokio::sync::{watch, Mutex, MutexGuard};

pub use analytics::{AnalyticsRetention, Compacted, RollupFilter};
pub use apis::ApiFilter;
pub use audit::{AuditEntry, AuditFilter, NamedObject, MAX_OBJECT_LOOKUPS};
pub use backup::{backup_sqlite, check_turnpike, restore_sqlite, sqlite_path, BackupError};
pub use bulk::{bulk_app_id, bulk_subscription, BulkSpec};
pub use cluster::{GatewayContact, GatewayRow, Maintenance, MAX_GATEWAYS, VERSION_POLL};
pub use documents::ApiDocument;
pub use mcp_audit::McpAuditFilter;
pub use migrate::{migrations, MigrationInfo, MigrationStatus};
pub use model::*;
pub use oauth::{ApiKey, ApiKeyGrant, OAuthClient, OAuthClientInput};
pub use outage::{Outage, StoreOptions};
pub use snapshot_reads::SubscriptionRow;
pub use users::{PasswordParams, ROLES};

/// Which SQL engine the store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the resource changed since it was read (revision mismatch)")]
    PreconditionFailed,
    #[error("unsupported database URL {0:?}: use sqlite://PATH or postgres://...")]
    BadUrl(String),
    #[error("password hashing failed: {0}")]
    Hash(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

impl StoreError {
    /// Whether the database refused the write because of a unique constraint.
    fn is_unique_violation(e: &sqlx::Error) -> bool {
        match e {
            sqlx::Error::Database(d) => {
                matches!(d.kind(), sqlx::error::ErrorKind::UniqueViolation)
                    || matches!(d.code().as_deref(), Some("23505" | "2067" | "1555"))
            }
            _ => false,
        }
    }
}

/// The store: a pool, the single-writer lock and the version watch.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    pool: AnyPool,
    backend: Backend,
    /// The database URL: the version listener and the leader open their own sessions.
    url: String,
    /// PostgreSQL: the session holding the leader advisory lock (`cluster.rs`).
    leader: Mutex<Option<sqlx::AnyConnection>>,
    writer: Mutex<()>,
    version: watch::Sender<u64>,
    password: PasswordParams,
    /// A hash of no one's password with `password`'s cost, verified for unknown users so
    /// that they take as long as known ones (no user enumeration by timing).
    dummy_hash: tokio::sync::OnceCell<String>,
    /// SQLite's `max_page_count` for new connections, 0 for none: tests simulate a full
    /// disk with it (`outage.rs`); only the test harness sets it.
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    page_cap: Arc<std::sync::atomic::AtomicU64>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A random identifier: 32 lowercase hex characters.
pub fn new_id() -> String {
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The database URL without a password (for logs and messages).
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}://{user}@{}", &url[..s], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// Which engine a URL names, and the URL sqlx is given (SQLite files are created).
fn parse_url(url: &str) -> Result<(Backend, String), StoreError> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = if path.contains("mode=") {
            url.to_string()
        } else {
            format!("{url}{sep}mode=rwc")
        };
        Ok((Backend::Sqlite, url))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok((Backend::Postgres, url.to_string()))
    } else {
        Err(StoreError::BadUrl(url.to_string()))
    }
}

/// A pool on `url` with the store's connection settings; no migration.
async fn connect(
    url: &str,
    options: &StoreOptions,
    page_cap: Arc<std::sync::atomic::AtomicU64>,
) -> Result<(AnyPool, Backend), StoreError> {
    sqlx::any::install_default_drivers();
    let (backend, url) = parse_url(url)?;
    let opts = AnyConnectOptions::from_str(&url)?;
    let cap = page_cap;
    let pool = AnyPoolOptions::new()
        .max_connections(match backend {
            Backend::Sqlite => 4,
            Backend::Postgres => 8,
        })
        // A database that is down fails a request in seconds (503), not after
        // sqlx's default 30 s.
        .acquire_timeout(options.acquire_timeout)
        .after_connect(move |conn, _meta| {
            let cap = cap.load(std::sync::atomic::Ordering::Relaxed);
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    conn.execute("PRAGMA foreign_keys = ON").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    if cap > 0 {
                        conn.execute(&*format!("PRAGMA max_page_count = {cap}"))
                            .await?;
                    }
                }
                Ok(())
            })
        })
        .after_release(|conn, _meta| Box::pin(outage::reusable(conn)))
        .connect_with(opts)
        .await?;
    Ok((pool, backend))
}

/// What opening `url` would migrate, read without writing: `turnpike migrate --check`.
/// A SQLite file that does not exist yet is a database at version 0 (and is not created).
pub async fn migration_status(url: &str) -> Result<MigrationStatus, StoreError> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let file = path.split('?').next().unwrap_or(path);
        if !std::path::Path::new(file).exists() {
            return Ok(migrate::status_of(&[]));
        }
        let ro = format!("sqlite://{file}?mode=ro");
        let (pool, backend) = connect(&ro, &StoreOptions::default(), Arc::default()).await?;
        let status = migrate::status(&pool, backend).await;
        pool.close().await;
        return status;
    }
    let (pool, backend) = connect(url, &StoreOptions::default(), Arc::default()).await?;
    let status = migrate::status(&pool, backend).await;
    pool.close().await;
    status
}

impl Store {
    /// Opens (creating if needed) the database at `url` (`sqlite://PATH` or
    /// `postgres://...`), applies migrations and seeds the default tiers.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        Self::open_with(url, PasswordParams::default()).await
    }

    /// As [`Store::open`], with explicit password-hashing cost (tests use a cheap one).
    pub async fn open_with(url: &str, password: PasswordParams) -> Result<Store, StoreError> {
        Self::open_with_options(
            url,
            StoreOptions {
                password,
                ..StoreOptions::default()
            },
        )
        .await
    }

    /// As [`Store::open`], with every option.
    pub async fn open_with_options(url: &str, options: StoreOptions) -> Result<Store, StoreError> {
        let page_cap = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (pool, backend) = connect(url, &options, page_cap.clone()).await?;
        if backend == Backend::Sqlite {
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&pool)
                .await?;
        }
        migrate::run(&pool, backend).await?;
        let (version, _) = watch::channel(0);
        let store = Store {
            inner: Arc::new(Inner {
                pool,
                backend,
                url: url.to_string(),
                leader: Mutex::new(None),
                writer: Mutex::new(()),
                version,
                password: options.password,
                dummy_hash: tokio::sync::OnceCell::new(),
                page_cap,
            }),
        };
        let v = store.current_version().await?;
        store.inner.version.send_replace(v);
        cluster::follow_versions(&store);
        tiers::seed_defaults(&store).await?;
        Ok(store)
    }

    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.inner.pool
    }

    pub(crate) fn password_params(&self) -> &PasswordParams {
        &self.inner.password
    }

    /// The last committed version, read from the database.
    pub async fn current_version(&self) -> Result<u64, StoreError> {
        let v: i64 = sqlx::query_scalar("SELECT value FROM meta WHERE key = 'version'")
            .fetch_one(self.pool())
            .await?;
        Ok(v.max(0) as u64)
    }

    /// A receiver that sees every version this process commits and, on PostgreSQL, every
    /// version other control planes commit (within [`VERSION_POLL`], usually at once).
    pub fn watch_version(&self) -> watch::Receiver<u64> {
        self.inner.version.subscribe()
    }

    /// Starts the one write transaction of this process; waits for any other to finish.
    pub async fn begin_write(&self) -> Result<WriteTx<'_>, StoreError> {
        let guard = self.inner.writer.lock().await;
        let tx = self.begin_locked().await?;
        Ok(WriteTx {
            store: self,
            tx,
            _guard: guard,
        })
    }

    /// A transaction for a caller holding the writer lock.
    async fn begin_locked(&self) -> Result<Transaction<'static, Any>, StoreError> {
        // SQLite: take the write lock at BEGIN, where the busy timeout applies. A
        // deferred BEGIN's first write must upgrade its lock and fails at once with
        // "database is locked" while the connection of a just-dropped write transaction
        // is still rolling back (sqlx rolls back on drop in the background).
        Ok(match self.inner.backend {
            Backend::Sqlite => self.inner.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => {
                // Other control planes write too: one writer at a time across all of them.
                let mut tx = self.inner.pool.begin().await?;
                cluster::lock_version_row(&mut tx).await?;
                tx
            }
        })
    }

    /// Runs `f` while holding the writer lock, so no commit happens meanwhile: used to read a
    /// consistent view (the snapshot) together with its version.
    pub async fn read_consistent(&self) -> MutexGuard<'_, ()> {
        self.inner.writer.lock().await
    }

    pub async fn close(&self) {
        self.inner.pool.close().await;
    }
}

/// A write transaction: operations are methods; [`WriteTx::commit`] bumps the version.
/// After an operation fails, drop the transaction (PostgreSQL aborts it on any error).
pub struct WriteTx<'a> {
    store: &'a Store,
    tx: Transaction<'static, Any>,
    _guard: MutexGuard<'a, ()>,
}

impl WriteTx<'_> {
    pub(crate) fn conn(&mut self) -> &mut sqlx::AnyConnection {
        &mut self.tx
    }

    /// Records `summary` by `actor` in the change log, bumps the version and commits;
    /// returns the new version. Dropping a `WriteTx` without committing rolls back.
    pub async fn commit(mut self, actor: &str, summary: &str) -> Result<u64, StoreError> {
        sqlx::query("UPDATE meta SET value = value + 1 WHERE key = 'version'")
            .execute(&mut *self.tx)
            .await?;
        let v: i64 = sqlx::query_scalar("SELECT value FROM meta WHERE key = 'version'")
            .fetch_one(&mut *self.tx)
            .await?;
        sqlx::query(
            "INSERT INTO change_log (version, at_ms, actor, summary) VALUES ($1, $2, $3, $4)",
        )
        .bind(v)
        .bind(now_ms())
        .bind(actor)
        .bind(summary)
        .execute(&mut *self.tx)
        .await?;
        if self.store.inner.backend == Backend::Postgres {
            cluster::notify(&mut self.tx, v).await?;
        }
        self.tx.commit().await?;
        let v = v.max(0) as u64;
        self.store
            .inner
            .version
            .send_if_modified(|cur| std::mem::replace(cur, v.max(*cur)) < v);
        Ok(v)
    }
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern and wraps it in `%`.
pub(crate) fn like_pattern(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

#[cfg(feature = "test-support")]
pub mod testing;
