//! Snapshot distribution: compiles the live APIs into the declarative file format
//! (`turnpike_model::GatewayFile`, sent as JSON: DB-less and control-plane gateways run the
//! same compile code; with the key manager it carries `security:` and each API's `auth:`,
//! see `security.rs`), serves it by long-poll with the version as cursor
//! (`GET /api/am/gateway/v1/snapshot?after=V`), authenticated by the gateway token, and
//! records what each gateway reports it serves and how long the last change took to reach it.
//! A gateway that already holds a recent version (and says so with
//! `x-turnpike-accept-delta`) gets only what changed (`delta.rs`, `turnpike_sync::wire`).
//! A build reads the APIs' revisions, the sections and the subscription counter; API rows
//! are refetched only when their revision or security moved (`api_index.rs`), a million
//! subscriptions reread only when that counter moved (`subs_index.rs`), and the whole
//! file is serialized only when some gateway asks for it whole.

pub(crate) mod delta;
pub(crate) mod index;
pub(crate) mod subs;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Serialize;
use turnpike_model::throttling::{
    AdvancedPolicy, ApplicationThrottle, ApplicationTier, Limit, SubscriptionTier, ThrottleSpec,
    TimeUnit,
};
use turnpike_store::Store;
use turnpike_sync::wire::{hash_hex, Manifest, Parts};

use crate::auth::constant_time_eq;
use crate::error::{ApiError, ApiResult};
use crate::snapshot::index::ApiIndex;
use crate::snapshot::subs::{Reread, SubsIndex};
use crate::AppState;

pub const VERSION_HEADER: &str = "x-turnpike-version";
pub const HASH_HEADER: &str = "x-turnpike-hash";
pub const GATEWAY_HEADER: &str = "x-turnpike-gateway";
pub const SERVING_HEADER: &str = "x-turnpike-serving";
pub const SERVING_HASH_HEADER: &str = "x-turnpike-serving-hash";

/// One compiled snapshot, ready to send whole or as a delta.
pub struct Built {
    pub version: u64,
    /// The structural hash (`turnpike_sync::wire::Parts::hash`) as hex.
    pub hash: String,
    /// The file split for deltas.
    pub parts: Parts,
    pub manifest: Arc<Manifest>,
    /// The whole file as JSON, serialized the first time a gateway needs it (most
    /// versions only ever travel as deltas).
    full: tokio::sync::OnceCell<Bytes>,
}

impl Built {
    /// The whole file as JSON (serialized once, off the async workers).
    pub async fn full_body(self: &Arc<Self>) -> Result<Bytes, ApiError> {
        self.full
            .get_or_try_init(|| async {
                let me = self.clone();
                tokio::task::spawn_blocking(move || me.serialize())
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "control plane: snapshot serialization task failed");
                        ApiError::internal()
                    })?
            })
            .await
            .cloned()
    }

    fn serialize(&self) -> Result<Bytes, ApiError> {
        let started = Instant::now();
        let file = self.parts.to_file().map_err(|e| {
            tracing::error!(error = %e, "control plane: snapshot parts do not make a file");
            ApiError::internal()
        })?;
        let body = Bytes::from(serde_json::to_vec(&file).map_err(|_| ApiError::internal())?);
        tracing::info!(
            version = self.version,
            bytes = body.len(),
            ms = started.elapsed().as_millis(),
            "control plane: full snapshot serialized"
        );
        Ok(body)
    }
}

/// Reads what changed since the last build, with the version it belongs to (no commit
/// can land in between), and splits the result into wire parts. API entries come from
/// `indexes.apis`, which refetches only rows whose revision or security setting moved;
/// subscriptions from `indexes.subs`, which rereads them only when the store's
/// subscription counter moved. With the key manager (`security`: it and the gateway
/// token), the file also carries the `security:` section and every API's `auth:`.
pub async fn build(
    store: &Store,
    security: Option<(&crate::security::Security, &str)>,
    indexes: &mut Indexes,
) -> Result<Built, ApiError> {
    let no_commits = store.read_consistent().await;
    let started = Instant::now();
    let version = store.current_version().await?;
    indexes.apis.secure(security.is_some());
    let live = store.live_api_revisions().await?;
    let auth: HashMap<String, String> = match security {
        Some(_) => store.api_security_all().await?.into_iter().collect(),
        None => HashMap::new(),
    };
    let stale = indexes.apis.stale(&live, &auth);
    let fetched = store.apis_by_ids(&stale).await?;
    let apis_ms = started.elapsed().as_millis();
    let changes = store.subscription_changes().await?;
    let reread = subscriptions_reread(store, &indexes.subs, changes).await?;
    let subs_ms = started.elapsed().as_millis() - apis_ms;
    let sec_spec = match security {
        Some((sec, token)) => Some(crate::security::spec(store, sec, token).await?),
        None => None,
    };
    let security_ms = started.elapsed().as_millis() - apis_ms - subs_ms;
    let throttling = throttling_spec(store).await?;
    drop(no_commits);
    tracing::debug!(
        apis_ms,
        apis_refetched = fetched.len(),
        subs_ms,
        security_ms,
        throttling_ms = started.elapsed().as_millis() - apis_ms - subs_ms - security_ms,
        "control plane: snapshot reads"
    );
    let read_ms = started.elapsed().as_millis();
    let security = sec_spec.unwrap_or_default();
    // Hashing takes CPU: not on an async worker. The indexes go with the job and come
    // back; if the job dies they start empty and the next build rereads everything.
    let mut ix = std::mem::take(indexes);
    let job = tokio::task::spawn_blocking(move || {
        let input = Input {
            version,
            live,
            fetched,
            auth,
            security,
            throttling,
            changes,
            reread,
        };
        let built = assemble(input, &mut ix, started, read_ms);
        (ix, built)
    });
    let (ix, built) = job.await.map_err(|e| {
        tracing::error!(error = %e, "control plane: snapshot build task failed");
        ApiError::internal()
    })?;
    *indexes = ix;
    built
}

