//! Backup and restore of a SQLite store (`turnpike backup`, `turnpike restore`). A backup
//! is `VACUUM INTO`: one read transaction, so the copy is consistent while the control
//! plane keeps writing, and compacted. A restore checks that the file is a Turnpike
//! database this binary can run (no migration it does not know), then replaces the
//! database file (its WAL and shared-memory files removed) by a rename, so a crash leaves
//! either the old database or the new one. PostgreSQL has its own tools (`pg_dump`,
//! `pg_restore`): the binary runs them; this module only says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{connect, migrate, MigrationStatus, StoreError, StoreOptions};

/// Why a backup or restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0} is a PostgreSQL database: use pg_dump / pg_restore (turnpike backup prints the commands)")]
    Postgres(String),
    #[error("{0} already exists; a backup never overwrites a file")]
    Exists(PathBuf),
    #[error("{0} does not exist")]
    Missing(PathBuf),
    #[error("{path} is not a Turnpike database: {reason}")]
    NotTurnpike { path: PathBuf, reason: String },
    #[error(
        "{path} was written by a newer Turnpike (migrations {unknown:?} unknown to this binary)"
    )]
    Newer { path: PathBuf, unknown: Vec<i64> },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The file of a `sqlite://PATH[?...]` URL; PostgreSQL URLs are refused by name.
pub fn sqlite_path(url: &str) -> Result<PathBuf, BackupError> {
    match url.strip_prefix("sqlite://") {
        Some(rest) => Ok(PathBuf::from(rest.split('?').next().unwrap_or(rest))),
        None if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Err(BackupError::Postgres(crate::redact_url(url)))
        }
        None => Err(StoreError::BadUrl(url.to_string()).into()),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes a consistent copy of the SQLite database at `url` to `out` (which must not
/// exist) while the control plane may be running; returns the copy's migration status.
pub async fn backup_sqlite(url: &str, out: &Path) -> Result<MigrationStatus, BackupError> {
    let db = sqlite_path(url)?;
    if !db.exists() {
        return Err(BackupError::Missing(db));
    }
    if out.exists() {
        return Err(BackupError::Exists(out.to_owned()));
    }
    let ro = format!("sqlite://{}?mode=ro", db.display());
    let (pool, _) = connect(&ro, &StoreOptions::default(), Arc::default()).await?;
    let target = out.to_str().ok_or_else(|| BackupError::Io {
        path: out.to_owned(),
        source: std::io::Error::other("the path is not UTF-8"),
    })?;
    let copied = sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(&pool)
        .await;
    pool.close().await;
    copied.map_err(StoreError::from)?;
    check_turnpike(out).await
}

/// What the database file at `path` holds: refused unless it is a Turnpike database whose
/// every migration this binary knows.
pub async fn check_turnpike(path: &Path) -> Result<MigrationStatus, BackupError> {
    if !path.exists() {
        return Err(BackupError::Missing(path.to_owned()));
    }
    let ro = format!("sqlite://{}?mode=ro", path.display());
    let not_turnpike = |reason: String| BackupError::NotTurnpike {
        path: path.to_owned(),
        reason,
    };
    let (pool, backend) = connect(&ro, &StoreOptions::default(), Arc::default())
        .await
        .map_err(|e| not_turnpike(e.to_string()))?;
    let status = migrate::status(&pool, backend).await;
    pool.close().await;
    let status = status.map_err(|e| not_turnpike(e.to_string()))?;
    if status.current == 0 {
        return Err(not_turnpike("no schema_migrations rows".into()));
    }
    if !status.unknown.is_empty() {
        return Err(BackupError::Newer {
            path: path.to_owned(),
            unknown: status.unknown,
        });
    }
    Ok(status)
}

/// Replaces the SQLite database at `url` by the backup `from`. Every control plane on
/// that file must be stopped first (they hold it open); the next start migrates the
/// restored copy forward if it is older than this binary.
pub async fn restore_sqlite(from: &Path, url: &str) -> Result<MigrationStatus, BackupError> {
    let db = sqlite_path(url)?;
    let status = check_turnpike(from).await?;
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let staging = db.with_extension("restoring");
    std::fs::copy(from, &staging).map_err(io(&staging))?;
    for suffix in ["-wal", "-shm"] {
        let side = PathBuf::from(format!("{}{suffix}", db.display()));
        if let Err(e) = std::fs::remove_file(&side) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(io(&side)(e));
            }
        }
    }
    std::fs::rename(&staging, &db).map_err(io(&db))?;
    Ok(status)
}
