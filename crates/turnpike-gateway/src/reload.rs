//! Hot swap for DB-less mode: the config file is re-read on SIGHUP and when its mtime or
//! length changes (polled once a second: simpler and sturdier than inotify across
//! editors' rename-and-replace saves and bind-mounted files). A file that does not compile
//! is refused with its errors logged, and the current snapshot keeps serving. So is a file
//! with no API at all (a truncated or half-written file would otherwise answer 404 to
//! everything) unless the operator asked for it with `--allow-empty`.
//!
//! A change is loaded only once the file has settled: its length and mtime unchanged for
//! [`SETTLE`]. A file written in place in several pieces can be valid at every piece
//! boundary (the first APIs, not yet the last): loading such a moment answers 404 for
//! the APIs still to come. Waiting for quiet catches writers that pause less than
//! `SETTLE`; writing a new file and renaming it over the old one (atomic) catches all,
//! and is what docs/operations.md asks for.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use turnpike_config::{ConfigError, PolicyRuntime, Snapshot};

/// How often the file's metadata is checked.
pub const POLL: Duration = Duration::from_secs(1);
/// How long a changed file's length and mtime must stay the same before it is loaded.
pub const SETTLE: Duration = Duration::from_millis(250);
/// A file still changing after this many settle periods is left for the next poll.
const MAX_SETTLE_ROUNDS: u32 = 40;

/// Whether a file that declares no API may replace the running snapshot on reload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EmptyFile {
    /// Keep serving the previous snapshot (the default).
    #[default]
    Refuse,
    /// Swap it in: every request then answers 404 (`--allow-empty`).
    Allow,
}

/// Reloads the file now: swaps on success, keeps the old snapshot on error.
pub async fn reload(
    path: &Path,
    snapshots: &ArcSwap<Snapshot>,
    runtime: &Arc<PolicyRuntime>,
    empty: EmptyFile,
) -> Result<(), ConfigError> {
    let p = path.to_owned();
    let rt = runtime.clone();
    let loaded = tokio::task::spawn_blocking(move || Snapshot::load_with(&p, &rt))
        .await
        .map_err(|e| ConfigError::Invalid(format!("reload task failed: {e}")))
        .and_then(|r| r)
        .and_then(|snap| refuse_empty(path, snap, empty));
    match loaded {
        Ok(snap) => {
            let apis = snap.apis.len();
            snapshots.store(Arc::new(snap));
            tracing::info!(file = %path.display(), apis, "config reloaded");
            Ok(())
        }
        Err(e) => {
            tracing::error!(file = %path.display(), error = %e,
                "config refused, still serving the previous one");
            Err(e)
        }
    }
}

fn refuse_empty(path: &Path, snap: Snapshot, empty: EmptyFile) -> Result<Snapshot, ConfigError> {
    if snap.apis.is_empty() && empty == EmptyFile::Refuse {
        return Err(ConfigError::Invalid(format!(
            "{} declares no API (empty or truncated?); start the gateway with --allow-empty \
             to serve an empty configuration",
            path.display()
        )));
    }
    Ok(snap)
}

fn fingerprint(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Waits until `path`'s length and mtime stay as they are for [`SETTLE`], and returns
/// that fingerprint; `None` if it kept changing for [`MAX_SETTLE_ROUNDS`] periods.
async fn settle(
    path: &Path,
    mut seen: Option<(SystemTime, u64)>,
) -> Option<Option<(SystemTime, u64)>> {
    for _ in 0..MAX_SETTLE_ROUNDS {
        tokio::time::sleep(SETTLE).await;
        let again = fingerprint(path);
        if again == seen {
            return Some(seen);
        }
        seen = again;
    }
    None
}

/// Watches `path` (poll + SIGHUP) until the task is aborted.
pub fn spawn_watcher(
    path: PathBuf,
    snapshots: Arc<ArcSwap<Snapshot>>,
    runtime: Arc<PolicyRuntime>,
    empty: EmptyFile,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = fingerprint(&path);
        let mut hup = hangup_stream();
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let forced = tokio::select! {
                _ = tick.tick() => false,
                _ = recv_hangup(&mut hup) => true,
            };
            let now = fingerprint(&path);
            if forced || (now.is_some() && now != last) {
                if forced {
                    tracing::info!("SIGHUP: reloading the config");
                }
                let Some(settled) = settle(&path, now).await else {
                    tracing::warn!(file = %path.display(), "config file still changing; \
                        not loaded yet (write a new file and rename it over the old one)");
                    continue;
                };
                last = settled;
                let _ = reload(&path, &snapshots, &runtime, empty).await;
            }
        }
    })
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = ();

#[cfg(unix)]
fn hangup_stream() -> Hangup {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}
#[cfg(not(unix))]
fn hangup_stream() -> Hangup {}

#[cfg(unix)]
async fn recv_hangup(h: &mut Hangup) {
    match h {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}
#[cfg(not(unix))]
async fn recv_hangup(_: &mut Hangup) {
    std::future::pending().await
}
