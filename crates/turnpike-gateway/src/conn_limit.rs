//! Client connection caps, applied at accept: one for the whole gateway (below the
//! file-descriptor limit, so `accept` never fails for lack of descriptors and upstream
//! connections still find some) and one per client IP (by default a quarter of the
//! global cap, so one address cannot lock everyone out; behind a balancer every
//! connection comes from the balancer, which is why it can be raised or turned off). A connection over a cap gets a clear answer
//! on the plain-HTTP port, a JSON `503 too_many_connections` or
//! `429 too_many_client_connections` from the error table with `Connection: close`, and
//! is closed; on the TLS port it is closed before the handshake (answering would cost a
//! handshake). A connection holds its [`ConnPermit`] until it ends. Also raises the
//! process's open-file limit to its hard limit at start.
//!
//! A refusal must stay cheap however many arrive: the answer is a static buffer written
//! by one non-blocking `write` on the accept loop (a new connection's send buffer is
//! empty, so it always fits), then the write side is shut. Only then does a small task
//! linger, at most [`LINGER`], reading what the client sent until it closes, because
//! closing a socket with unread bytes resets it and a reset can destroy the answer
//! before the client read it. Past [`MAX_LINGERING`] lingering refusals the answer is
//! still written, what already arrived is read, and the socket is closed at once.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{json_body, ErrorKind};

/// Per-IP counts are sharded so that accepts on many cores rarely meet on one lock.
const SHARDS: usize = 32;
/// Refused connections lingering at once (a few hundred bytes each); past this a
/// refused connection gets its answer and is closed without lingering.
pub(crate) const MAX_LINGERING: usize = 16_384;
/// Longest a refused connection lingers (finishing its answer, waiting for the close).
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The gateway holds its maximum of client connections.
    Total,
    /// This client IP holds its maximum.
    PerIp,
}

impl Refusal {
    pub fn kind(self) -> ErrorKind {
        match self {
            Refusal::Total => ErrorKind::TooManyConnections,
            Refusal::PerIp => ErrorKind::TooManyClientConnections,
        }
    }
}

/// The caps and the live counts.
#[derive(Debug)]
pub struct ConnLimits {
    max_total: usize,
    /// 0: no per-IP cap.
    max_per_ip: usize,
    total: AtomicUsize,
    per_ip: [Mutex<HashMap<IpAddr, usize>>; SHARDS],
    refusing: AtomicUsize,
    /// Open connections parked (idle, holding no buffers: `park.rs`).
    parked: AtomicUsize,
    /// Open connections upgraded to a WebSocket (`upgrade/`).
    upgraded: AtomicUsize,
}

/// A connection's place under the caps, given back when dropped.
#[derive(Debug)]
pub struct ConnPermit {
    limits: Arc<ConnLimits>,
    ip: Option<IpAddr>,
}

impl ConnLimits {
    /// `max_total` client connections in all; `max_per_ip` per client IP (0: no cap).
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<ConnLimits> {
        Arc::new(ConnLimits {
            max_total: max_total.max(1),
            max_per_ip,
            total: AtomicUsize::new(0),
            per_ip: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            refusing: AtomicUsize::new(0),
            parked: AtomicUsize::new(0),
            upgraded: AtomicUsize::new(0),
        })
    }

    /// Open connections upgraded to a WebSocket (relaying).
    pub fn upgraded(&self) -> usize {
        self.upgraded.load(Ordering::Relaxed)
    }

