//! Several control planes on one PostgreSQL: what each needs to learn from the others and
//! what only one of them may do.
//!
//! - **Versions**: every commit sends `NOTIFY turnpike_version` inside its transaction
//!   (delivered at commit); each store LISTENs and also reads the version every
//!   [`VERSION_POLL`] (a lost listener connection, a notification dropped during a
//!   reconnect), so [`Store::watch_version`] sees other processes' commits too.
//! - **Writes**: a write transaction locks the `meta` version row first (`FOR UPDATE`),
//!   so writes of all control planes are serial as within one process: versions stay
//!   dense and the subscription log's sequence follows commit order.
//! - **Leadership**: derived-state jobs (pruning, analytics compaction) run only in the
//!   store holding a session advisory lock on its own connection ([`Store::is_leader`]);
//!   the lock goes with the session, so a dead leader's successor takes over at its next
//!   check. SQLite has one control plane: it always leads.
//! - **Delta history** (`snapshot_manifests`) and **gateway status** (`gateway_status`)
//!   live in tables, so any control plane serves a delta against a version another built,
//!   and any lists every gateway.

use std::time::Duration;

use sqlx::{AnyConnection, Connection, Row};

use crate::{now_ms, Backend, Store, StoreError};

/// The schema this module reads and writes (migration 10).
pub(crate) const CLUSTER_SQL: &str = r#"
CREATE TABLE snapshot_manifests (
  version BIGINT PRIMARY KEY,
  hash TEXT NOT NULL,
  manifest TEXT NOT NULL,
  at_ms BIGINT NOT NULL
);
CREATE TABLE gateway_status (
  id TEXT PRIMARY KEY,
  version BIGINT NOT NULL,
  hash TEXT NOT NULL,
  last_contact_ms BIGINT NOT NULL,
  poll_wait_ms BIGINT NOT NULL,
  control_plane TEXT NOT NULL,
  convergence_ms BIGINT,
  apply_ms BIGINT,
  report TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO meta (key, value) VALUES ('subscription_log_pruned', 0)
"#;

/// The channel commits notify on.
const CHANNEL: &str = "turnpike_version";
/// How often the version is read even without a notification.
pub const VERSION_POLL: Duration = Duration::from_secs(1);
/// The advisory lock key of the derived-state writer ("turnpike" in ASCII, truncated).
const LEADER_KEY: i64 = 0x7475_726e_7069_6b65;
/// The advisory lock key migrations run under.
pub(crate) const MIGRATE_KEY: i64 = LEADER_KEY + 1;
/// Gateways remembered at most; a new id past it is not recorded (and logged).
pub const MAX_GATEWAYS: i64 = 10_000;
/// Subscription log entries kept by pruning: a control plane whose last build is older
/// rereads every subscription once.
pub const SUBSCRIPTION_LOG_KEEP: i64 = 10_000;
/// Manifests kept (versions a gateway may be behind and still get a delta).
pub const MANIFESTS_KEEP: i64 = 64;
/// Gateways not heard from for this long are forgotten.
pub const GATEWAY_FORGET: Duration = Duration::from_secs(7 * 86_400);

/// One gateway's last report, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayRow {
    pub id: String,
    pub version: u64,
    pub hash: String,
    pub last_contact_ms: i64,
    /// How long the gateway's long-poll waits: contact older than that (plus a margin)
    /// means it stopped polling.
    pub poll_wait_ms: i64,
    /// The control plane's URL or name the gateway last polled.
    pub control_plane: String,
    /// Commit of `version` to the gateway's first poll serving it.
    pub convergence_ms: Option<i64>,
    /// How long the gateway took to apply and compile its last snapshot.
    pub apply_ms: Option<i64>,
    /// The gateway's last status report (JSON object; fields are the gateway's).
    pub report: String,
    /// Commit time of the first version the gateway does not serve yet (`None`: none, or
    /// no longer in the change log).
    pub behind_since_ms: Option<i64>,
}

/// What one maintenance pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintenance {
    pub subscription_log: u64,
    pub manifests: u64,
    pub gateways: u64,
}

