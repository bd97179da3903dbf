//! The optional access log: one line per request, formatted and written by a background
//! task fed through a bounded channel. A request never waits for it: when the channel is
//! full the record is dropped and counted (`AccessLog::dropped`).
//!
//! Line format (space separated):
//! `time request_id client method path status bytes upstream_ms`
//! where `time` is RFC 3339 UTC with milliseconds, `bytes` the response body bytes sent
//! and `upstream_ms` the time to the upstream's response headers (`-` when none).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{HeaderValue, Method, Uri};
use tokio::sync::mpsc;

const QUEUE: usize = 16 * 1024;

/// Where the lines go.
#[derive(Debug, Clone)]
pub enum AccessLogTarget {
    Stdout,
    File(PathBuf),
}

impl AccessLogTarget {
    /// `-` is stdout, anything else a file path (appended to).
    pub fn parse(s: &str) -> Self {
        if s == "-" {
            AccessLogTarget::Stdout
        } else {
            AccessLogTarget::File(PathBuf::from(s))
        }
    }
}

/// The sending side, shared by all connections.
pub struct AccessLog {
    tx: mpsc::Sender<PendingRecord>,
    dropped: AtomicU64,
    anchor_instant: Instant,
    anchor_wall: SystemTime,
}

/// A request's log line before it is written.
pub(crate) struct PendingRecord {
    pub start: Instant,
    pub request_id: HeaderValue,
    pub client: SocketAddr,
    pub method: Method,
    pub uri: Uri,
    pub status: u16,
    pub bytes: u64,
    pub upstream: Option<Duration>,
    pub sink: Arc<AccessLog>,
}

impl PendingRecord {
    /// Queues the record; never blocks.
    pub(crate) fn finish(self) {
        let sink = self.sink.clone();
        if sink.tx.try_send(self).is_err() {
            sink.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl AccessLog {
    /// Opens the target and starts the writer task.
    pub fn start(target: AccessLogTarget) -> std::io::Result<Arc<AccessLog>> {
        let out: Box<dyn Write + Send> = match &target {
            AccessLogTarget::Stdout => Box::new(std::io::stdout()),
            AccessLogTarget::File(p) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ),
        };
        let (tx, rx) = mpsc::channel(QUEUE);
        let log = Arc::new(AccessLog {
            tx,
            dropped: AtomicU64::new(0),
            anchor_instant: Instant::now(),
            anchor_wall: SystemTime::now(),
        });
        let (ai, aw) = (log.anchor_instant, log.anchor_wall);
        tokio::task::spawn_blocking(move || writer(rx, out, ai, aw));
        Ok(log)
    }

    /// Records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

fn writer(
    mut rx: mpsc::Receiver<PendingRecord>,
    out: Box<dyn Write + Send>,
    anchor_instant: Instant,
    anchor_wall: SystemTime,
) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut line = String::with_capacity(256);
    while let Some(rec) = rx.blocking_recv() {
        let mut next = Some(rec);
        while let Some(rec) = next {
            line.clear();
            format_line(&mut line, &rec, anchor_instant, anchor_wall);
            if out.write_all(line.as_bytes()).is_err() {
                return;
            }
            next = rx.try_recv().ok();
        }
        if out.flush().is_err() {
            return;
        }
    }
}

fn format_line(line: &mut String, r: &PendingRecord, ai: Instant, aw: SystemTime) {
    use std::fmt::Write as _;
    let wall = aw + r.start.saturating_duration_since(ai);
    write_rfc3339(line, wall);
    let rid = String::from_utf8_lossy(r.request_id.as_bytes());
    let path = r.uri.path();
    let _ = write!(
        line,
        " {rid} {} {} {path} {} {} ",
        r.client.ip(),
        r.method,
        r.status,
        r.bytes
    );
    match r.upstream {
        Some(d) => {
            let _ = write!(line, "{:.3}", d.as_secs_f64() * 1000.0);
        }
        None => line.push('-'),
    }
    line.push('\n');
}

/// `2024-05-06T07:08:09.123Z` without a date crate (civil-from-days, Howard Hinnant).
fn write_rfc3339(out: &mut String, t: SystemTime) {
    use std::fmt::Write as _;
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = turnpike_model::clock::civil_from_days(days);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        d.subsec_millis()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        let mut s = String::new();
        write_rfc3339(
            &mut s,
            UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
        );
        assert_eq!(s, "2023-11-14T22:13:20.123Z");
    }
}
