//! The follower: long-polls the control plane, applies deltas or full files to the
//! [`Parts`] it holds, verifies the announced hash, compiles off the async workers and
//! swaps. While the control plane is unreachable it keeps serving the last good snapshot
//! and retries with capped backoff; a snapshot that does not compile is refused and the
//! previous one stays. Each poll reports the version and hash the gateway serves.
//!
//! With [`FollowerConfig::saved_snapshot`] set, every snapshot whose hash was verified is
//! also kept on disk (`saved.rs`), and a follower that starts serves the saved one (hash
//! checked again) before its first poll: a gateway restarted while the control plane is
//! down keeps its APIs. [`FollowerHandle::ready`] turns true once a snapshot is served
//! (restored, or received) or the control plane confirmed there is nothing newer;
//! [`FollowerHandle::restored`] resolves once the saved copy was tried, so the gateway
//! opens its listeners only then (a request must never meet an empty gateway that is
//! about to load its APIs).
//!
//! [`FollowerHandle::confirmed`] is when the control plane last said the served
//! snapshot is current (a `304` or a new version installed): the snapshot's age, which
//! bounds how long a credential revoked meanwhile can still get in
//! (`--max-snapshot-age`). A restored snapshot is as old as the saved file's mtime,
//! which each confirmation refreshes (at most every [`TOUCH_EVERY`]).
//!
//! Several control planes ([`FollowerConfig::control_planes`], one database behind them):
//! a poll that fails moves to the next URL at once (each is tried before backing off),
//! and after [`FollowerConfig::failback_after`] on another one the follower tries the
//! first again. After each install, and while tracked endpoints change state, it posts
//! its status report (`report.rs`, [`StatusReport`]) to the control plane it follows.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::watch;
use turnpike_config::Snapshot;

use crate::apply::build;
pub use crate::apply::SyncError;
use crate::report::{HttpClient, Installed as Report, Reporter, StatusReport};
use crate::saved::{self, Saver};
use crate::wire::Parts;
use crate::{ACCEPT_DELTA_HEADER, KIND_HEADER, WIRE_HEADER, WIRE_VERSION};

/// How to follow a control plane.
#[derive(Debug, Clone)]
pub struct FollowerConfig {
    /// Base URLs, e.g. `http://127.0.0.1:9400` or `https://cp.example.com:9400`, in order of preference: all
    /// serve the same database, the follower uses one at a time.
    pub control_planes: Vec<String>,
    /// How long the follower stays on another control plane before trying the first
    /// again.
    pub failback_after: Duration,
    /// TLS for `https://` control planes: whom to trust, and the client certificate for
    /// mTLS (`turnpike_tls::client_config`). `None`: the web PKI roots, no client
    /// certificate. The certificate is always verified.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The control plane's gateway token.
    pub token: String,
    /// A name for this gateway in the control plane's gateway list.
    pub gateway_id: String,
    /// How long one long-poll may wait on the server.
    pub wait: Duration,
    /// Longest pause between retries while the control plane is down.
    pub max_backoff: Duration,
    /// The gateway's long-lived policy state every snapshot compiles against.
    pub runtime: Arc<turnpike_config::PolicyRuntime>,
    /// Where the last good snapshot is kept (and read back on start); `None`: nowhere.
    pub saved_snapshot: Option<PathBuf>,
}

impl FollowerConfig {
    /// `control_planes`: one base URL or several separated by commas.
    pub fn new(
        control_planes: impl Into<String>,
        token: impl Into<String>,
        gateway_id: impl Into<String>,
    ) -> Self {
        let list: String = control_planes.into();
        FollowerConfig {
            control_planes: list
                .split(',')
                .map(|u| u.trim().trim_end_matches('/').to_string())
                .filter(|u| !u.is_empty())
                .collect(),
            failback_after: Duration::from_secs(30),
            tls: None,
            token: token.into(),
            gateway_id: gateway_id.into(),
            wait: Duration::from_secs(30),
            max_backoff: Duration::from_secs(2),
            runtime: Arc::default(),
            saved_snapshot: None,
        }
    }
}