/// One poll's contact from a gateway.
#[derive(Debug, Clone)]
pub struct GatewayContact<'a> {
    pub id: &'a str,
    pub version: u64,
    pub hash: &'a str,
    pub poll_wait_ms: i64,
    pub control_plane: &'a str,
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Whether this store may write derived state now. PostgreSQL: holds (or just took)
    /// the leader advisory lock on its own connection; SQLite: always.
    pub async fn is_leader(&self) -> bool {
        if self.backend() == Backend::Sqlite {
            return true;
        }
        let mut slot = self.inner.leader.lock().await;
        if let Some(conn) = slot.as_mut() {
            // The lock lives as long as the session: a live session still holds it.
            if sqlx::query("SELECT 1").execute(&mut *conn).await.is_ok() {
                return true;
            }
            tracing::warn!("store: the leader connection was lost; leadership released");
            *slot = None;
        }
        let Ok(mut conn) = AnyConnection::connect(&self.inner.url).await else {
            return false;
        };
        let got: Result<bool, _> = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(LEADER_KEY)
            .fetch_one(&mut conn)
            .await;
        if matches!(got, Ok(true)) {
            tracing::info!("store: this control plane now writes derived state (leader)");
            *slot = Some(conn);
            true
        } else {
            let _ = conn.close().await;
            false
        }
    }

    /// Gives leadership up (closing its session), e.g. before a planned stop.
    pub async fn resign(&self) {
        if let Some(conn) = self.inner.leader.lock().await.take() {
            let _ = conn.close().await;
        }
    }

    /// Prunes derived state when this store leads; `None` when another does.
    pub async fn maintain(&self) -> Result<Option<Maintenance>, StoreError> {
        if !self.is_leader().await {
            return Ok(None);
        }
        let subscription_log = self.prune_subscription_log(SUBSCRIPTION_LOG_KEEP).await?;
        let manifests = sqlx::query(
            "DELETE FROM snapshot_manifests WHERE version <= (SELECT MAX(version) FROM snapshot_manifests) - $1",
        )
        .bind(MANIFESTS_KEEP)
        .execute(self.pool())
        .await?
        .rows_affected();
        let forget = i64::try_from(GATEWAY_FORGET.as_millis()).unwrap_or(i64::MAX);
        let gateways = sqlx::query("DELETE FROM gateway_status WHERE last_contact_ms < $1")
            .bind(now_ms() - forget)
            .execute(self.pool())
            .await?
            .rows_affected();
        Ok(Some(Maintenance {
            subscription_log,
            manifests,
            gateways,
        }))
    }

    /// Keeps a built version's manifest (JSON) for deltas against it; a version already
    /// kept (built by another control plane) stays as it is.
    pub async fn save_manifest(
        &self,
        version: u64,
        hash: &str,
        manifest: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO snapshot_manifests (version, hash, manifest, at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (version) DO NOTHING",
        )
        .bind(i64_of(version))
        .bind(hash)
        .bind(manifest)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The manifest (JSON) kept for `version` with `hash`.
    pub async fn manifest(&self, version: u64, hash: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT manifest FROM snapshot_manifests WHERE version = $1 AND hash = $2",
        )
        .bind(i64_of(version))
        .bind(hash)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Records a long-poll: what the gateway serves and that it is alive. The time from
    /// the served version's commit to the first poll serving it is its convergence.
    pub async fn record_gateway_contact(&self, c: &GatewayContact<'_>) -> Result<(), StoreError> {
        let now = now_ms();
        let known: Option<i64> =
            sqlx::query_scalar("SELECT version FROM gateway_status WHERE id = $1")
                .bind(c.id)
                .fetch_optional(self.pool())
                .await?;
        let convergence = match known {
            Some(v) if v == i64_of(c.version) => None,
            _ => self.commit_time(c.version).await?.map(|at| now - at),
        };
        if known.is_none() {
            let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM gateway_status")
                .fetch_one(self.pool())
                .await?;
            if count >= MAX_GATEWAYS {
                tracing::warn!(gateway = c.id, "store: gateway list full; not recorded");
                return Ok(());
            }
            sqlx::query(
                "INSERT INTO gateway_status (id, version, hash, last_contact_ms, poll_wait_ms, control_plane, convergence_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(c.id)
            .bind(i64_of(c.version))
            .bind(c.hash)
            .bind(now)
            .bind(c.poll_wait_ms)
            .bind(c.control_plane)
            .bind(convergence)
            .execute(self.pool())
            .await?;
            return Ok(());
        }
        sqlx::query(
            "UPDATE gateway_status SET version = $2, hash = $3, last_contact_ms = $4, poll_wait_ms = $5, control_plane = $6, convergence_ms = COALESCE($7, convergence_ms) WHERE id = $1",
        )
        .bind(c.id)
        .bind(i64_of(c.version))
        .bind(c.hash)
        .bind(now)
        .bind(c.poll_wait_ms)
        .bind(c.control_plane)
        .bind(convergence)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Stores a gateway's status report (a JSON object) and its apply time; a gateway
    /// not yet seen polling is ignored (its first poll comes first).
    pub async fn record_gateway_report(
        &self,
        id: &str,
        apply_ms: Option<i64>,
        report: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE gateway_status SET apply_ms = COALESCE($2, apply_ms), report = $3, last_contact_ms = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(apply_ms)
        .bind(report)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Every gateway heard from (at most [`MAX_GATEWAYS`]), by id.
    pub async fn gateway_statuses(&self) -> Result<Vec<GatewayRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT g.id, g.version, g.hash, g.last_contact_ms, g.poll_wait_ms, g.control_plane, g.convergence_ms, g.apply_ms, g.report, \
             (SELECT c.at_ms FROM change_log c WHERE c.version = g.version + 1) AS behind_since_ms \
             FROM gateway_status g ORDER BY g.id LIMIT $1",
        )
        .bind(MAX_GATEWAYS)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(GatewayRow {
                    id: r.try_get("id")?,
                    version: r.try_get::<i64, _>("version")?.max(0) as u64,
                    hash: r.try_get("hash")?,
                    last_contact_ms: r.try_get("last_contact_ms")?,
                    poll_wait_ms: r.try_get("poll_wait_ms")?,
                    control_plane: r.try_get("control_plane")?,
                    convergence_ms: r.try_get("convergence_ms")?,
                    apply_ms: r.try_get("apply_ms")?,
                    report: r.try_get("report")?,
                    behind_since_ms: r.try_get("behind_since_ms")?,
                })
            })
            .collect()
    }

    /// When `version` was committed (`None`: not in the change log).
    pub async fn commit_time(&self, version: u64) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT at_ms FROM change_log WHERE version = $1")
                .bind(i64_of(version))
                .fetch_optional(self.pool())
                .await?,
        )
    }
}

