//! The last good snapshot on disk, so that a gateway restarted while its control plane is
//! down starts serving what it served before instead of nothing. One JSON file: the
//! version, the structural hash the control plane announced for it and the declarative
//! file. It is written after each swap by a background writer (only the newest pending
//! snapshot is written: a burst of changes costs one write), to a temporary file that is
//! synced and renamed over the old one, readable by its owner only (it holds key hashes).
//! On start it is used only if the file it holds splits back into the same hash: a
//! truncated, edited or half-written file is ignored, never served.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use turnpike_config::GatewayFile;

use crate::wire::{hash_hex, Parts};

/// Format of the saved file; another value is ignored on start.
const SAVED_FORMAT: u32 = 1;

/// Why a saved snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a saved snapshot: {reason}")]
    Malformed { path: String, reason: String },
    #[error("{path}: the content hashes to {held}, the file says {saved}; ignored")]
    HashMismatch {
        path: String,
        held: String,
        saved: String,
    },
}

#[derive(Serialize)]
struct SavedRef<'a> {
    format: u32,
    version: u64,
    hash: &'a str,
    file: FileView<'a>,
}

/// The file `parts` hold, serialized as [`Parts::to_file`]'s file would be but straight
/// from the parts: a million subscriptions are written from their buckets, never copied
/// into a `GatewayFile` (about 200 MiB at that scale, after every swap).
struct FileView<'a>(&'a Parts);

/// One object of sections (`security`, `throttling`), the subscriptions appended to
/// `security`'s.
struct SectionView<'a> {
    fields: Vec<(&'a str, &'a serde_json::Value)>,
    subscriptions: Option<&'a [Arc<crate::wire::Bucket>]>,
}

impl Serialize for FileView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (mut security, mut throttling) = (Vec::new(), Vec::new());
        let mut map = s.serialize_map(None)?;
        for (name, (v, _)) in &self.0.sections {
            if let Some(k) = name.strip_prefix("security.") {
                // (An empty list there: the rows are in the buckets, written below.)
                if k != "subscriptions" {
                    security.push((k, v));
                }
            } else if let Some(k) = name.strip_prefix("throttling.") {
                throttling.push((k, v));
            } else if name != "security" && name != "throttling" {
                // (Those two are the prefixed sections, as in `Parts::wide_file`.)
                map.serialize_entry(name, v)?;
            }
        }
        let apis = self.0.apis.values().map(|(a, _)| a);
        map.serialize_entry("apis", &Seq(std::cell::Cell::new(Some(apis))))?;
        let security = SectionView {
            fields: security,
            subscriptions: Some(&self.0.buckets),
        };
        map.serialize_entry("security", &security)?;
        let throttling = SectionView {
            fields: throttling,
            subscriptions: None,
        };
        map.serialize_entry("throttling", &throttling)?;
        map.end()
    }
}

impl Serialize for SectionView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        if let Some(buckets) = self.subscriptions {
            let subs = buckets.iter().flat_map(|b| b.subs.iter());
            map.serialize_entry("subscriptions", &Seq(std::cell::Cell::new(Some(subs))))?;
        }
        map.end()
    }
}

/// An iterator serialized as a sequence (once).
struct Seq<I>(std::cell::Cell<Option<I>>);

impl<I> Serialize for Seq<I>
where
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.take() {
            Some(items) => s.collect_seq(items),
            None => s.collect_seq(std::iter::empty::<I::Item>()),
        }
    }
}

#[derive(Deserialize)]
struct SavedOwned {
    format: u32,
    version: u64,
    hash: String,
    file: GatewayFile,
}

/// A snapshot read back from disk, its hash verified.
pub(crate) struct Restored {
    pub version: u64,
    pub hash: String,
    pub file: GatewayFile,
    pub parts: Parts,
}

/// Reads and verifies the saved snapshot; `Ok(None)` when there is none yet.
pub(crate) fn load(path: &Path) -> Result<Option<Restored>, SavedError> {
    let shown = || path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SavedError::Read {
                path: shown(),
                source,
            })
        }
    };
    let malformed = |reason: String| SavedError::Malformed {
        path: shown(),
        reason,
    };
    let saved: SavedOwned = serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
    if saved.format != SAVED_FORMAT {
        return Err(malformed(format!(
            "format {} is not {SAVED_FORMAT}",
            saved.format
        )));
    }
    let parts = Parts::from_file(&saved.file).map_err(|e| malformed(e.to_string()))?;
    let held = hash_hex(parts.hash());
    if held != saved.hash {
        return Err(SavedError::HashMismatch {
            path: shown(),
            held,
            saved: saved.hash,
        });
    }
    Ok(Some(Restored {
        version: saved.version,
        hash: saved.hash,
        file: saved.file,
        parts,
    }))
}