    /// Counts a connection as upgraded until the mark is dropped.
    pub(crate) fn upgraded_mark(&self) -> ParkedMark<'_> {
        self.upgraded.fetch_add(1, Ordering::Relaxed);
        ParkedMark(&self.upgraded)
    }

    /// Open connections that are parked: idle, without hyper's buffers.
    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::Relaxed)
    }

    /// Client connections open now.
    pub fn open(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    fn shard(&self, ip: &IpAddr) -> &Mutex<HashMap<IpAddr, usize>> {
        let n = match ip {
            IpAddr::V4(a) => u32::from(*a) as usize,
            IpAddr::V6(a) => (u128::from(*a) ^ (u128::from(*a) >> 64)) as usize,
        };
        &self.per_ip[n.wrapping_mul(0x9E37_79B9) % SHARDS]
    }

    /// Takes a place for a connection from `ip`, or says which cap refuses it.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnPermit, Refusal> {
        let before = self.total.fetch_add(1, Ordering::AcqRel);
        if before >= self.max_total {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::Total);
        }
        if self.max_per_ip == 0 {
            return Ok(ConnPermit {
                limits: self.clone(),
                ip: None,
            });
        }
        let mut map = self.shard(&ip).lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(ip).or_insert(0);
        if *n >= self.max_per_ip {
            drop(map);
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::PerIp);
        }
        *n += 1;
        Ok(ConnPermit {
            limits: self.clone(),
            ip: Some(ip),
        })
    }

    /// Answers a refused plain-HTTP connection and closes it: the answer is written here
    /// (one non-blocking `write` of a static buffer), the lingering happens off the
    /// accept loop, bounded in count and time.
    pub fn refuse_http(self: &Arc<Self>, stream: TcpStream, why: Refusal) {
        let Ok(socket) = stream.into_std() else {
            return;
        };
        let answer = refusal_static(why);
        // Non-blocking (tokio's socket): never waits; a new socket takes it whole.
        let sent = (&socket).write(answer).unwrap_or(0);
        if sent == answer.len() {
            let _ = socket.shutdown(std::net::Shutdown::Write);
        }
        if self.refusing.fetch_add(1, Ordering::AcqRel) >= MAX_LINGERING {
            self.refusing.fetch_sub(1, Ordering::AcqRel);
            discard_arrived(&socket);
            return; // dropped: closed at once
        }
        let Ok(stream) = TcpStream::from_std(socket) else {
            self.refusing.fetch_sub(1, Ordering::AcqRel);
            return;
        };
        let limits = self.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(LINGER, linger(stream, &answer[sent..])).await;
            limits.refusing.fetch_sub(1, Ordering::AcqRel);
        });
    }

    /// Refused connections lingering now.
    pub fn lingering(&self) -> usize {
        self.refusing.load(Ordering::Relaxed)
    }
}

impl ConnPermit {
    /// Counts this connection as parked until the mark is dropped.
    pub(crate) fn parked(&self) -> ParkedMark<'_> {
        self.limits.parked.fetch_add(1, Ordering::Relaxed);
        ParkedMark(&self.limits.parked)
    }
}

/// A parked (or upgraded) connection, counted (see [`ConnPermit::parked`]).
pub(crate) struct ParkedMark<'a>(&'a AtomicUsize);

impl Drop for ParkedMark<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for ConnPermit {
    fn drop(&mut self) {
        if let Some(ip) = self.ip {
            let mut map = self
                .limits
                .shard(&ip)
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(n) = map.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&ip);
                }
            }
        }
        self.limits.total.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The HTTP/1.1 answer of a refused connection, from the error table.
pub(crate) fn refusal_response(why: Refusal) -> Vec<u8> {
    let spec = why.kind().spec();
    let body = json_body(spec.code, spec.message, b"");
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n",
        spec.status.as_u16(),
        spec.status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

/// The answer of each refusal, built once from the table.
fn refusal_static(why: Refusal) -> &'static [u8] {
    static TOTAL: OnceLock<Vec<u8>> = OnceLock::new();
    static PER_IP: OnceLock<Vec<u8>> = OnceLock::new();
    let cell = match why {
        Refusal::Total => &TOTAL,
        Refusal::PerIp => &PER_IP,
    };
    cell.get_or_init(|| refusal_response(why))
}