/// Counters a test or an operator can read.
#[derive(Debug, Default)]
pub struct Stats {
    /// Full snapshots installed.
    pub fulls: AtomicU64,
    /// Deltas applied and installed.
    pub deltas: AtomicU64,
    /// Deltas refused (wrong base, hash mismatch): each is followed by a full fetch.
    pub delta_failures: AtomicU64,
    /// Body bytes of the last snapshot or delta received.
    pub last_body_bytes: AtomicU64,
    /// Microseconds the last apply + compile took (off the request threads).
    pub last_compile_us: AtomicU64,
    /// APIs the last install compiled (a delta reuses the others).
    pub last_compiled_apis: AtomicU64,
    /// Snapshots served from the saved file on start (0 or 1).
    pub restored: AtomicU64,
}

/// When the control plane last confirmed the served snapshot as current (shared with
/// whoever watches the snapshot's age).
#[derive(Debug, Clone)]
pub struct Confirmed(Arc<AtomicU64>);

impl Confirmed {
    /// `None` before any confirmation (and nothing restored).
    pub fn at(&self) -> Option<SystemTime> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }
}

/// How often a confirmation refreshes the saved file's mtime (its age after a restart).
pub const TOUCH_EVERY: Duration = Duration::from_secs(30);

/// A running follower. Dropping it does not stop it; call [`FollowerHandle::stop`].
pub struct FollowerHandle {
    served: watch::Receiver<u64>,
    ready: watch::Receiver<bool>,
    restored: watch::Receiver<bool>,
    confirmed: Arc<AtomicU64>,
    stats: Arc<Stats>,
    task: tokio::task::JoinHandle<()>,
}

impl FollowerHandle {
    /// The version being served (0 until the first snapshot).
    pub fn served(&self) -> watch::Receiver<u64> {
        self.served.clone()
    }

