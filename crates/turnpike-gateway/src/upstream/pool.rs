//! Upstream connections: one pool per endpoint (scheme + authority), kept outside the
//! snapshot so a config swap does not drop warm connections. HTTP/1.1 connections are a
//! LIFO stack of idle senders (a push/pop under an uncontended lock, no hashing beyond
//! one short FNV over the authority, no task spawned per request: a sender goes back to
//! the stack when the response body ends, see `upstream::body::UpstreamBody`). HTTPS endpoints
//! negotiate HTTP/2 by ALPN and then share one multiplexed connection; so do plain ones
//! declared h2c (`h2/`).
//!
//! A sweeper ([`spawn_sweeper`], one task per gateway, every [`SWEEP_EVERY`]) drops the
//! pools of endpoints no API of the current snapshot names any more, and closes idle
//! connections that waited through a whole sweep period (idle for 30 to 60 s). Idle
//! entries carry the sweep epoch they were parked in, so the request path reads no clock.
//!
//! Each endpoint
//! holds at most `max_connections` connections (idle and busy together): past that, a
//! request waits for one to come back to the pool or close, up to the API's connect
//! timeout, then gets `503 upstream_busy`.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};

use arc_swap::ArcSwap;
use http::uri::Authority;
use http::HeaderValue;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use turnpike_model::fnv::FnvHasher;

use super::h1::conn::{self as h1, H1Conn};
use super::h2::conn as h2;
use crate::client_body::ClientBody;
use crate::error::{ErrorKind, GatewayError};

/// Most idle HTTP/1.1 connections kept per endpoint.
const MAX_IDLE_PER_ENDPOINT: usize = 512;

/// How often the sweeper runs; an idle connection is closed at the second sweep it sees.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// A pool's key: https, and the endpoint's authority.
pub(crate) type PoolKey = (bool, Authority);

/// Default of the most connections open to one endpoint (`--max-upstream-connections`).
pub(crate) const DEFAULT_MAX_CONNECTIONS_PER_ENDPOINT: usize = 1024;

/// A connection ready to carry one request.
pub(crate) enum Conn {
    H1 {
        sender: http1::SendRequest<ClientBody>,
        /// Came from the idle stack: may have been closed by the upstream meanwhile.
        reused: bool,
    },
    H2(http2::SendRequest<ClientBody>),
}

/// FNV-1a: the pool key is a short authority; SipHash would be the bigger cost.
type PoolMap = HashMap<PoolKey, Arc<EndpointPool>, BuildHasherDefault<FnvHasher>>;

/// All endpoint pools of a gateway.
pub(crate) struct Upstreams {
    pools: ArcSwap<PoolMap>,
    create: Mutex<()>,
    tls: tokio_rustls::TlsConnector,
    /// ALPN `http/1.1` only: WebSocket upgrades (`upgrade/`).
    tls_h1: tokio_rustls::TlsConnector,
    max_per_endpoint: usize,
}

impl Default for Upstreams {
    fn default() -> Self {
        Self::new()
    }
}

impl Upstreams {
    pub(crate) fn new() -> Self {
        Self::with_max_connections(DEFAULT_MAX_CONNECTIONS_PER_ENDPOINT)
    }

