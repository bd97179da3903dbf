//! Listeners and connections: the public builder ([`Gateway::builder`]), the HTTP and
//! HTTPS accept loops, per-connection protocol setup (HTTP/1.1 on the plain port; HTTP/2
//! or HTTP/1.1 by ALPN on the TLS port), the transport limits (header size, header-read
//! timeout, idle timeout) and graceful drain on shutdown.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use turnpike_config::Snapshot;

use crate::access_log::{AccessLog, AccessLogTarget};
use crate::headers;
use crate::idle::{watch_idle, ActivityIo};
use crate::metrics::GatewayMetrics;
use crate::policy::{Chain, Policy};
use crate::proxy::{self, ConnCtx, Shared};
use crate::tls::{self, TlsError, TlsSource};
use crate::upstream::Upstreams;

/// Why a gateway could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot open the access log: {0}")]
    AccessLog(#[source] std::io::Error),
    #[error("the gateway task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// Transport settings of a gateway (what `turnpike gateway` flags set).
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub bind: IpAddr,
    /// `None` disables the listener; `Some(0)` takes a free port.
    pub http_port: Option<u16>,
    pub https_port: Option<u16>,
    pub tls: TlsSource,
    /// Largest request head (HTTP/1.1) or header list (HTTP/2) accepted; larger gets 431.
    pub max_header_bytes: usize,
    /// Time allowed for a request head (and, on HTTP/1.1, for the next request on a
    /// keep-alive connection) and for a TLS handshake.
    pub header_read_timeout: Duration,
    /// An HTTP/2 connection with no bytes in either direction for this long is closed.
    pub idle_timeout: Duration,
    /// How long in-flight requests may take to finish after a shutdown signal.
    pub drain_timeout: Duration,
    pub access_log: Option<AccessLogTarget>,
}

impl ServerSettings {
    /// Loopback, free ports for both listeners, a self-signed certificate in `data_dir`.
    pub fn local(data_dir: impl Into<PathBuf>) -> Self {
        ServerSettings {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            http_port: Some(0),
            https_port: Some(0),
            tls: TlsSource::SelfSigned {
                data_dir: data_dir.into(),
            },
            max_header_bytes: 64 * 1024,
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            drain_timeout: Duration::from_secs(30),
            access_log: None,
        }
    }
}

/// Entry point of the library: `Gateway::builder(settings).snapshots(h).serve(shutdown)`.
pub struct Gateway;

impl Gateway {
    pub fn builder(settings: ServerSettings) -> GatewayBuilder {
        GatewayBuilder {
            settings,
            snapshots: None,
            policies: Vec::new(),
            metrics: None,
        }
    }
}

pub struct GatewayBuilder {
    settings: ServerSettings,
    snapshots: Option<Arc<ArcSwap<Snapshot>>>,
    policies: Vec<Arc<dyn Policy>>,
    metrics: Option<Arc<GatewayMetrics>>,
}

impl GatewayBuilder {
    /// Serve from an externally owned snapshot handle (the control plane swaps it).
    pub fn snapshots(mut self, handle: Arc<ArcSwap<Snapshot>>) -> Self {
        self.snapshots = Some(handle);
        self
    }

    /// Adds a policy run on every routed request, in the order added.
    pub fn policy(mut self, p: Arc<dyn Policy>) -> Self {
        self.policies.push(p);
        self
    }

    /// Records every request in `metrics` (built over the same snapshot handle).
    pub fn metrics(mut self, m: Arc<GatewayMetrics>) -> Self {
        self.metrics = Some(m);
        self
    }

    /// Binds the listeners (and loads TLS); serving starts with [`BoundGateway::serve`].
    pub async fn bind(self) -> Result<BoundGateway, ServeError> {
        let s = self.settings;
        let http = match s.http_port {
            Some(port) => Some(listen(SocketAddr::new(s.bind, port)).await?),
            None => None,
        };
        let https = match s.https_port {
            Some(port) => {
                let cfg = tls::server_config(&s.tls)?;
                let l = listen(SocketAddr::new(s.bind, port)).await?;
                Some((l, tokio_rustls::TlsAcceptor::from(cfg)))
            }
            None => None,
        };
        let access_log = match &s.access_log {
            Some(t) => Some(AccessLog::start(t.clone()).map_err(ServeError::AccessLog)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            snapshots: self
                .snapshots
                .unwrap_or_else(|| Arc::new(ArcSwap::from_pointee(Snapshot::default()))),
            upstreams: Upstreams::new(),
            access_log,
            chain: Chain::new(self.policies),
            metrics: self.metrics,
        });
        Ok(BoundGateway {
            http,
            https,
            shared,
            settings: s,
        })
    }

    /// Binds and serves until `shutdown` resolves, then drains.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        self.bind().await?.serve(shutdown).await
    }
}

async fn listen(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    let sock = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .and_then(|s| {
        s.set_reuseaddr(true)?;
        s.bind(addr)?;
        s.listen(4096)
    });
    sock.map_err(|source| ServeError::Bind { addr, source })
}

/// A gateway with its listeners bound, not yet serving.
pub struct BoundGateway {
    http: Option<TcpListener>,
    https: Option<(TcpListener, tokio_rustls::TlsAcceptor)>,
    shared: Arc<Shared>,
    settings: ServerSettings,
}

impl BoundGateway {
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn https_addr(&self) -> Option<SocketAddr> {
        self.https.as_ref().and_then(|(l, _)| l.local_addr().ok())
    }

    /// The snapshot handle this gateway serves from.
    pub fn snapshots(&self) -> Arc<ArcSwap<Snapshot>> {
        self.shared.snapshots.clone()
    }