/// Writes `parts` as version `version` (hash `hash`) atomically: a temporary file in the
/// same directory, synced, then renamed over `path`.
pub(crate) fn save(path: &Path, version: u64, hash: &str, parts: &Parts) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = (|| {
        let mut out = std::io::BufWriter::new(options.open(&tmp)?);
        let saved = SavedRef {
            format: SAVED_FORMAT,
            version,
            hash,
            file: FileView(parts),
        };
        serde_json::to_writer(&mut out, &saved).map_err(std::io::Error::other)?;
        out.flush()?;
        out.get_ref().sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// What the writer is asked to write next.
struct Pending {
    version: u64,
    hash: String,
    parts: Arc<Parts>,
}

/// Hands snapshots to the background writer; only the newest one not yet written is kept.
#[derive(Clone)]
pub(crate) struct Saver {
    pending: Arc<Mutex<Option<Pending>>>,
    wake: Arc<Notify>,
}

impl Saver {
    /// Starts the writer task for `path`; it ends when every `Saver` is dropped.
    pub(crate) fn spawn(path: PathBuf) -> Saver {
        let saver = Saver {
            pending: Arc::default(),
            wake: Arc::default(),
        };
        let pending = Arc::downgrade(&saver.pending);
        let wake = saver.wake.clone();
        tokio::spawn(async move {
            loop {
                wake.notified().await;
                let Some(pending) = pending.upgrade() else {
                    return;
                };
                let next = pending.lock().unwrap_or_else(|p| p.into_inner()).take();
                drop(pending);
                let Some(next) = next else { continue };
                let path = path.clone();
                let job = tokio::task::spawn_blocking(move || {
                    save(&path, next.version, &next.hash, &next.parts)
                        .map(|()| next.version)
                        .map_err(|e| (path, e))
                });
                match job.await {
                    Ok(Ok(version)) => tracing::debug!(version, "sync: snapshot saved to disk"),
                    Ok(Err((path, e))) => tracing::warn!(path = %path.display(), error = %e,
                        "sync: cannot save the snapshot; a restart while the control plane is down would start empty"),
                    Err(e) => tracing::warn!(error = %e, "sync: snapshot writer failed"),
                }
            }
        });
        saver
    }

    /// Asks for `parts` to be written (replacing any older request not yet written).
    pub(crate) fn offer(&self, version: u64, hash: String, parts: Arc<Parts>) {
        *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(Pending {
            version,
            hash,
            parts,
        });
        self.wake.notify_one();
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        // Lets the writer see the last `Saver` is gone (it holds only a weak reference).
        self.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts_of(yaml_apis: usize) -> (GatewayFile, Parts) {
        let mut file = GatewayFile::default();
        for i in 0..yaml_apis {
            file.apis.push(turnpike_model::ApiSpec {
                name: format!("a{i}"),
                context: format!("/a{i}"),
                version: "v1".into(),
                endpoints: vec!["http://127.0.0.1:9".into()],
                ..Default::default()
            });
        }
        let parts = Parts::from_file(&file).expect("splits");
        (file, parts)
    }

    #[test]
    fn a_saved_snapshot_reads_back_with_its_version_and_hash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state/snapshot.json");
        assert!(load(&path).expect("no file is no snapshot").is_none());
        let (file, parts) = parts_of(3);
        let hash = hash_hex(parts.hash());
        save(&path, 42, &hash, &parts).expect("saved");
        let back = load(&path).expect("reads").expect("present");
        assert_eq!((back.version, back.hash.as_str()), (42, hash.as_str()));
        assert_eq!(back.file.apis.len(), file.apis.len());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    /// Written straight from the parts, the file reads back as the file the parts were
    /// split from: every section, API and subscription, the same hash.
    #[test]
    fn a_file_written_from_parts_reads_back_whole() {
        let (mut file, _) = parts_of(5);
        for i in 0..300 {
            file.security
                .subscriptions
                .push(turnpike_model::security::SubscriptionSpec {
                    api: format!("/a{}/v1", i % 5),
                    application: format!("app{i}"),
                    state: "ACTIVE".into(),
                    tier: "Gold".into(),
                });
        }
        file.security.revoked = vec!["jti-1".into()];
        file.throttling.unauthenticated_tier = Some("Bronze".into());
        let parts = Parts::from_file(&file).expect("splits");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("snapshot.json");
        let hash = hash_hex(parts.hash());
        save(&path, 3, &hash, &parts).expect("saved");
        let back = load(&path).expect("reads").expect("present");
        assert_eq!(back.parts, parts);
        let mut want = parts.to_file().expect("file");
        let mut got = back.file;
        for f in [&mut want, &mut got] {
            f.security
                .subscriptions
                .sort_by(|a, b| (&a.api, &a.application).cmp(&(&b.api, &b.application)));
        }
        assert_eq!(got, want);
        assert_eq!(got.security.subscriptions.len(), 300);
    }

    #[test]
    fn a_damaged_or_edited_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("snapshot.json");
        let (_, parts) = parts_of(2);
        let hash = hash_hex(parts.hash());
        save(&path, 7, &hash, &parts).expect("saved");
        let text = std::fs::read_to_string(&path).expect("read");
        // An edit that keeps the JSON valid: the hash catches it.
        std::fs::write(&path, text.replace("/a1", "/zz")).expect("write");
        assert!(matches!(load(&path), Err(SavedError::HashMismatch { .. })));
        // A truncated write.
        std::fs::write(&path, &text[..text.len() / 2]).expect("write");
        assert!(matches!(load(&path), Err(SavedError::Malformed { .. })));
    }
}
