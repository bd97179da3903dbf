//! A certificate and key read from files and read again when either file changes: the
//! server side of every listener and the client side of mTLS. A handshake loads the
//! current pair from an `ArcSwap` (no lock); at most once per [`CHECK_EVERY`] one
//! handshake (the one that wins a compare-and-swap on the next check time) compares the
//! files' modification times and, when they moved, reads and swaps the new pair. A pair
//! that does not load (a half-written rotation, a key that does not match) is logged and
//! the previous one kept; the next change of either file is tried again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use rustls::sign::CertifiedKey;

use crate::files::{read_certs, read_key};
use crate::TlsError;

/// How often the files are looked at.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

type Stamp = (Option<SystemTime>, Option<SystemTime>, u64, u64);

#[derive(Debug)]
pub(crate) struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    current: ArcSwap<CertifiedKey>,
    /// What the files looked like when `current` was read (or last failed to load).
    stamp: Mutex<Stamp>,
    started: Instant,
    /// Milliseconds after `started` before which no handshake looks at the files.
    next_check_ms: AtomicU64,
    /// Pairs swapped in after the first (a test and an operator can read it).
    reloads: AtomicU64,
}

fn stamp_of(cert: &std::path::Path, key: &std::path::Path) -> Stamp {
    let meta = |p: &std::path::Path| std::fs::metadata(p).ok();
    let (c, k) = (meta(cert), meta(key));
    (
        c.as_ref().and_then(|m| m.modified().ok()),
        k.as_ref().and_then(|m| m.modified().ok()),
        c.map_or(0, |m| m.len()),
        k.map_or(0, |m| m.len()),
    )
}

fn load(cert: &std::path::Path, key: &std::path::Path) -> Result<CertifiedKey, TlsError> {
    let certs = read_certs(cert)?;
    let key = read_key(key)?;
    Ok(CertifiedKey::from_der(certs, key, &crate::provider())?)
}

impl Reloading {
    /// Reads the pair now: a listener does not start on files that do not load.
    pub(crate) fn new(cert: PathBuf, key: PathBuf) -> Result<Arc<Reloading>, TlsError> {
        let stamp = stamp_of(&cert, &key);
        let first = load(&cert, &key)?;
        Ok(Arc::new(Reloading {
            cert,
            key,
            current: ArcSwap::from_pointee(first),
            stamp: Mutex::new(stamp),
            started: Instant::now(),
            next_check_ms: AtomicU64::new(CHECK_EVERY.as_millis() as u64),
            reloads: AtomicU64::new(0),
        }))
    }

    /// The pair to present, after looking at the files if it is time to.
    pub(crate) fn get(&self) -> Arc<CertifiedKey> {
        self.maybe_reload();
        self.current.load_full()
    }

    pub(crate) fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    fn maybe_reload(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        let next = self.next_check_ms.load(Ordering::Relaxed);
        if now < next {
            return;
        }
        let later = now + CHECK_EVERY.as_millis() as u64;
        if self
            .next_check_ms
            .compare_exchange(next, later, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let stamp = stamp_of(&self.cert, &self.key);
        let Ok(mut seen) = self.stamp.lock() else {
            return;
        };
        if *seen == stamp {
            return;
        }
        *seen = stamp;
        match load(&self.cert, &self.key) {
            Ok(pair) => {
                self.current.store(Arc::new(pair));
                self.reloads.fetch_add(1, Ordering::Relaxed);
                tracing::info!(cert = %self.cert.display(), "tls: certificate reloaded");
            }
            Err(e) => {
                tracing::warn!(cert = %self.cert.display(), error = %e, "tls: the changed certificate does not load; keeping the previous one");
            }
        }
    }
}

impl rustls::server::ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

impl rustls::client::ResolvesClientCert for Reloading {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }

    fn has_certs(&self) -> bool {
        true
    }
}