/// Log entries past which rereading every subscription is cheaper than the named APIs'.
const LOG_LIMIT: usize = 5_000;

/// What the subscription index needs from the store: nothing when the counter did not
/// move; else the rows of the APIs the log names since the index's position, or every row
/// (first build, or a change too large for the log). The log entries read are pruned.
async fn subscriptions_reread(
    store: &Store,
    index: &SubsIndex,
    changes: u64,
) -> Result<Reread, ApiError> {
    if index.changes() == Some(changes) {
        return Ok(Reread::Nothing);
    }
    let (log, apis) = match index.log_position() {
        Some(pos) => store.subscription_log_since(pos, LOG_LIMIT).await?,
        None => (store.subscription_log_position().await?, None),
    };
    let reread = match apis {
        Some(apis) => Reread::Apis {
            rows: store.subscriptions_of(&apis).await?,
            apis,
            log,
        },
        None => Reread::All {
            rows: store.all_subscriptions().await?,
            log,
        },
    };
    store.prune_subscription_log(log).await?;
    Ok(reread)
}

/// What builds keep from one to the next.
#[derive(Default)]
pub struct Indexes {
    apis: ApiIndex,
    subs: SubsIndex,
}

/// What the blocking half of a build works from.
struct Input {
    version: u64,
    live: Vec<(String, i64)>,
    fetched: Vec<turnpike_store::Api>,
    auth: HashMap<String, String>,
    security: turnpike_model::security::SecuritySpec,
    throttling: ThrottleSpec,
    changes: u64,
    reread: Reread,
}

/// The wire parts from what was read.
fn assemble(
    input: Input,
    ix: &mut Indexes,
    started: Instant,
    read_ms: u128,
) -> Result<Built, ApiError> {
    let internal = |what: &str, e: &dyn std::fmt::Display| {
        tracing::error!(error = %e, "control plane: snapshot {what}");
        ApiError::internal()
    };
    let refetched = input.fetched.len();
    ix.apis
        .update(&input.live, input.fetched, &input.auth)
        .map_err(|e| internal("API entry refused", &e))?;
    let subs = ix
        .subs
        .update(input.changes, input.reread, &ix.apis.snapshot_ids())
        .map_err(|e| internal("subscriptions cannot be bucketed", &e))?;
    let parts = Parts::assemble(
        None,
        ix.apis.parts(),
        &input.security,
        &input.throttling,
        ix.subs.buckets(),
    )
    .map_err(|e| internal("cannot be split for deltas", &e))?;
    let version = input.version;
    let manifest = Arc::new(parts.manifest(version));
    tracing::info!(
        version,
        apis = ix.apis.len(),
        apis_refetched = refetched,
        subscriptions = subs.rows,
        subscriptions_reread = subs.reread,
        subscription_apis_reread = subs.apis_reread,
        buckets_changed = subs.buckets_changed,
        read_ms,
        total_ms = started.elapsed().as_millis(),
        "control plane: snapshot built"
    );
    Ok(Built {
        version,
        hash: hash_hex(manifest.hash),
        parts,
        manifest,
        full: tokio::sync::OnceCell::new(),
    })
}

