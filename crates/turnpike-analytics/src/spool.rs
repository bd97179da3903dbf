//! Shipments waiting for the control plane. While it is unreachable, every shipment the
//! gateway makes (a JSON body of rollup rows or events) is kept here, in order, and sent
//! oldest first once it answers again: a control-plane outage within the bounds loses
//! nothing and keeps the order. Bounded twice ([`SpoolSettings`]): shipments older than
//! `max_age` are dropped (the control plane's rollups of that time are closed anyway),
//! and past `max_bytes` the oldest go first, as the gateway's event queue does. Whatever
//! is dropped is counted by the requests it summed ([`SpoolStats`], exposed as
//! `turnpike_analytics_spool_dropped_total` on the gateway's `/metrics`).
//!
//! With a directory (the gateway's data dir) each waiting shipment is one file, named
//! `{seq}-{unix ms}-{requests}.json`, written to a temporary name and renamed (never
//! read half-written), so the backlog also survives a gateway restart; without one it is
//! kept in memory. Nothing touches the disk while the control plane answers: a shipment
//! is spooled only after its first POST failed.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;

/// How long and how much to keep while the control plane is unreachable.
#[derive(Debug, Clone)]
pub struct SpoolSettings {
    /// A shipment older than this is dropped (counted).
    pub max_age: Duration,
    /// Bytes kept at most (the oldest dropped first, counted).
    pub max_bytes: u64,
    /// Where shipments wait (one file each); `None`: in memory.
    pub dir: Option<PathBuf>,
}

impl Default for SpoolSettings {
    fn default() -> Self {
        SpoolSettings {
            max_age: Duration::from_secs(600),
            max_bytes: 64 << 20,
            dir: None,
        }
    }
}

/// What the spool holds and what it dropped, in requests (summed by the rows dropped).
#[derive(Debug, Default)]
pub struct SpoolStats {
    pub dropped_age: AtomicU64,
    pub dropped_size: AtomicU64,
    /// Shipments that could not be spooled or read back (disk errors).
    pub dropped_io: AtomicU64,
    pub waiting_requests: AtomicU64,
    pub waiting_bytes: AtomicU64,
}

impl SpoolStats {
    /// Prometheus text for the gateway's `/metrics`.
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP turnpike_analytics_spool_dropped_total Requests whose analytics were dropped while the control plane was unreachable (age: older than the buffer's age bound; size: pushed out by the byte bound; io: a disk error)\n# TYPE turnpike_analytics_spool_dropped_total counter"
        );
        for (reason, n) in [
            ("age", &self.dropped_age),
            ("size", &self.dropped_size),
            ("io", &self.dropped_io),
        ] {
            let _ = writeln!(
                out,
                "turnpike_analytics_spool_dropped_total{{reason=\"{reason}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP turnpike_analytics_spool_requests Requests whose analytics wait for the control plane\n# TYPE turnpike_analytics_spool_requests gauge\nturnpike_analytics_spool_requests {}\n# HELP turnpike_analytics_spool_bytes Bytes of analytics waiting for the control plane\n# TYPE turnpike_analytics_spool_bytes gauge\nturnpike_analytics_spool_bytes {}",
            self.waiting_requests.load(Ordering::Relaxed),
            self.waiting_bytes.load(Ordering::Relaxed)
        );
    }
}

/// One waiting shipment.
struct Entry {
    seq: u64,
    at: SystemTime,
    requests: u64,
    len: u64,
    /// `None`: in its file.
    body: Option<Bytes>,
}

/// The waiting shipments, oldest first.
pub(crate) struct Spool {
    settings: SpoolSettings,
    entries: VecDeque<Entry>,
    bytes: u64,
    next_seq: u64,
    stats: Arc<SpoolStats>,
}

#[derive(Clone, Copy)]
enum Dropped {
    Age,
    Size,
    Io,
}

impl Spool {
    /// Opens the spool, taking up what a previous run left in its directory.
    pub(crate) fn open(settings: SpoolSettings) -> Spool {
        let mut spool = Spool {
            entries: VecDeque::new(),
            bytes: 0,
            next_seq: 0,
            stats: Arc::default(),
            settings,
        };
        if let Some(dir) = spool.settings.dir.clone() {
            spool.take_up(&dir);
        }
        spool
    }