    /// Pools holding at most `max_per_endpoint` connections each (0: no cap).
    pub(crate) fn with_max_connections(max_per_endpoint: usize) -> Self {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .unwrap_or_else(|_| {
            // ring supports the default versions; this branch is unreachable in practice.
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
        let mut h1_only = cfg.clone();
        h1_only.alpn_protocols = vec![b"http/1.1".to_vec()];
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Upstreams {
            tls_h1: tokio_rustls::TlsConnector::from(Arc::new(h1_only)),
            pools: ArcSwap::from_pointee(PoolMap::default()),
            create: Mutex::new(()),
            tls: tokio_rustls::TlsConnector::from(Arc::new(cfg)),
            max_per_endpoint: if max_per_endpoint == 0 {
                Semaphore::MAX_PERMITS
            } else {
                max_per_endpoint.min(Semaphore::MAX_PERMITS)
            },
        }
    }

    /// The pool of an endpoint, created on first use.
    pub(crate) fn pool(&self, https: bool, authority: &Authority) -> Arc<EndpointPool> {
        let key = (https, authority.clone());
        if let Some(p) = self.pools.load().get(&key) {
            return p.clone();
        }
        let _guard = self.create.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.pools.load_full();
        if let Some(p) = current.get(&key) {
            return p.clone();
        }
        let pool = Arc::new(EndpointPool::new(
            https,
            authority.clone(),
            self.tls.clone(),
            self.tls_h1.clone(),
            self.max_per_endpoint,
        ));
        let mut next = PoolMap::clone(&current);
        next.insert(key, pool.clone());
        self.pools.store(Arc::new(next));
        pool
    }

    /// Drops the pools whose key `live` lacks (their idle connections close; requests
    /// still holding one finish on it), then closes in the others the idle connections
    /// parked before the previous sweep.
    pub(crate) fn sweep(&self, live: &HashSet<PoolKey>) {
        let current = self.pools.load_full();
        if current.keys().any(|k| !live.contains(k)) {
            let _guard = self.create.lock().unwrap_or_else(|p| p.into_inner());
            let current = self.pools.load_full();
            let next: PoolMap = current
                .iter()
                .filter(|(k, _)| live.contains(*k))
                .map(|(k, p)| (k.clone(), p.clone()))
                .collect();
            self.pools.store(Arc::new(next));
        }
        for pool in self.pools.load().values() {
            pool.expire();
        }
    }

    /// How many endpoint pools exist.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pools.load().len()
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The endpoints the snapshot's APIs name.
pub(crate) fn live_keys(snapshot: &turnpike_config::Snapshot) -> HashSet<PoolKey> {
    snapshot
        .apis
        .iter()
        .flat_map(|api| api.endpoints.iter().chain(&api.sandbox_endpoints))
        .map(|ep| (ep.scheme == http::uri::Scheme::HTTPS, ep.authority.clone()))
        .collect()
}
/// Connections to one upstream endpoint.
pub(crate) struct EndpointPool {
    https: bool,
    authority: Authority,
    /// The Host header sent upstream (the endpoint's authority, like nginx's default).
    pub host: HeaderValue,
    /// Idle connections with the sweep epoch they were parked in.
    idle: Mutex<Vec<(u32, http1::SendRequest<ClientBody>)>>,
    /// Idle plain-HTTP connections of the in-task client (`h1/`), kept boxed: they
    /// move between this stack and response bodies without reallocating.
    direct: Mutex<Vec<(u32, Box<H1Conn>)>>,
    /// Sweeps seen (see [`Upstreams::sweep`]).
    epoch: AtomicU32,
    h2: Mutex<Option<http2::SendRequest<ClientBody>>>,
    /// Held while an h2c connection is being opened (`h2/checkout.rs`).
    pub(super) h2_opening: tokio::sync::Mutex<()>,
    tls: tokio_rustls::TlsConnector,
    tls_h1: tokio_rustls::TlsConnector,
    /// One permit per connection that may be open; each connection holds one.
    slots: Arc<Semaphore>,
    /// Told when a connection comes back to an idle stack (a waiter can take it).
    returned: Notify,
}

impl EndpointPool {
    fn new(
        https: bool,
        authority: Authority,
        tls: tokio_rustls::TlsConnector,
        tls_h1: tokio_rustls::TlsConnector,
        max_connections: usize,
    ) -> Self {
        let host = HeaderValue::from_str(authority.as_str())
            .unwrap_or_else(|_| HeaderValue::from_static("localhost"));
        EndpointPool {
            https,
            authority,
            host,
            idle: Mutex::new(Vec::new()),
            direct: Mutex::new(Vec::new()),
            epoch: AtomicU32::new(0),
            h2: Mutex::new(None),
            h2_opening: tokio::sync::Mutex::new(()),
            tls,
            tls_h1,
            slots: Arc::new(Semaphore::new(max_connections)),
            returned: Notify::new(),
        }
    }

    /// A connection slot: at once when one is free; else waits until one frees up,
    /// or (`Ok(None)`) a connection came back to an idle stack, or the deadline
    /// passed (`upstream_busy`).
    pub(super) async fn slot(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<Option<OwnedSemaphorePermit>, GatewayError> {
        match self.slots.clone().try_acquire_owned() {
            Ok(p) => return Ok(Some(p)),
            Err(TryAcquireError::Closed) => return Err(GatewayError::new(ErrorKind::Internal)),
            Err(TryAcquireError::NoPermits) => {}
        }
        let returned = self.returned.notified();
        tokio::select! {
            p = self.slots.clone().acquire_owned() => {
                p.map(Some).map_err(|_| GatewayError::new(ErrorKind::Internal))
            }
            _ = returned => Ok(None),
            _ = tokio::time::sleep_until(deadline) => Err(GatewayError::with_source(
                ErrorKind::UpstreamBusy,
                format!("{} holds its maximum of connections", self.authority),
            )),
        }
    }

    pub(crate) fn is_https(&self) -> bool {
        self.https
    }

    pub(crate) fn authority(&self) -> &Authority {
        &self.authority
    }

    /// Returns a finished HTTP/1.1 connection to the idle stack.
    pub(crate) fn put_back(&self, sender: http1::SendRequest<ClientBody>) {
        if sender.is_closed() {
            return;
        }
        let epoch = self.epoch.load(Ordering::Relaxed);
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push((epoch, sender));
            drop(idle);
            self.returned.notify_one();
        }
    }

    /// Returns a finished plain-HTTP connection (see `h1::body::DirectBody`) to its stack.
    pub(crate) fn put_back_direct(&self, conn: Box<H1Conn>) {
        let epoch = self.epoch.load(Ordering::Relaxed);
        let mut idle = self.direct.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push((epoch, conn));
            drop(idle);
            self.returned.notify_one();
        }
    }

    /// A sweep: closes the idle connections parked before the previous one (the stacks
    /// are LIFO, so the old ones are at the bottom), then starts a new epoch.
    fn expire(&self) {
        let now = self.epoch.fetch_add(1, Ordering::Relaxed);
        let old = |parked: u32| parked < now;
        // Dropped outside the locks (closing a TLS connection does some work).
        let stale_h1: Vec<_> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let keep = idle
                .iter()
                .position(|(e, _)| !old(*e))
                .unwrap_or(idle.len());
            idle.drain(..keep).collect()
        };
        let stale_direct: Vec<_> = {
            let mut idle = self.direct.lock().unwrap_or_else(|p| p.into_inner());
            let keep = idle
                .iter()
                .position(|(e, _)| !old(*e))
                .unwrap_or(idle.len());
            idle.drain(..keep).collect()
        };
        drop((stale_h1, stale_direct));
    }

    /// Idle connections parked (both clients).
    #[cfg(test)]
    pub(crate) fn idle_len(&self) -> usize {
        let h1 = self.idle.lock().unwrap_or_else(|p| p.into_inner()).len();
        h1 + self.direct.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// A plain-HTTP connection for the in-task client: the most recently used idle one
    /// that is still open, else a new one within `connect_timeout`.
    pub(crate) async fn checkout_direct(
        &self,
        connect_timeout: Duration,
    ) -> Result<Box<H1Conn>, GatewayError> {
        if let Some(c) = self.idle_direct().await {
            return Ok(c);
        }
        // Boxed: waiting for a slot and connecting are rare, and their futures would
        // otherwise be part of (and copied with) every request's future.
        Box::pin(self.open_direct(connect_timeout)).await
    }

    /// The most recently parked idle connection that is still open.
    async fn idle_direct(&self) -> Option<Box<H1Conn>> {
        loop {
            let (_, mut c) = self
                .direct
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()?;
            if c.is_alive().await {
                return Some(c);
            }
        }
    }

    /// A new connection once a slot is free (or an idle one that came back meanwhile).
    async fn open_direct(&self, connect_timeout: Duration) -> Result<Box<H1Conn>, GatewayError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        loop {
            if let Some(slot) = self.slot(deadline).await? {
                let mut c = self.connect_direct(connect_timeout).await?;
                c.hold(slot);
                return Ok(c);
            }
            if let Some(c) = self.idle_direct().await {
                return Ok(c);
            }
        }
    }

    async fn connect_direct(&self, connect_timeout: Duration) -> Result<Box<H1Conn>, GatewayError> {
        let port = self.authority.port_u16().unwrap_or(80);
        let host = self.authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match tokio::time::timeout(connect_timeout, h1::connect(host, port)).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(GatewayError::with_source(
                ErrorKind::UpstreamConnectFailed,
                e,
            )),
            Err(_) => Err(GatewayError::with_source(
                ErrorKind::UpstreamConnectTimeout,
                format!("connect to {} timed out", self.authority),
            )),
        }
    }