/// Starts following other processes' commits (PostgreSQL only): LISTEN, and a read of
/// the version every [`VERSION_POLL`]. Ends when the store is dropped or closed.
pub(crate) fn follow_versions(store: &Store) {
    if store.backend() != Backend::Postgres {
        return;
    }
    let weak = std::sync::Arc::downgrade(&store.inner);
    let url = store.inner.url.clone();
    tokio::spawn(async move {
        let mut listener = listen(&url).await;
        loop {
            let notified = match listener.as_mut() {
                Some(l) => tokio::time::timeout(VERSION_POLL, l.recv()).await,
                None => {
                    tokio::time::sleep(VERSION_POLL).await;
                    listener = listen(&url).await;
                    continue;
                }
            };
            let Some(inner) = weak.upgrade() else {
                return;
            };
            if inner.pool.is_closed() {
                return;
            }
            let store = Store { inner };
            let seen = match notified {
                Ok(Ok(n)) => n.payload().parse::<u64>().ok(),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "store: version listener failed; polling");
                    listener = None;
                    None
                }
                Err(_) => None,
            };
            let v = match seen {
                Some(v) => v,
                None => match store.current_version().await {
                    Ok(v) => v,
                    Err(_) => continue,
                },
            };
            store
                .inner
                .version
                .send_if_modified(|cur| std::mem::replace(cur, v.max(*cur)) < v);
        }
    });
}

async fn listen(url: &str) -> Option<sqlx::postgres::PgListener> {
    let mut l = sqlx::postgres::PgListener::connect(url).await.ok()?;
    l.listen(CHANNEL).await.ok()?;
    Some(l)
}

/// Inside a write transaction on PostgreSQL: the version row, locked until commit.
pub(crate) async fn lock_version_row(conn: &mut AnyConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT value FROM meta WHERE key = 'version' FOR UPDATE")
        .execute(conn)
        .await?;
    Ok(())
}

/// Inside a write transaction on PostgreSQL: tells every control plane about `version`
/// once the transaction commits.
pub(crate) async fn notify(conn: &mut AnyConnection, version: i64) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(version.to_string())
        .execute(conn)
        .await?;
    Ok(())
}
