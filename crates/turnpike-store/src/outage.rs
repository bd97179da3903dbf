//! When the database cannot serve: a full disk, a read-only file, a server that is down
//! or restarting. [`StoreError::outage`] names those (the REST APIs answer 503 with a
//! stable code and `Retry-After`, not 500); [`Store::probe_write`] is the readiness
//! check; [`reusable`] keeps a connection whose transaction state is unknown out of the
//! pool.
//!
//! Why the pool needs guarding: when SQLite fails a write with SQLITE_FULL (or IOERR) it
//! may roll the whole transaction back by itself. sqlx does not see that, so its depth
//! counter stays at 1, the ROLLBACK it sends on drop fails ("no transaction is active")
//! and the connection went back to the pool believing it was still in a transaction:
//! every later `BEGIN IMMEDIATE` on it failed with "attempted to call begin_with at
//! non-zero transaction depth", long after space was back. Such a connection is closed
//! on release instead; the pool opens a fresh one.

use std::time::Duration;

use sqlx::{AnyConnection, Connection};

use crate::{Backend, PasswordParams, Store, StoreError};

/// How the store is opened.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub password: PasswordParams,
    /// The longest a request waits for a database connection before it fails with an
    /// outage (503): a database that is down answers in this time, not sqlx's 30 s.
    pub acquire_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            password: PasswordParams::default(),
            acquire_timeout: Duration::from_secs(3),
        }
    }
}

/// Why the store cannot serve for now; retrying later may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// No space left: the disk (or the database's size limit) is full.
    Full,
    /// The database is unreachable, read-only, or failing I/O.
    Unavailable,
}

impl StoreError {
    /// The outage behind this error, if it is one.
    pub fn outage(&self) -> Option<Outage> {
        match self {
            StoreError::Db(e) => outage_of(e),
            _ => None,
        }
    }
}

pub(crate) fn outage_of(e: &sqlx::Error) -> Option<Outage> {
    use sqlx::Error as E;
    match e {
        E::PoolTimedOut
        | E::PoolClosed
        | E::Io(_)
        | E::Tls(_)
        | E::WorkerCrashed
        | E::BeginFailed
        | E::InvalidSavePointStatement => Some(Outage::Unavailable),
        E::Database(d) => database_outage(d.code().as_deref()?),
        _ => None,
    }
}

/// PostgreSQL's SQLSTATEs are five characters; SQLite's (extended) result codes are
/// numbers below 10000.
fn database_outage(code: &str) -> Option<Outage> {
    if code.len() < 5 {
        let n = code.parse::<i32>().ok()?;
        return match n & 0xff {
            13 => Some(Outage::Full), // SQLITE_FULL
            // BUSY, LOCKED, READONLY, IOERR, CANTOPEN
            5 | 6 | 8 | 10 | 14 => Some(Outage::Unavailable),
            _ => None,
        };
    }
    match code {
        "53100" => Some(Outage::Full), // disk_full
        // insufficient resources, shutting down, cannot connect now, connection
        // exceptions, a read-only standby
        c if c.starts_with("53") || c.starts_with("57P") || c.starts_with("08") => {
            Some(Outage::Unavailable)
        }
        "25006" => Some(Outage::Unavailable),
        _ => None,
    }
}

/// `after_release`: whether a connection may go back to the pool. One that still counts
/// itself in a transaction after its rollback ran is closed (see the module doc).
pub(crate) async fn reusable(conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
    // The rollback sqlx queued on drop runs on the connection's worker before this ping.
    conn.ping().await?;
    if conn.is_in_transaction() {
        tracing::warn!("store: closing a connection left in a failed transaction");
        return Ok(false);
    }
    Ok(true)
}

/// The probe row's key: long enough that writing it needs a new page (SQLite's are
/// 4 KiB) yet under PostgreSQL's btree row limit.
fn probe_key(backend: Backend) -> String {
    let len = match backend {
        Backend::Sqlite => 6000,
        Backend::Postgres => 2000,
    };
    format!("ready-probe:{}", "x".repeat(len))
}

impl Store {
    /// Commits a small write and takes it back: `Ok` when the store can write now. For
    /// readiness checks; callers cache the answer (it takes the writer lock and a commit).
    pub async fn probe_write(&self) -> Result<(), StoreError> {
        let _writer = self.inner.writer.lock().await;
        let mut tx = self.begin_locked().await?;
        let key = probe_key(self.inner.backend);
        sqlx::query("INSERT INTO meta (key, value) VALUES ($1, 0)")
            .bind(&key)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM meta WHERE key = $1")
            .bind(&key)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Simulates a full disk on SQLite: caps the database at `pages` pages (0: its
    /// current size) on every connection, open or opened later; `None` lifts the cap.
    #[cfg(feature = "test-support")]
    pub async fn cap_pages_for_tests(&self, pages: Option<u64>) -> Result<(), StoreError> {
        use sqlx::Executor;
        let cap = match pages {
            Some(0) => {
                let n: i64 = sqlx::query_scalar("PRAGMA page_count")
                    .fetch_one(self.pool())
                    .await?;
                n.max(1) as u64
            }
            Some(n) => n,
            // SQLite's own maximum.
            None => 4_294_967_294,
        };
        self.inner
            .page_cap
            .store(cap, std::sync::atomic::Ordering::Relaxed);
        // Hold every connection at once so each gets the pragma.
        let mut held = Vec::new();
        for _ in 0..self.pool().options().get_max_connections() {
            let mut c = self.pool().acquire().await?;
            c.execute(&*format!("PRAGMA max_page_count = {cap}"))
                .await?;
            held.push(c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_outages() {
        assert_eq!(database_outage("13"), Some(Outage::Full));
        assert_eq!(database_outage("3850"), Some(Outage::Unavailable)); // IOERR_WRITE... low byte 10
        assert_eq!(database_outage("2067"), None); // a unique violation is the client's
        assert_eq!(database_outage("53100"), Some(Outage::Full));
        assert_eq!(database_outage("57P01"), Some(Outage::Unavailable));
        assert_eq!(database_outage("08006"), Some(Outage::Unavailable));
        assert_eq!(database_outage("23505"), None);
    }
}