    /// Records the access log dropped because its queue was full.
    pub fn access_log_dropped(&self) -> u64 {
        self.shared.access_log.as_ref().map_or(0, |l| l.dropped())
    }

    /// Serves until `shutdown` resolves; then stops accepting (new connections are
    /// refused), lets in-flight requests finish within the drain timeout, and returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let graceful = Arc::new(GracefulShutdown::new());
        let (stop_tx, stop_rx) = watch::channel(false);
        let limits = Arc::new(Protocols::new(&self.settings));
        let mut loops: Vec<JoinHandle<()>> = Vec::new();
        if let Some(l) = self.http {
            loops.push(tokio::spawn(accept_loop(
                l,
                None,
                self.shared.clone(),
                limits.clone(),
                graceful.clone(),
                stop_rx.clone(),
            )));
        }
        if let Some((l, acceptor)) = self.https {
            loops.push(tokio::spawn(accept_loop(
                l,
                Some(acceptor),
                self.shared.clone(),
                limits.clone(),
                graceful.clone(),
                stop_rx.clone(),
            )));
        }
        shutdown.await;
        tracing::info!("shutdown: no longer accepting, draining in-flight requests");
        let _ = stop_tx.send(true);
        for l in loops {
            l.await?;
        }
        let Ok(graceful) = Arc::try_unwrap(graceful) else {
            return Ok(());
        };
        let drain = self.settings.drain_timeout;
        if tokio::time::timeout(drain, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(?drain, "drain timeout: remaining connections are cut");
        } else {
            tracing::info!("drained");
        }
        Ok(())
    }

    /// Serves in a background task; the handle knows the addresses and stops it.
    pub fn spawn(self) -> GatewayHandle {
        let (tx, rx) = oneshot::channel::<()>();
        let http_addr = self.http_addr();
        let https_addr = self.https_addr();
        let snapshots = self.snapshots();
        let join = tokio::spawn(self.serve(async move {
            let _ = rx.await;
        }));
        GatewayHandle {
            http_addr,
            https_addr,
            snapshots,
            stop: Some(tx),
            join,
        }
    }
}

/// A running gateway (from [`BoundGateway::spawn`]).
pub struct GatewayHandle {
    pub http_addr: Option<SocketAddr>,
    pub https_addr: Option<SocketAddr>,
    pub snapshots: Arc<ArcSwap<Snapshot>>,
    stop: Option<oneshot::Sender<()>>,
    join: JoinHandle<Result<(), ServeError>>,
}

impl GatewayHandle {
    /// Signals shutdown without waiting.
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Signals shutdown and waits for the drain to finish.
    pub async fn shutdown(mut self) -> Result<(), ServeError> {
        self.begin_shutdown();
        (&mut self.join).await?
    }
}

/// Configured protocol builders, shared by all connections.
struct Protocols {
    h1: http1::Builder,
    h2: http2::Builder<TokioExecutor>,
    handshake_timeout: Duration,
    idle_timeout: Duration,
}

impl Protocols {
    fn new(s: &ServerSettings) -> Self {
        let mut h1 = http1::Builder::new();
        h1.timer(TokioTimer::new())
            .keep_alive(true)
            .header_read_timeout(s.header_read_timeout)
            .max_header_size(s.max_header_bytes.max(1024))
            .max_buf_size(s.max_header_bytes.max(8192) + 8192);
        let mut h2 = http2::Builder::new(TokioExecutor::new());
        h2.timer(TokioTimer::new())
            .max_header_list_size(u32::try_from(s.max_header_bytes).unwrap_or(u32::MAX))
            .max_concurrent_streams(256);
        Protocols {
            h1,
            h2,
            handshake_timeout: s.header_read_timeout,
            idle_timeout: s.idle_timeout,
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    protocols: Arc<Protocols>,
    graceful: Arc<GracefulShutdown>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let ctx = Arc::new(ConnCtx {
            shared: shared.clone(),
            client: peer,
            client_ip: headers::ip_header(peer.ip()),
            https: tls.is_some(),
        });
        let watcher = graceful.watcher();
        let protocols = protocols.clone();
        match &tls {
            None => {
                let svc = service_fn(move |req| proxy::handle(ctx.clone(), req));
                let conn = protocols.h1.serve_connection(TokioIo::new(stream), svc);
                let fut = watcher.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = fut.await {
                        log_conn_error(&e, peer);
                    }
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                tokio::spawn(serve_tls(stream, peer, acceptor, ctx, protocols, watcher));
            }
        }
    }
}

async fn serve_tls(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    ctx: Arc<ConnCtx>,
    protocols: Arc<Protocols>,
    watcher: hyper_util::server::graceful::Watcher,
) {
    let tls = match tokio::time::timeout(protocols.handshake_timeout, acceptor.accept(stream)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let is_h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let svc = service_fn(move |req| proxy::handle(ctx.clone(), req));
    let result = if is_h2 {
        let (io, activity) = ActivityIo::new(tls);
        let conn = protocols.h2.serve_connection(TokioIo::new(io), svc);
        watch_idle(watcher.watch(conn), activity, protocols.idle_timeout).await
    } else {
        let conn = protocols.h1.serve_connection(TokioIo::new(tls), svc);
        watcher.watch(conn).await
    };
    if let Err(e) = result {
        log_conn_error(&e, peer);
    }
}

fn log_conn_error(e: &hyper::Error, peer: SocketAddr) {
    if e.is_timeout() {
        tracing::debug!(%peer, "closing a connection: request head not received in time");
    } else {
        tracing::debug!(%peer, error = %e, "connection error");
    }
}