/// The `throttling:` section from the tiers table (seeded with WSO2's defaults) and each
/// application's tier. Subscriptions (with their tiers) travel in the `security:` section.
pub(crate) async fn throttling_spec(store: &Store) -> Result<ThrottleSpec, ApiError> {
    use turnpike_store::TierKind;
    let mut spec = ThrottleSpec::default();
    for t in store.list_tiers(TierKind::Subscription).await? {
        spec.subscription_tiers.push(SubscriptionTier {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            quota: tier_limit(&t),
            burst: tier_option(&t, "burst"),
            stop_on_quota: tier_option(&t, "stopOnQuota").unwrap_or(true),
        });
    }
    for t in store.list_tiers(TierKind::Application).await? {
        spec.application_tiers.push(ApplicationTier {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            quota: tier_limit(&t),
        });
    }
    for t in store.list_tiers(TierKind::Advanced).await? {
        spec.advanced_policies.push(AdvancedPolicy {
            name: t.name.clone(),
            description: Some(t.description.clone()).filter(|d| !d.is_empty()),
            default_limit: tier_limit(&t),
            groups: tier_option(&t, "conditionalGroups").unwrap_or_default(),
        });
    }
    // An application whose tier was deleted counts on no application tier rather than
    // making every gateway refuse the snapshot.
    spec.applications = store
        .application_tiers()
        .await?
        .into_iter()
        .filter(|(_, tier)| spec.application_tiers.iter().any(|t| &t.name == tier))
        .map(|(application, tier)| ApplicationThrottle { application, tier })
        .collect();
    crate::rest::throttle_settings::apply_to(store, &mut spec).await?;
    Ok(spec)
}

/// One of a tier's options in the file's type (checked when it was stored; a value that
/// no longer reads is left out and logged).
fn tier_option<T: serde::de::DeserializeOwned>(t: &turnpike_store::Tier, key: &str) -> Option<T> {
    let v = t.options.get(key)?;
    serde_json::from_value(v.clone())
        .map_err(|e| tracing::warn!(tier = %t.name, key, error = %e, "control plane: unreadable tier option"))
        .ok()
}

/// `request_count` (or the `dataAmount` option, bytes) per `unit_seconds` as the file
/// writes it (the largest whole unit); neither is unlimited.
fn tier_limit(t: &turnpike_store::Tier) -> Option<Limit> {
    let bytes: Option<u64> = tier_option(t, "dataAmount");
    let count = match bytes {
        Some(b) => b,
        None => u64::try_from(t.request_count?).unwrap_or(0),
    };
    let secs = u64::try_from(t.unit_seconds).unwrap_or(60).max(1);
    let unit = [
        TimeUnit::Month,
        TimeUnit::Day,
        TimeUnit::Hour,
        TimeUnit::Minute,
        TimeUnit::Second,
    ]
    .into_iter()
    .find(|u| secs % u.seconds() == 0)
    .unwrap_or(TimeUnit::Second);
    let limit = match bytes {
        Some(_) => Limit::bytes(count, unit),
        None => Limit::requests(count, unit),
    };
    Some(Limit {
        every: u32::try_from(secs / unit.seconds()).unwrap_or(u32::MAX),
        ..limit
    })
}

/// What one gateway last told us.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    pub id: String,
    pub serving_version: u64,
    pub serving_hash: String,
    pub last_seen_ms_ago: u64,
    /// Time from the commit of `serving_version` to the gateway reporting it, when this
    /// control plane saw the commit.
    pub last_convergence_ms: Option<u64>,
    pub up_to_date: bool,
    #[serde(skip)]
    last_seen: Option<Instant>,
}

/// Gateways and commit times.
#[derive(Default)]
pub struct Gateways {
    gateways: Mutex<HashMap<String, GatewayStatus>>,
    commits: Mutex<BTreeMap<u64, Instant>>,
}

impl Gateways {
    pub fn committed(&self, version: u64) {
        if let Ok(mut c) = self.commits.lock() {
            c.insert(version, Instant::now());
            while c.len() > 10_000 {
                c.pop_first();
            }
        }
    }

    fn report(&self, id: &str, version: u64, hash: &str) {
        let commit_at = self
            .commits
            .lock()
            .ok()
            .and_then(|c| c.get(&version).copied());
        let Ok(mut g) = self.gateways.lock() else {
            return;
        };
        let entry = g.entry(id.to_string()).or_insert_with(|| GatewayStatus {
            id: id.to_string(),
            serving_version: 0,
            serving_hash: String::new(),
            last_seen_ms_ago: 0,
            last_convergence_ms: None,
            up_to_date: false,
            last_seen: None,
        });
        if version != entry.serving_version {
            entry.last_convergence_ms = commit_at.map(|t| t.elapsed().as_millis() as u64);
        }
        entry.serving_version = version;
        entry.serving_hash = hash.to_string();
        entry.last_seen = Some(Instant::now());
    }