    /// True once a snapshot is served (restored from disk or received) or the control
    /// plane answered that there is nothing newer than what is served: what a readiness
    /// probe reports.
    pub fn ready(&self) -> watch::Receiver<bool> {
        self.ready.clone()
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Resolves once the saved snapshot was tried (served, or found missing or unusable).
    pub async fn restored(&self) {
        let mut rx = self.restored.clone();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// When the control plane last confirmed the served snapshot as current.
    pub fn confirmed(&self) -> Confirmed {
        Confirmed(self.confirmed.clone())
    }

    /// Waits until the served version is at least `v`.
    pub async fn wait_for(&self, v: u64) {
        let mut rx = self.served.clone();
        let _ = rx.wait_for(|s| *s >= v).await;
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

enum Poll {
    Unchanged,
    New {
        version: u64,
        body: Bytes,
        hash: String,
        delta: bool,
    },
}

struct Follower {
    cfg: FollowerConfig,
    /// The client, or why TLS could not be set up (each poll reports it).
    client: Result<HttpClient, String>,
    /// Index of the control plane in use, and since when (`None`: the first, by choice).
    current: usize,
    switched_at: Option<Instant>,
    snapshots: Arc<ArcSwap<Snapshot>>,
    served_tx: watch::Sender<u64>,
    ready_tx: watch::Sender<bool>,
    restored_tx: watch::Sender<bool>,
    /// Unix milliseconds of the last confirmation (0: none).
    confirmed: Arc<AtomicU64>,
    /// When the saved file's mtime was last refreshed.
    touched: Option<Instant>,
    stats: Arc<Stats>,
    /// Writes verified snapshots to [`FollowerConfig::saved_snapshot`].
    saver: Option<Saver>,
    cursor: u64,
    served_hash: String,
    /// The file being served, split for deltas; `None` asks for a full snapshot.
    parts: Option<Arc<Parts>>,
    /// The last install and the control plane in use, for the reporter task.
    report_tx: watch::Sender<Option<Report>>,
}

/// Starts following; the snapshot handle is swapped on every new version.
pub fn spawn(cfg: FollowerConfig, snapshots: Arc<ArcSwap<Snapshot>>) -> FollowerHandle {
    let (served_tx, served) = watch::channel(0);
    let (ready_tx, ready) = watch::channel(false);
    let (restored_tx, restored) = watch::channel(false);
    let confirmed = Arc::new(AtomicU64::new(0));
    let stats = Arc::new(Stats::default());
    let saver = cfg.saved_snapshot.clone().map(Saver::spawn);
    let client = http_client(cfg.tls.clone());
    let (report_tx, installs) = watch::channel(None);
    if let Ok(client) = &client {
        let reporter = Reporter {
            client: client.clone(),
            token: cfg.token.clone(),
            gateway_id: cfg.gateway_id.clone(),
            snapshots: snapshots.clone(),
        };
        // Ends when the follower (holding `report_tx`) stops.
        tokio::spawn(reporter.run(installs));
    }
    let mut follower = Follower {
        cfg,
        client,
        current: 0,
        switched_at: None,
        snapshots,
        served_tx,
        ready_tx,
        restored_tx,
        confirmed: confirmed.clone(),
        touched: None,
        stats: stats.clone(),
        saver,
        cursor: 0,
        served_hash: String::new(),
        parts: None,
        report_tx,
    };
    let task = tokio::spawn(async move { follower.run().await });
    FollowerHandle {
        served,
        ready,
        restored,
        confirmed,
        stats,
        task,
    }
}

impl Follower {
    async fn run(&mut self) {
        self.restore().await;
        self.restored_tx.send_replace(true);
        let mut backoff = Duration::from_millis(50);
        let mut was_down = false;
        // Control planes that failed since the last success.
        let mut failed = 0;
        loop {
            self.maybe_fail_back();
            match self.poll().await {
                Ok(Poll::Unchanged) => {
                    backoff = Duration::from_millis(50);
                    self.ready_tx
                        .send_if_modified(|r| !std::mem::replace(r, true));
                    self.confirm();
                }
                Ok(Poll::New {
                    version,
                    body,
                    hash,
                    delta,
                }) => {
                    backoff = Duration::from_millis(50);
                    self.stats
                        .last_body_bytes
                        .store(body.len() as u64, Ordering::Relaxed);
                    match self.install(version, body, hash, delta).await {
                        Ok(()) => {
                            self.confirm();
                            self.report(delta);
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "sync: keeping the previous snapshot")
                        }
                    }
                }
                Err(e) => {
                    failed += 1;
                    if self.fail_over(&e) && failed < self.cfg.control_planes.len() {
                        continue;
                    }
                    if !was_down {
                        tracing::warn!(error = %e, version = self.cursor, "sync: control plane unavailable; serving the last good snapshot");
                    }
                    was_down = true;
                    failed = 0;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.cfg.max_backoff);
                    continue;
                }
            }
            failed = 0;
            if was_down {
                tracing::info!(version = self.cursor, "sync: control plane reachable again");
                was_down = false;
            }
        }
    }

    /// The control plane says the served snapshot is current: its age restarts, here and
    /// (every [`TOUCH_EVERY`]) in the saved file's mtime, which a restart reads back.
    fn confirm(&mut self) {
        let now = SystemTime::now();
        self.confirmed.store(unix_ms(now), Ordering::Relaxed);
        let Some(path) = self.cfg.saved_snapshot.clone() else {
            return;
        };
        if self.touched.is_some_and(|t| t.elapsed() < TOUCH_EVERY) {
            return;
        }
        self.touched = Some(Instant::now());
        tokio::task::spawn_blocking(move || touch(&path, now));
    }

    /// Serves the saved snapshot, if there is one and its hash holds: the control plane
    /// may be down, and an empty gateway answers 404 to everything.
    async fn restore(&mut self) {
        let Some(path) = self.cfg.saved_snapshot.clone() else {
            return;
        };
        let runtime = self.cfg.runtime.clone();
        let job = tokio::task::spawn_blocking(move || {
            let restored = saved::load(&path)?;
            let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            Ok::<_, saved::SavedError>(restored.map(|r| {
                let compiled = turnpike_config::compile_with(r.file, r.version, &runtime)
                    .map(|s| crate::apply::remember(s, &r.parts));
                (r.version, r.hash, r.parts, (compiled, mtime))
            }))
        });
        let (version, hash, parts, (compiled, mtime)) = match job.await {
            Ok(Ok(Some(r))) => r,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "sync: saved snapshot not used");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "sync: reading the saved snapshot failed");
                return;
            }
        };
        let snapshot = match compiled {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(version, error = %e, "sync: saved snapshot does not compile; not used");
                return;
            }
        };
        let apis = snapshot.apis.len();
        self.snapshots.store(Arc::new(snapshot));
        self.cursor = version;
        self.parts = Some(Arc::new(parts));
        self.served_hash = hash;
        self.stats.restored.fetch_add(1, Ordering::Relaxed);
        // As old as the last confirmation before the restart (the file's mtime).
        if let Some(t) = mtime {
            self.confirmed.store(unix_ms(t), Ordering::Relaxed);
        }
        self.served_tx.send_replace(version);
        self.ready_tx.send_replace(true);
        tracing::info!(
            version,
            apis,
            "sync: serving the snapshot saved on disk until the control plane answers"
        );
    }

    /// The control plane in use.
    fn base(&self) -> &str {
        self.cfg
            .control_planes
            .get(self.current)
            .map_or("", String::as_str)
    }

    /// Moves to the next control plane after a failed poll; false when there is no other.
    fn fail_over(&mut self, e: &SyncError) -> bool {
        let n = self.cfg.control_planes.len();
        if n < 2 || matches!(e, SyncError::Invalid { .. } | SyncError::Delta { .. }) {
            return false;
        }
        let from = self.current;
        self.current = (self.current + 1) % n;
        self.switched_at = (self.current != 0).then(Instant::now);
        tracing::warn!(error = %e, from = %self.cfg.control_planes[from], to = %self.base(), "sync: failing over to another control plane");
        self.report_to_current();
        true
    }

    /// Back to the first control plane once `failback_after` passed on another: if it is
    /// still down, the poll fails over again.
    fn maybe_fail_back(&mut self) {
        if self
            .switched_at
            .is_some_and(|t| t.elapsed() >= self.cfg.failback_after)
        {
            self.current = 0;
            self.switched_at = None;
            tracing::info!(to = %self.base(), "sync: trying the first control plane again");
            self.report_to_current();
        }
    }

    /// Hands the install to the reporter task, which posts it with the endpoints' states.
    fn report(&self, delta: bool) {
        let report = StatusReport {
            version: self.cursor,
            hash: self.served_hash.clone(),
            apply_ms: self.stats.last_compile_us.load(Ordering::Relaxed) / 1000,
            kind: if delta { "delta" } else { "full" },
            fulls: self.stats.fulls.load(Ordering::Relaxed),
            deltas: self.stats.deltas.load(Ordering::Relaxed),
            applied_at_ms: unix_ms(SystemTime::now()),
            endpoints: Vec::new(),
            endpoints_total: 0,
        };
        self.report_tx.send_replace(Some(Report {
            report,
            control_plane: self.base().to_string(),
        }));
    }

    /// Later reports go to the control plane now in use.
    fn report_to_current(&self) {
        let base = self.base().to_string();
        self.report_tx.send_if_modified(|r| match r {
            Some(r) if r.control_plane != base => {
                r.control_plane = base;
                true
            }
            _ => false,
        });
    }

    async fn poll(&self) -> Result<Poll, SyncError> {
        let url = format!(
            "{}/api/am/gateway/v1/snapshot?after={}&wait={}",
            self.base(),
            self.cursor,
            self.cfg.wait.as_secs()
        );
        let served = *self.served_tx.borrow();
        let mut req = http::Request::get(url)
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.cfg.token),
            )
            .header("x-turnpike-gateway", self.cfg.gateway_id.as_str())
            .header("x-turnpike-serving", served.to_string())
            .header("x-turnpike-serving-hash", self.served_hash.as_str())
            .header(WIRE_HEADER, WIRE_VERSION);
        if self.parts.is_some() {
            req = req.header(ACCEPT_DELTA_HEADER, "1");
        }
        let req = req
            .body(Full::default())
            .map_err(|e| SyncError::Unreachable(e.to_string()))?;
        let limit = self.cfg.wait + Duration::from_secs(10);
        let client = self
            .client
            .as_ref()
            .map_err(|e| SyncError::Unreachable(e.clone()))?;
        let resp = tokio::time::timeout(limit, client.request(req))
            .await
            .map_err(|_| SyncError::Unreachable("long-poll timed out".into()))?
            .map_err(|e| SyncError::Unreachable(e.to_string()))?;
        match resp.status().as_u16() {
            304 => Ok(Poll::Unchanged),
            200 => {
                let header = |n: &str| {
                    resp.headers()
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                let version = header("x-turnpike-version")
                    .and_then(|v| v.parse().ok())
                    .ok_or(SyncError::Status(200))?;
                let hash = header("x-turnpike-hash").unwrap_or_default();
                let delta = header(KIND_HEADER).as_deref() == Some("delta");
                let body = tokio::time::timeout(limit, resp.into_body().collect())
                    .await
                    .map_err(|_| SyncError::Unreachable("snapshot body timed out".into()))?
                    .map_err(|e| SyncError::Unreachable(e.to_string()))?
                    .to_bytes();
                Ok(Poll::New {
                    version,
                    body,
                    hash,
                    delta,
                })
            }
            401 => Err(SyncError::Unauthorized),
            s => Err(SyncError::Status(s)),
        }
    }

    /// Applies and compiles on a blocking thread (a large snapshot takes long enough to
    /// stall requests on an async worker), then swaps.
    async fn install(
        &mut self,
        version: u64,
        body: Bytes,
        hash: String,
        delta: bool,
    ) -> Result<(), SyncError> {
        let base = self.parts.take();
        if delta && base.is_none() {
            // Asked for a full snapshot; try again without a base.
            return Err(SyncError::Delta {
                version,
                reason: "no base held".into(),
            });
        }
        let runtime = self.cfg.runtime.clone();
        // The served snapshot, compiled from `base`: a delta reuses its compiled APIs and
        // subscription table where the change left them alone.
        let served = self.snapshots.load_full();
        let started = Instant::now();
        let job = tokio::task::spawn_blocking(move || {
            // A full snapshot replaces the old parts: freed here, not on an async worker.
            let base = if delta { base } else { None };
            build(version, &body, hash, base, &served, &runtime)
        });
        let result = job.await.map_err(|e| SyncError::Invalid {
            version,
            reason: e.to_string(),
        })?;
        match result {
            Ok(done) => {
                self.stats
                    .last_compile_us
                    .store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                self.stats
                    .last_compiled_apis
                    .store(done.compiled as u64, Ordering::Relaxed);
                let counter = if delta {
                    &self.stats.deltas
                } else {
                    &self.stats.fulls
                };
                counter.fetch_add(1, Ordering::Relaxed);
                self.cursor = version;
                let old = self.snapshots.swap(Arc::new(done.snapshot));
                // Freeing a large snapshot takes a while; requests still holding it finish
                // on it, and the last of them or this thread frees it.
                tokio::task::spawn_blocking(move || {
                    let (t, shared) = (Instant::now(), Arc::strong_count(&old) > 1);
                    drop(old);
                    tracing::debug!(
                        version,
                        ms = t.elapsed().as_secs_f64() * 1e3,
                        still_held = shared,
                        "sync: replaced snapshot released"
                    );
                });
                if let (Some(saver), Some(parts)) = (&self.saver, &done.parts) {
                    // Shared: the next delta copies the parts only if the writer still
                    // holds them (`Arc::make_mut`).
                    saver.offer(version, done.hash.clone(), parts.clone());
                }
                self.parts = done.parts;
                self.served_hash = done.hash;
                self.served_tx.send_replace(version);
                self.ready_tx
                    .send_if_modified(|r| !std::mem::replace(r, true));
                tracing::info!(
                    version,
                    apis = done.apis,
                    compiled = done.compiled,
                    delta,
                    "sync: snapshot swapped in"
                );
                Ok(())
            }
            Err(e @ SyncError::Delta { .. }) => {
                // The cursor stays: the next poll, without a base, fetches this version whole.
                self.stats.delta_failures.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
            Err(e) => {
                // A bad snapshot is not fetched again and again; the next change comes whole.
                self.cursor = version;
                Err(e)
            }
        }
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Sets the saved file's mtime to `at` (when it exists: nothing may be saved yet).
fn touch(path: &Path, at: SystemTime) {
    let touched = std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(at));
    if let Err(e) = touched {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::debug!(error = %e, "sync: cannot refresh the saved snapshot's time");
        }
    }
}

/// HTTP and HTTPS (certificate verified against `tls`'s roots, or the web PKI's).
fn http_client(tls: Option<Arc<rustls::ClientConfig>>) -> Result<HttpClient, String> {
    let tls = turnpike_tls::for_hyper(tls).map_err(|e| format!("TLS setup: {e}"))?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}
