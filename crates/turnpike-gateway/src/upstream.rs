//! Upstream connections: one pool per endpoint (scheme + authority), kept outside the
//! snapshot so a config swap does not drop warm connections. HTTP/1.1 connections are a
//! LIFO stack of idle senders (a push/pop under an uncontended lock, no hashing beyond
//! one short FNV over the authority, no task spawned per request: a sender goes back to
//! the stack when the response body ends, see `body::UpstreamBody`). HTTPS endpoints
//! negotiate HTTP/2 by ALPN and then share one multiplexed connection.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use http::uri::Authority;
use http::HeaderValue;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

use crate::body::RequestBody;
use crate::error::{ErrorKind, GatewayError};
use crate::h1::{self, H1Conn};

/// Most idle HTTP/1.1 connections kept per endpoint.
const MAX_IDLE_PER_ENDPOINT: usize = 512;

/// A connection ready to carry one request.
pub enum Conn {
    H1 {
        sender: http1::SendRequest<RequestBody>,
        /// Came from the idle stack: may have been closed by the upstream meanwhile.
        reused: bool,
    },
    H2(http2::SendRequest<RequestBody>),
}

/// FNV-1a: the pool key is a short authority; SipHash would be the bigger cost.
#[derive(Default)]
pub struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type PoolMap = HashMap<(bool, Authority), Arc<EndpointPool>, BuildHasherDefault<Fnv>>;

/// All endpoint pools of a gateway.
pub struct Upstreams {
    pools: ArcSwap<PoolMap>,
    create: Mutex<()>,
    tls: tokio_rustls::TlsConnector,
}

impl Default for Upstreams {
    fn default() -> Self {
        Self::new()
    }
}

impl Upstreams {
    pub fn new() -> Self {
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
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Upstreams {
            pools: ArcSwap::from_pointee(PoolMap::default()),
            create: Mutex::new(()),
            tls: tokio_rustls::TlsConnector::from(Arc::new(cfg)),
        }
    }

    /// The pool of an endpoint, created on first use.
    pub fn pool(&self, https: bool, authority: &Authority) -> Arc<EndpointPool> {
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
        ));
        let mut next = PoolMap::clone(&current);
        next.insert(key, pool.clone());
        self.pools.store(Arc::new(next));
        pool
    }
}

/// Connections to one upstream endpoint.
pub struct EndpointPool {
    https: bool,
    authority: Authority,
    /// The Host header sent upstream (the endpoint's authority, like nginx's default).
    pub host: HeaderValue,
    idle: Mutex<Vec<http1::SendRequest<RequestBody>>>,
    /// Idle plain-HTTP connections of the in-task client (`h1.rs`), kept boxed: they
    /// move between this stack and response bodies without reallocating.
    #[allow(clippy::vec_box)]
    direct: Mutex<Vec<Box<H1Conn>>>,
    h2: Mutex<Option<http2::SendRequest<RequestBody>>>,
    tls: tokio_rustls::TlsConnector,
}

impl EndpointPool {
    fn new(https: bool, authority: Authority, tls: tokio_rustls::TlsConnector) -> Self {
        let host = HeaderValue::from_str(authority.as_str())
            .unwrap_or_else(|_| HeaderValue::from_static("localhost"));
        EndpointPool {
            https,
            authority,
            host,
            idle: Mutex::new(Vec::new()),
            direct: Mutex::new(Vec::new()),
            h2: Mutex::new(None),
            tls,
        }
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// Returns a finished HTTP/1.1 connection to the idle stack.
    pub fn put_back(&self, sender: http1::SendRequest<RequestBody>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push(sender);
        }
    }

    /// Returns a finished plain-HTTP connection (see `h1::DirectBody`) to its stack.
    pub fn put_back_direct(&self, conn: Box<H1Conn>) {
        let mut idle = self.direct.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_PER_ENDPOINT {
            idle.push(conn);
        }
    }

    /// A plain-HTTP connection for the in-task client: the most recently used idle one
    /// that is still open, else a new one within `connect_timeout`.
    pub async fn checkout_direct(
        &self,
        connect_timeout: Duration,
    ) -> Result<Box<H1Conn>, GatewayError> {
        loop {
            let conn = self.direct.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match conn {
                Some(mut c) => {
                    if c.is_alive().await {
                        return Ok(c);
                    }
                }
                None => break,
            }
        }
        Box::pin(self.connect_direct(connect_timeout)).await
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

    fn pop_idle(&self) -> Option<http1::SendRequest<RequestBody>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// A connection: an idle one if any is alive, the shared HTTP/2 one, or a new one.
    pub async fn checkout(&self, connect_timeout: Duration) -> Result<Conn, GatewayError> {
        while let Some(mut sender) = self.pop_idle() {
            if sender.is_closed() {
                continue;
            }
            if sender.ready().await.is_ok() {
                return Ok(Conn::H1 {
                    sender,
                    reused: true,
                });
            }
        }
        if self.https {
            let h2 = self.h2.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(h2) = h2 {
                if !h2.is_closed() {
                    return Ok(Conn::H2(h2));
                }
            }
        }
        // Boxed: the connect future (DNS, TCP, TLS state) is large and rarely polled;
        // inline, it would be moved with every request's future.
        Box::pin(self.connect_new(connect_timeout)).await
    }

    /// Opens a new connection within `connect_timeout` (TCP and, for https, TLS).
    pub async fn connect_new(&self, connect_timeout: Duration) -> Result<Conn, GatewayError> {
        match tokio::time::timeout(connect_timeout, self.connect()).await {
            Ok(r) => r,
            Err(_) => Err(GatewayError::with_source(
                ErrorKind::UpstreamConnectTimeout,
                format!("connect to {} timed out", self.authority),
            )),
        }
    }

    async fn connect(&self) -> Result<Conn, GatewayError> {
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
        if !self.https {
            return self.handshake_h1(TokioIo::new(tcp)).await;
        }
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(TokioIo::new(tls))
                .await
                .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "upstream h2 connection ended");
                }
            });
            *self.h2.lock().unwrap_or_else(|p| p.into_inner()) = Some(sender.clone());
            return Ok(Conn::H2(sender));
        }
        self.handshake_h1(TokioIo::new(tls)).await
    }

    async fn handshake_h1<T>(&self, io: T) -> Result<Conn, GatewayError>
    where
        T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let (sender, conn) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "upstream connection ended");
            }
        });
        Ok(Conn::H1 {
            sender,
            reused: false,
        })
    }
}