    pub fn list(&self, current: u64) -> Vec<GatewayStatus> {
        let Ok(g) = self.gateways.lock() else {
            return Vec::new();
        };
        let mut out: Vec<GatewayStatus> = g
            .values()
            .map(|s| {
                let mut s = s.clone();
                s.last_seen_ms_ago = s
                    .last_seen
                    .map(|t| t.elapsed().as_millis() as u64)
                    .unwrap_or(0);
                s.up_to_date = s.serving_version >= current;
                s
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }
}

/// The last built snapshot, reused until the version moves, and the subscription index
/// builds update.
#[derive(Default)]
pub struct Cache {
    last: tokio::sync::Mutex<Last>,
    deltas: crate::snapshot::delta::Deltas,
    /// How long the last build took.
    last_build_ms: AtomicU64,
}

#[derive(Default)]
struct Last {
    built: Option<Arc<Built>>,
    indexes: Indexes,
}

impl Cache {
    async fn get(&self, s: &AppState, at_least: u64) -> Result<Arc<Built>, ApiError> {
        let mut last = self.last.lock().await;
        if let Some(b) = last.built.as_ref().filter(|b| b.version >= at_least) {
            return Ok(b.clone());
        }
        // One change is often several commits (create, secure, publish): when a build is
        // slow, wait a tenth of it (at most 250 ms) so one build takes them all.
        let pause = self.last_build_ms.load(Ordering::Relaxed) / 10;
        if pause > 0 {
            tokio::time::sleep(Duration::from_millis(pause.min(250))).await;
        }
        let security = s
            .inner
            .security
            .get()
            .map(|sec| (sec, s.inner.config.gateway_token.as_str()));
        let started = Instant::now();
        let b = Arc::new(build(&s.inner.store, security, &mut last.indexes).await?);
        self.last_build_ms
            .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.deltas.built(&b);
        last.built = Some(b.clone());
        Ok(b)
    }
}

pub fn routes() -> Router<AppState> {
    Router::new().route("/snapshot", get(snapshot))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn snapshot(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let token = header(&headers, "authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(ApiError::unauthorized)?;
    let expected = s.inner.config.gateway_token.as_bytes();
    if expected.is_empty() || !constant_time_eq(token.trim().as_bytes(), expected) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "bad gateway token",
        ));
    }
    let after = match q.get("after") {
        None => 0,
        Some(a) => a
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request("after must be a version number"))?,
    };
    let wait = q
        .get("wait")
        .and_then(|w| w.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(s.inner.config.long_poll)
        .min(s.inner.config.long_poll);
    if let Some(id) = header(&headers, GATEWAY_HEADER) {
        let serving = header(&headers, SERVING_HEADER)
            .and_then(|v| v.parse().ok())
            .unwrap_or(after);
        let hash = header(&headers, SERVING_HASH_HEADER).unwrap_or("");
        s.inner
            .gateways
            .report(&id.chars().take(100).collect::<String>(), serving, hash);
    }
    let mut rx = s.inner.store.watch_version();
    let current = *rx.borrow_and_update();
    // A cursor from the future (another database, a restore) gets a full resync.
    if current == after {
        let mut closing = s.inner.closing.subscribe();
        let waited = tokio::select! {
            w = tokio::time::timeout(wait, rx.wait_for(|v| *v > after)) => matches!(w, Ok(Ok(_))),
            _ = closing.wait_for(|c| *c) => {
                return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the control plane is stopping; retry"));
            }
        };
        if !waited {
            let v = HeaderValue::from(current);
            return Ok((StatusCode::NOT_MODIFIED, [(VERSION_HEADER, v)]).into_response());
        }
    }
    let latest = *rx.borrow();
    let built = s.inner.snapshots.get(&s, latest).await?;
    let hash = HeaderValue::from_str(&built.hash).unwrap_or(HeaderValue::from_static(""));
    let delta = header(&headers, turnpike_sync::ACCEPT_DELTA_HEADER)
        .zip(header(&headers, SERVING_HEADER).and_then(|v| v.parse::<u64>().ok()))
        .zip(header(&headers, SERVING_HASH_HEADER))
        .and_then(|((_, base), base_hash)| s.inner.snapshots.deltas.delta(&built, base, base_hash));
    let (kind, body) = match delta {
        Some(d) => ("delta", d),
        None => ("full", built.full_body().await?),
    };
    Ok((
        StatusCode::OK,
        [
            (
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                http::header::HeaderName::from_static(VERSION_HEADER),
                HeaderValue::from(built.version),
            ),
            (http::header::HeaderName::from_static(HASH_HEADER), hash),
            (
                http::header::HeaderName::from_static(turnpike_sync::KIND_HEADER),
                HeaderValue::from_static(kind),
            ),
        ],
        body,
    )
        .into_response())
}
