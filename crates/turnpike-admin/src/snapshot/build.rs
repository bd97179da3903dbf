//! One snapshot build: what changed since the last build read from the store, the API
//! entries and subscription buckets updated in their indexes (`index.rs`, `subs.rs`), and
//! the file split into wire parts (`turnpike_sync::wire`), hashed off the async workers.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use turnpike_model::throttling::ThrottleSpec;
use turnpike_store::Store;
use turnpike_sync::wire::{hash_hex, Manifest, Parts};

use crate::error::ApiError;
use crate::snapshot::index::ApiIndex;
use crate::snapshot::subs::{Reread, SubsIndex};
use crate::snapshot::throttling::throttling_spec;

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
    let started = Instant::now();
    // Another control plane may commit during the reads (this process's writers wait on
    // the lock): read again until the version did not move, so that one version always
    // means one content on every control plane (and its hash matches theirs).
    let mut tries = 0;
    let (version, reads) = loop {
        let (version, reads) = read(store, security, indexes).await?;
        tries += 1;
        if tries >= MAX_READS
            || store.backend() != turnpike_store::Backend::Postgres
            || store.current_version().await? == version
        {
            break (version, reads);
        }
    };
    let Reads {
        live,
        fetched,
        auth,
        changes,
        reread,
        sec_spec,
        throttling,
    } = reads;
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

/// Reads of one build attempt before the version is checked again.
const MAX_READS: usize = 3;

/// What one build reads from the store.
struct Reads {
    live: Vec<(String, i64)>,
    fetched: Vec<turnpike_store::Api>,
    auth: HashMap<String, String>,
    changes: u64,
    reread: Reread,
    sec_spec: Option<turnpike_model::security::SecuritySpec>,
    throttling: ThrottleSpec,
}

/// The version and everything a build reads, with no commit of this process in between.
async fn read(
    store: &Store,
    security: Option<(&crate::security::Security, &str)>,
    indexes: &mut Indexes,
) -> Result<(u64, Reads), ApiError> {
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
        Some((sec, token)) => {
            let bound = auth.values().any(|a| crate::security::binds_resources(a));
            Some(crate::security::spec(store, sec, token, bound).await?)
        }
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
    let reads = Reads {
        live,
        fetched,
        auth,
        changes,
        reread,
        sec_spec,
        throttling,
    };
    Ok((version, reads))
}

/// Log entries past which rereading every subscription is cheaper than the named APIs'.
const LOG_LIMIT: usize = 5_000;

/// What the subscription index needs from the store: nothing when the counter did not
/// move; else the rows of the APIs the log names since the index's position, or every row
/// (first build, or a change too large for the log, or pruned past the index's
/// position). Pruning is the leader's (`turnpike_store::Store::maintain`): another
/// control plane may not have read the entries yet.
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