/// Finishes a refusal whose first `write` did not take it whole, shuts the write side,
/// then reads (and drops) what the client sent until it closes, so that closing does
/// not reset the connection before the client read the answer. Holds a small buffer:
/// thousands of these may wait at once.
async fn linger(mut stream: TcpStream, rest: &[u8]) {
    if !rest.is_empty() {
        if stream.write_all(rest).await.is_err() {
            return;
        }
        let _ = stream.shutdown().await;
    }
    let mut sink = [0u8; 256];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// Reads (without waiting) what the client already sent, so that the close that follows
/// sends a FIN behind the answer rather than a reset.
fn discard_arrived(mut socket: &std::net::TcpStream) {
    let mut sink = [0u8; 1024];
    for _ in 0..16 {
        match socket.read(&mut sink) {
            Ok(n) if n > 0 => continue,
            _ => return,
        }
    }
}

/// Raises the soft open-file limit to the hard one (where the OS allows) and returns the
/// soft limit in force afterwards (`None` where it cannot be read).
pub fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let lim = getrlimit(Resource::Nofile);
        // `None` is unlimited; Linux refuses an unlimited open-file limit, so aim at 2^20.
        let target = lim.maximum.unwrap_or(1 << 20);
        if let Some(before) = lim.current.filter(|c| *c < target) {
            let raised = Rlimit {
                current: Some(target),
                maximum: lim.maximum,
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => tracing::debug!(before, now = target, "open-file limit raised"),
                Err(e) => tracing::debug!(error = %e, "cannot raise the open-file limit"),
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The default global cap: half the open-file limit (each proxied request may hold an
/// upstream connection too), at least 64; 10,000 where the limit is unknown.
pub(crate) fn default_max_connections(fd_limit: Option<u64>) -> usize {
    match fd_limit {
        Some(n) => usize::try_from(n / 2).unwrap_or(usize::MAX).max(64),
        None => 10_000,
    }
}

/// The default per-IP cap: a quarter of the global cap (at least 16, at most the
/// global cap), so that one address (10,000 idle connections from one host, say) cannot
/// lock every other client out, while a few balancer addresses in front still fit.
pub(crate) fn default_max_connections_per_ip(max_total: usize) -> usize {
    (max_total / 4).max(16).min(max_total.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_total_and_per_ip_and_gives_places_back() {
        let l = ConnLimits::new(3, 2);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let p1 = l.admit(a).expect("first");
        let p2 = l.admit(a).expect("second");
        assert_eq!(l.admit(a).err(), Some(Refusal::PerIp));
        let p3 = l.admit(b).expect("other ip");
        assert_eq!(l.admit(b).err(), Some(Refusal::Total));
        assert_eq!(l.open(), 3);
        drop(p1);
        let p4 = l.admit(a).expect("a place came back");
        drop((p2, p3, p4));
        assert_eq!(l.open(), 0);
        assert!(l
            .per_ip
            .iter()
            .all(|s| s.lock().map(|m| m.is_empty()).unwrap_or(false)));
    }

    #[test]
    fn the_refusal_is_a_complete_http_answer_from_the_table() {
        let text = String::from_utf8(refusal_response(Refusal::Total)).expect("ascii");
        assert!(
            text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{text}"
        );
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(v["code"], "too_many_connections");
        let per_ip = String::from_utf8(refusal_response(Refusal::PerIp)).expect("ascii");
        assert!(per_ip.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
    }

    #[test]
    fn the_default_per_ip_cap_is_a_quarter_of_the_global_one() {
        assert_eq!(default_max_connections_per_ip(10_000), 2_500);
        assert_eq!(default_max_connections_per_ip(64), 16);
        assert_eq!(default_max_connections_per_ip(8), 8);
    }

    #[test]
    fn the_default_cap_stays_under_the_fd_limit() {
        assert_eq!(default_max_connections(Some(1024)), 512);
        assert_eq!(default_max_connections(Some(10)), 64);
        assert_eq!(default_max_connections(None), 10_000);
    }
}