    pub(crate) fn stats(&self) -> Arc<SpoolStats> {
        self.stats.clone()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Files of a previous run, in their order (unreadable names are left alone).
    fn take_up(&mut self, dir: &Path) {
        let Ok(list) = std::fs::read_dir(dir) else {
            return;
        };
        for f in list.flatten() {
            let name = f.file_name();
            let Some(entry) = name.to_str().and_then(parse_name) else {
                continue;
            };
            let Ok(meta) = f.metadata() else { continue };
            self.next_seq = self.next_seq.max(entry.0 + 1);
            self.entries.push_back(Entry {
                seq: entry.0,
                at: entry.1,
                requests: entry.2,
                len: meta.len(),
                body: None,
            });
        }
        self.entries.make_contiguous().sort_by_key(|e| e.seq);
        self.bytes = self.entries.iter().map(|e| e.len).sum();
        if !self.entries.is_empty() {
            tracing::info!(
                shipments = self.entries.len(),
                "analytics: shipments left by the previous run will be sent"
            );
        }
        self.update_gauges();
    }

    /// Keeps `body` (summing `requests`) behind the others; drops the oldest past the
    /// byte bound.
    pub(crate) async fn push(&mut self, body: Bytes, requests: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let at = SystemTime::now();
        let len = body.len() as u64;
        let body = match &self.settings.dir {
            None => Some(body),
            Some(dir) => {
                let path = dir.join(file_name(seq, at, requests));
                match write_file(path, body).await {
                    Ok(()) => None,
                    Err(e) => {
                        tracing::warn!(error = %e, requests, "analytics: cannot spool a shipment; dropped");
                        self.count(Dropped::Io, requests);
                        return;
                    }
                }
            }
        };
        self.entries.push_back(Entry {
            seq,
            at,
            requests,
            len,
            body,
        });
        self.bytes += len;
        while self.bytes > self.settings.max_bytes && self.entries.len() > 1 {
            self.drop_front(Dropped::Size).await;
        }
        self.update_gauges();
    }

    /// Drops what is older than the age bound.
    pub(crate) async fn expire(&mut self) {
        let max = self.settings.max_age;
        while let Some(e) = self.entries.front() {
            if e.at.elapsed().unwrap_or_default() <= max {
                break;
            }
            self.drop_front(Dropped::Age).await;
        }
        self.update_gauges();
    }

    /// The oldest shipment's body (read from its file); one that cannot be read is
    /// dropped (counted) and the next one tried.
    pub(crate) async fn front(&mut self) -> Option<Bytes> {
        loop {
            let e = self.entries.front()?;
            if let Some(b) = &e.body {
                return Some(b.clone());
            }
            let dir = self.settings.dir.clone()?;
            let path = dir.join(file_name(e.seq, e.at, e.requests));
            match tokio::fs::read(&path).await {
                Ok(b) => return Some(Bytes::from(b)),
                Err(err) => {
                    tracing::warn!(error = %err, file = %path.display(), "analytics: a spooled shipment cannot be read; dropped");
                    self.drop_front(Dropped::Io).await;
                    self.update_gauges();
                }
            }
        }
    }

    /// The oldest shipment was delivered.
    pub(crate) async fn delivered(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            self.bytes -= e.len;
            self.remove_file(&e).await;
        }
        self.update_gauges();
    }

    async fn drop_front(&mut self, why: Dropped) {
        let Some(e) = self.entries.pop_front() else {
            return;
        };
        self.bytes -= e.len;
        self.count(why, e.requests);
        self.remove_file(&e).await;
    }

    fn count(&self, why: Dropped, requests: u64) {
        let c = match why {
            Dropped::Age => &self.stats.dropped_age,
            Dropped::Size => &self.stats.dropped_size,
            Dropped::Io => &self.stats.dropped_io,
        };
        c.fetch_add(requests, Ordering::Relaxed);
    }

    async fn remove_file(&self, e: &Entry) {
        if let (None, Some(dir)) = (&e.body, &self.settings.dir) {
            let _ = tokio::fs::remove_file(dir.join(file_name(e.seq, e.at, e.requests))).await;
        }
    }

    fn update_gauges(&self) {
        let requests = self.entries.iter().map(|e| e.requests).sum();
        self.stats
            .waiting_requests
            .store(requests, Ordering::Relaxed);
        self.stats
            .waiting_bytes
            .store(self.bytes, Ordering::Relaxed);
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn file_name(seq: u64, at: SystemTime, requests: u64) -> String {
    format!("{seq:020}-{}-{requests}.json", unix_ms(at))
}

/// `(seq, time, requests)` of a spool file's name.
fn parse_name(name: &str) -> Option<(u64, SystemTime, u64)> {
    let stem = name.strip_suffix(".json")?;
    let mut it = stem.splitn(3, '-');
    let seq = it.next()?.parse().ok()?;
    let ms: u64 = it.next()?.parse().ok()?;
    let requests = it.next()?.parse().ok()?;
    Some((seq, UNIX_EPOCH + Duration::from_millis(ms), requests))
}

/// Writes `body` to a temporary name, then renames it into place.
async fn write_file(path: PathBuf, body: Bytes) -> std::io::Result<()> {
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &body)?;
        std::fs::rename(&tmp, &path)
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_reads_back() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let name = file_name(42, at, 7);
        assert_eq!(parse_name(&name), Some((42, at, 7)));
        assert_eq!(parse_name("00000000000000000042-1-2.tmp"), None);
        assert_eq!(parse_name("x-1-2.json"), None);
    }

    #[tokio::test]
    async fn past_the_byte_bound_the_oldest_go_and_are_counted() {
        let mut s = Spool::open(SpoolSettings {
            max_bytes: 10,
            ..Default::default()
        });
        s.push(Bytes::from_static(b"aaaa"), 1).await;
        s.push(Bytes::from_static(b"bbbb"), 2).await;
        s.push(Bytes::from_static(b"cccc"), 3).await;
        assert_eq!(s.stats.dropped_size.load(Ordering::Relaxed), 1);
        assert_eq!(s.front().await, Some(Bytes::from_static(b"bbbb")));
        assert_eq!(s.stats.waiting_requests.load(Ordering::Relaxed), 5);
    }

    #[tokio::test]
    async fn past_the_age_bound_a_shipment_is_dropped_and_counted() {
        let mut s = Spool::open(SpoolSettings {
            max_age: Duration::from_millis(30),
            ..Default::default()
        });
        s.push(Bytes::from_static(b"old"), 4).await;
        tokio::time::sleep(Duration::from_millis(60)).await;
        s.push(Bytes::from_static(b"new"), 1).await;
        s.expire().await;
        assert_eq!(s.stats.dropped_age.load(Ordering::Relaxed), 4);
        assert_eq!(s.front().await, Some(Bytes::from_static(b"new")));
    }
}
