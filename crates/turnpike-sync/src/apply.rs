//! The follower's blocking step: a response body (a delta or a full file) applied to the
//! parts it holds, checked against the announced hash, and compiled. A delta compiles
//! only what it changed (`turnpike_config::compile_changes`): every API whose entry, own
//! subscriptions and file-wide inputs are as they were keeps the served snapshot's
//! `Arc<CompiledApi>`, and the subscription table is carried over by changed row
//! (`carry.rs`). No whole `GatewayFile` is made for a delta: only the file-wide sections
//! and the changed APIs are copied.

use std::sync::Arc;
use std::time::Instant;

use turnpike_config::{ApiEntry, GatewayFile, PolicyRuntime, Snapshot};

use crate::wire::{hash_hex, Delta, Parts};

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
    #[error("delta to {version} not applied: {reason}; fetching a full snapshot")]
    Delta { version: u64, reason: String },
}

/// What the blocking apply + compile step hands back.
pub(crate) struct Installed {
    pub parts: Option<Arc<Parts>>,
    pub hash: String,
    pub snapshot: Snapshot,
    pub apis: usize,
    /// APIs compiled (the others were reused from the served snapshot).
    pub compiled: usize,
}

/// Turns a response body into a compiled snapshot and the parts it was compiled from.
/// `served` is the snapshot compiled from `base`.
pub(crate) fn build(
    version: u64,
    body: &[u8],
    hash: String,
    base: Option<Arc<Parts>>,
    served: &Snapshot,
    runtime: &PolicyRuntime,
) -> Result<Installed, SyncError> {
    let (parts, hash, snapshot) = match base {
        Some(parts) => apply_delta(version, body, hash, parts, served, runtime)?,
        None => full(version, body, hash, runtime)?,
    };
    Ok(Installed {
        apis: snapshot.apis.len(),
        compiled: snapshot.compiled_apis(),
        parts,
        hash,
        snapshot,
    })
}

type Built = (Option<Arc<Parts>>, String, Snapshot);

fn apply_delta(
    version: u64,
    body: &[u8],
    hash: String,
    mut parts: Arc<Parts>,
    served: &Snapshot,
    runtime: &PolicyRuntime,
) -> Result<Built, SyncError> {
    let bad = |reason: String| SyncError::Delta { version, reason };
    let started = Instant::now();
    let d: Delta = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
    // Shared pointers: the buckets as they were, to tell what the delta changed.
    let buckets_before = parts.buckets.clone();
    // Copies the parts only while the disk writer still holds them.
    let held = Arc::make_mut(&mut parts);
    held.apply(d).map_err(|e| bad(e.to_string()))?;
    let held = hash_hex(held.hash());
    if held != hash {
        return Err(bad(format!("hash {held} after applying, announced {hash}")));
    }
    let applied = started.elapsed();
    let table = served
        .subscriptions()
        .and_then(|t| crate::carry::carry(&t, &buckets_before, &parts.buckets));
    drop(buckets_before);
    let carried = started.elapsed();
    let snapshot = match table {
        Some(table) => compile_changes(version, &parts, served, runtime, table)?,
        // A changed row the table cannot take: the whole file names the problem.
        None => compile_whole(version, &parts, runtime)?,
    };
    tracing::debug!(
        version,
        parse_apply_ms = applied.as_secs_f64() * 1e3,
        carry_ms = (carried - applied).as_secs_f64() * 1e3,
        compile_ms = (started.elapsed() - carried).as_secs_f64() * 1e3,
        compiled = snapshot.compiled_apis(),
        apis = snapshot.apis.len(),
        "sync: delta applied"
    );
    Ok((Some(parts), hash, snapshot))
}

/// Compiles what the delta changed, reusing the rest of `served`; on a problem, the whole
/// file again (so the problems are reported as a full compile reports them).
fn compile_changes(
    version: u64,
    parts: &Parts,
    served: &Snapshot,
    runtime: &PolicyRuntime,
    table: Arc<turnpike_config::Subscriptions>,
) -> Result<Snapshot, SyncError> {
    let invalid = |reason: String| SyncError::Invalid { version, reason };
    let entries = entries(parts);
    let sections = parts.sections_hash();
    let wide = || parts.wide_file().map_err(|e| invalid(e.to_string()));
    let compile = |prev: &Snapshot, wide: GatewayFile| {
        turnpike_config::compile_changes(
            prev,
            wide,
            sections,
            &entries,
            version,
            runtime,
            table.clone(),
        )
    };
    match compile(served, wide()?) {
        Ok(s) => Ok(s),
        Err(_) => compile(&Snapshot::default(), wide()?).map_err(|e| invalid(e.to_string())),
    }
}

/// The whole file compiled from `parts` (subscriptions included).
fn compile_whole(
    version: u64,
    parts: &Parts,
    runtime: &PolicyRuntime,
) -> Result<Snapshot, SyncError> {
    let invalid = |reason: String| SyncError::Invalid { version, reason };
    let file = parts.to_file().map_err(|e| invalid(e.to_string()))?;
    let snapshot = turnpike_config::compile_with(file, version, runtime)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(remember(snapshot, parts))
}

fn full(
    version: u64,
    body: &[u8],
    hash: String,
    runtime: &PolicyRuntime,
) -> Result<Built, SyncError> {
    let invalid = |reason: String| SyncError::Invalid { version, reason };
    let file: GatewayFile = serde_json::from_slice(body).map_err(|e| invalid(e.to_string()))?;
    let (parts, hash) = match Parts::from_file(&file) {
        Ok(p) if hash_hex(p.hash()) == hash => (Some(p), hash),
        Ok(p) => {
            // Still served, but deltas against it cannot be checked: the control
            // plane sees this hash differ from its own and keeps sending full files.
            let held = hash_hex(p.hash());
            tracing::warn!(%held, announced = %hash, "sync: full snapshot hash differs; deltas off");
            (None, held)
        }
        Err(e) => {
            tracing::warn!(error = %e, "sync: snapshot cannot take deltas");
            (None, hash)
        }
    };
    let snapshot = turnpike_config::compile_with(file, version, runtime)
        .map_err(|e| invalid(e.to_string()))?;
    let snapshot = match &parts {
        Some(p) => remember(snapshot, p),
        None => snapshot,
    };
    Ok((parts.map(Arc::new), hash, snapshot))
}

/// Every API of `parts` with its id and entry hash, in id order (the file's order).
fn entries(parts: &Parts) -> Vec<ApiEntry<'_>> {
    parts
        .apis
        .iter()
        .map(|(id, (spec, hash))| ApiEntry {
            id,
            spec,
            hash: *hash,
        })
        .collect()
}

/// `snapshot` (compiled from the whole file of `parts`) with each API's reuse key, so the
/// next delta compiles only what it changes.
pub(crate) fn remember(snapshot: Snapshot, parts: &Parts) -> Snapshot {
    snapshot.remember_apis(parts.sections_hash(), &entries(parts))
}
