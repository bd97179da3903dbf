//! The gateway side of snapshot distribution: follows a control plane by long-polling
//! `GET /api/am/gateway/v1/snapshot?after=V` (version as cursor, gateway token as bearer),
//! compiles each new declarative file with `turnpike_config::compile` and swaps it into the
//! gateway's one `ArcSwap<Snapshot>`. While the control plane is unreachable it keeps
//! serving the last good snapshot and retries with capped backoff; a snapshot that does not
//! compile is refused and the previous one stays. Each poll reports the version and hash the
//! gateway serves. Depends on `turnpike-config` only, never on the store or the admin API.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use tokio::sync::watch;
use turnpike_config::{GatewayFile, Snapshot};

/// How to follow a control plane.
#[derive(Debug, Clone)]
pub struct FollowerConfig {
    /// Base URL, e.g. `http://127.0.0.1:9400` (plain HTTP).
    pub control_plane: String,
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
}

impl FollowerConfig {
    pub fn new(
        control_plane: impl Into<String>,
        token: impl Into<String>,
        gateway_id: impl Into<String>,
    ) -> Self {
        FollowerConfig {
            control_plane: control_plane.into().trim_end_matches('/').to_string(),
            token: token.into(),
            gateway_id: gateway_id.into(),
            wait: Duration::from_secs(30),
            max_backoff: Duration::from_secs(2),
            runtime: Arc::default(),
        }
    }
}

/// Why one poll did not produce a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("control plane unreachable: {0}")]
    Unreachable(String),
    #[error("control plane refused the gateway token (401)")]
    Unauthorized,
    #[error("control plane answered {0}")]
    Status(u16),
    #[error("snapshot {version} refused: {reason}")]
    Invalid { version: u64, reason: String },
}

/// A running follower. Dropping it does not stop it; call [`FollowerHandle::stop`].
pub struct FollowerHandle {
    served: watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl FollowerHandle {
    /// The version being served (0 until the first snapshot).
    pub fn served(&self) -> watch::Receiver<u64> {
        self.served.clone()
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
    },
}

struct Follower {
    cfg: FollowerConfig,
    client: Client<HttpConnector, Empty<Bytes>>,
    snapshots: Arc<ArcSwap<Snapshot>>,
    served_tx: watch::Sender<u64>,
    cursor: u64,
    served_hash: String,
}

/// Starts following; the snapshot handle is swapped on every new version.
pub fn spawn(cfg: FollowerConfig, snapshots: Arc<ArcSwap<Snapshot>>) -> FollowerHandle {
    let (served_tx, served) = watch::channel(0);
    let mut follower = Follower {
        cfg,
        client: Client::builder(TokioExecutor::new()).build_http(),
        snapshots,
        served_tx,
        cursor: 0,
        served_hash: String::new(),
    };
    let task = tokio::spawn(async move { follower.run().await });
    FollowerHandle { served, task }
}

impl Follower {
    async fn run(&mut self) {
        let mut backoff = Duration::from_millis(50);
        let mut was_down = false;
        loop {
            match self.poll().await {
                Ok(Poll::Unchanged) => {
                    backoff = Duration::from_millis(50);
                }
                Ok(Poll::New {
                    version,
                    body,
                    hash,
                }) => {
                    backoff = Duration::from_millis(50);
                    if let Err(e) = self.install(version, &body, hash) {
                        tracing::error!(error = %e, "sync: keeping the previous snapshot");
                    }
                }
                Err(e) => {
                    if !was_down {
                        tracing::warn!(error = %e, version = self.cursor, "sync: control plane unavailable; serving the last good snapshot");
                    }
                    was_down = true;
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.cfg.max_backoff);
                    continue;
                }
            }
            if was_down {
                tracing::info!(version = self.cursor, "sync: control plane reachable again");
                was_down = false;
            }
        }
    }

    async fn poll(&self) -> Result<Poll, SyncError> {
        let url = format!(
            "{}/api/am/gateway/v1/snapshot?after={}&wait={}",
            self.cfg.control_plane,
            self.cursor,
            self.cfg.wait.as_secs()
        );
        let served = *self.served_tx.borrow();
        let req = http::Request::get(url)
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.cfg.token),
            )
            .header("x-turnpike-gateway", self.cfg.gateway_id.as_str())
            .header("x-turnpike-serving", served.to_string())
            .header("x-turnpike-serving-hash", self.served_hash.as_str())
            .body(Empty::new())
            .map_err(|e| SyncError::Unreachable(e.to_string()))?;
        let limit = self.cfg.wait + Duration::from_secs(10);
        let resp = tokio::time::timeout(limit, self.client.request(req))
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
                let body = tokio::time::timeout(limit, resp.into_body().collect())
                    .await
                    .map_err(|_| SyncError::Unreachable("snapshot body timed out".into()))?
                    .map_err(|e| SyncError::Unreachable(e.to_string()))?
                    .to_bytes();
                Ok(Poll::New {
                    version,
                    body,
                    hash,
                })
            }
            401 => Err(SyncError::Unauthorized),
            s => Err(SyncError::Status(s)),
        }
    }

    fn install(&mut self, version: u64, body: &[u8], hash: String) -> Result<(), SyncError> {
        // Either way the cursor moves on: a bad snapshot is not fetched again and again.
        self.cursor = version;
        let file: GatewayFile = serde_json::from_slice(body).map_err(|e| SyncError::Invalid {
            version,
            reason: e.to_string(),
        })?;
        let apis = file.apis.len();
        let snapshot =
            turnpike_config::compile_with(file, version, &self.cfg.runtime).map_err(|e| {
                SyncError::Invalid {
                    version,
                    reason: e.to_string(),
                }
            })?;
        self.snapshots.store(Arc::new(snapshot));
        self.served_hash = hash;
        self.served_tx.send_replace(version);
        tracing::info!(version, apis, "sync: snapshot swapped in");
        Ok(())
    }
}