    fn pop_idle(&self) -> Option<http1::SendRequest<ClientBody>> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        idle.map(|(_, sender)| sender)
    }

    /// A connection: an idle one if any is alive, the shared HTTP/2 one, or a new one.
    pub(crate) async fn checkout(&self, connect_timeout: Duration) -> Result<Conn, GatewayError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        loop {
            if let Some(c) = self.checkout_idle().await {
                return Ok(c);
            }
            if let Some(slot) = self.slot(deadline).await? {
                // Boxed: the connect future (DNS, TCP, TLS state) is large and rarely
                // polled; inline, it would be moved with every request's future.
                return Box::pin(self.connect_with(connect_timeout, slot)).await;
            }
        }
    }

    /// An idle HTTP/1.1 connection that is still open, or the shared HTTP/2 one.
    async fn checkout_idle(&self) -> Option<Conn> {
        while let Some(mut sender) = self.pop_idle() {
            if sender.is_closed() {
                continue;
            }
            if sender.ready().await.is_ok() {
                return Some(Conn::H1 {
                    sender,
                    reused: true,
                });
            }
        }
        if self.https {
            return self.shared_h2().map(Conn::H2);
        }
        None
    }

    /// The endpoint's HTTP/2 connection, if one is open.
    pub(super) fn shared_h2(&self) -> Option<http2::SendRequest<ClientBody>> {
        let h2 = self.h2.lock().unwrap_or_else(|p| p.into_inner()).clone();
        h2.filter(|s| !s.is_closed())
    }

    pub(super) fn share_h2(&self, sender: http2::SendRequest<ClientBody>) {
        *self.h2.lock().unwrap_or_else(|p| p.into_inner()) = Some(sender);
    }

    /// Opens a new connection within `connect_timeout` (TCP and, for https, TLS), once
    /// a connection slot is free.
    pub(crate) async fn connect_new(
        &self,
        connect_timeout: Duration,
    ) -> Result<Conn, GatewayError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        loop {
            if let Some(slot) = self.slot(deadline).await? {
                return self.connect_with(connect_timeout, slot).await;
            }
            if let Some(c) = self.checkout_idle().await {
                return Ok(c);
            }
        }
    }

    async fn connect_with(
        &self,
        connect_timeout: Duration,
        slot: OwnedSemaphorePermit,
    ) -> Result<Conn, GatewayError> {
        match tokio::time::timeout(connect_timeout, self.connect(slot)).await {
            Ok(r) => r,
            Err(_) => Err(GatewayError::with_source(
                ErrorKind::UpstreamConnectTimeout,
                format!("connect to {} timed out", self.authority),
            )),
        }
    }

    /// A new connection for a WebSocket upgrade (TCP and, for https, TLS with ALPN
    /// `http/1.1`), never pooled: it holds its slot of the endpoint's cap until the
    /// caller drops the permit.
    pub(crate) async fn connect_raw(
        &self,
        connect_timeout: Duration,
    ) -> Result<(Box<dyn crate::io::Io>, OwnedSemaphorePermit), GatewayError> {
        let deadline = tokio::time::Instant::now() + connect_timeout;
        let slot = loop {
            if let Some(slot) = self.slot(deadline).await? {
                break slot;
            }
        };
        let connect = async {
            let tcp = self.tcp().await?;
            if !self.https {
                return Ok(Box::new(tcp) as Box<dyn crate::io::Io>);
            }
            let tls = self
                .tls_h1
                .connect(self.server_name()?, tcp)
                .await
                .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
            Ok(Box::new(tls) as Box<dyn crate::io::Io>)
        };
        match tokio::time::timeout_at(deadline, connect).await {
            Ok(r) => r.map(|io| (io, slot)),
            Err(_) => Err(GatewayError::with_source(
                ErrorKind::UpstreamConnectTimeout,
                format!("connect to {} timed out", self.authority),
            )),
        }
    }

    pub(super) async fn tcp(&self) -> Result<TcpStream, GatewayError> {
        let port = self
            .authority
            .port_u16()
            .unwrap_or(if self.https { 443 } else { 80 });
        let host = self.authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let tcp = TcpStream::connect((host, port))
            .await
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }

    fn server_name(&self) -> Result<rustls::pki_types::ServerName<'static>, GatewayError> {
        let host = self.authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))
    }

    async fn connect(&self, slot: OwnedSemaphorePermit) -> Result<Conn, GatewayError> {
        let tcp = self.tcp().await?;
        if !self.https {
            return self.handshake_h1(TokioIo::new(tcp), slot).await;
        }
        let name = self.server_name()?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            let sender = h2::handshake(TokioIo::new(tls), slot).await?;
            self.share_h2(sender.clone());
            return Ok(Conn::H2(sender));
        }
        self.handshake_h1(TokioIo::new(tls), slot).await
    }

    async fn handshake_h1<T>(&self, io: T, slot: OwnedSemaphorePermit) -> Result<Conn, GatewayError>
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (sender, conn) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        h2::drive(conn, slot);
        Ok(Conn::H1 {
            sender,
            reused: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    /// An upstream that reports each connection the gateway closes.
    async fn upstream() -> (Authority, mpsc::UnboundedReceiver<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, closed) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while s.read(&mut b).await.is_ok_and(|n| n > 0) {}
                    let _ = tx.send(());
                });
            }
        });
        (addr.to_string().parse().expect("authority"), closed)
    }

    async fn closes(closed: &mut mpsc::UnboundedReceiver<()>) {
        tokio::time::timeout(Duration::from_secs(5), closed.recv())
            .await
            .expect("the upstream saw the connection close")
            .expect("upstream running");
    }

    #[tokio::test]
    async fn idle_connections_expire_and_removed_endpoints_lose_their_pools() {
        let (authority, mut closed) = upstream().await;
        let ups = Upstreams::new();
        let pool = ups.pool(false, &authority);
        let conn = pool
            .checkout_direct(Duration::from_secs(5))
            .await
            .expect("connect");
        pool.put_back_direct(conn);
        let live: HashSet<PoolKey> = [(false, authority.clone())].into();
        ups.sweep(&live);
        assert_eq!(pool.idle_len(), 1, "parked during this period: kept");
        ups.sweep(&live);
        assert_eq!(pool.idle_len(), 0, "idle through a whole period: closed");
        closes(&mut closed).await;

        // A connection reused meanwhile is parked again in the new period.
        let conn = pool
            .checkout_direct(Duration::from_secs(5))
            .await
            .expect("connect");
        pool.put_back_direct(conn);
        ups.sweep(&live);
        assert_eq!(pool.idle_len(), 1);
        assert_eq!(ups.len(), 1);

        // No API names the endpoint any more: the pool goes, its connections close.
        drop(pool);
        ups.sweep(&HashSet::new());
        assert!(ups.is_empty());
        closes(&mut closed).await;
    }
}
