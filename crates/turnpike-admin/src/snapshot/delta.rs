//! Deltas for gateways that already hold a snapshot: the control plane remembers the
//! [`Manifest`] (hashes only: about 50 bytes per API plus 32 KiB of bucket hashes) of the
//! last [`HISTORY`] versions it built, and answers a gateway that names one of them (with
//! the same hash) with a [`turnpike_sync::wire::Delta`] instead of the whole file. Deltas
//! to the current version are built once per base and shared by every gateway asking.
//! Every built manifest is also kept in the store (`snapshot_manifests`, pruned by the
//! leader): after a restart, or for a gateway that followed another control plane, a
//! base missing here is read back from there ([`Deltas::remember`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use turnpike_sync::wire::{hash_hex, Manifest};

use crate::snapshot::build::Built;

/// Versions a gateway may be behind and still get a delta.
pub const HISTORY: usize = 64;

/// Manifests of recent versions and the deltas already encoded against the latest.
#[derive(Default)]
pub struct Deltas {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    history: VecDeque<Arc<Manifest>>,
    /// For `to_version`: encoded delta per base version.
    to_version: u64,
    encoded: HashMap<(u64, String), Bytes>,
}

impl Deltas {
    /// Remembers a freshly built snapshot.
    pub fn built(&self, b: &Built) {
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        if g.history.back().is_some_and(|m| m.version >= b.version) {
            return;
        }
        g.history.push_back(b.manifest.clone());
        while g.history.len() > HISTORY {
            g.history.pop_front();
        }
    }

    /// Whether the manifest of `base` served with `base_hash` is held here.
    pub fn knows(&self, base: u64, base_hash: &str) -> bool {
        self.inner.lock().is_ok_and(|g| {
            g.history
                .iter()
                .any(|m| m.version == base && hash_hex(m.hash) == base_hash)
        })
    }

    /// Adds an older version's manifest (read back from the store) in version order,
    /// within the same bound.
    pub fn remember(&self, m: Manifest) {
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        let at = g.history.partition_point(|h| h.version < m.version);
        if g.history.get(at).is_some_and(|h| h.version == m.version) {
            return;
        }
        g.history.insert(at, Arc::new(m));
        while g.history.len() > HISTORY {
            g.history.pop_front();
        }
    }

    /// The delta from `base` (served with `base_hash`) to `b`, or `None` when the base is
    /// unknown, too old or its hash differs: the gateway then gets the full file.
    pub fn delta(&self, b: &Built, base: u64, base_hash: &str) -> Option<Bytes> {
        if base >= b.version {
            return None;
        }
        let mut g = self.inner.lock().ok()?;
        if g.to_version != b.version {
            g.to_version = b.version;
            g.encoded.clear();
        }
        let key = (base, base_hash.to_string());
        if let Some(body) = g.encoded.get(&key) {
            return Some(body.clone());
        }
        let m = g
            .history
            .iter()
            .find(|m| m.version == base && hash_hex(m.hash) == base_hash)?
            .clone();
        let d = b.parts.delta_from(&m, b.version);
        // Everything changed: the whole file is as good and simpler for the gateway.
        if d.apis.len() == b.parts.apis.len() && d.subscriptions.len() == b.parts.buckets.len() {
            return None;
        }
        let body = Bytes::from(serde_json::to_vec(&d).ok()?);
        g.encoded.insert(key, body.clone());
        Some(body)
    }
}
