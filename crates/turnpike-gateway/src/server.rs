//! Listeners and connections: the public builder ([`Gateway::builder`]), the HTTP and
//! HTTPS accept loops, per-connection protocol setup (HTTP/1.1 on the plain port; HTTP/2
//! or HTTP/1.1 by ALPN on the TLS port), the transport limits (header size, header-read
//! timeout, idle timeout) and graceful drain on shutdown: readiness fails first, the
//! listeners keep accepting for the drain delay (so a balancer polling `/ready` moves
//! traffic away before anything is refused; HTTP/1.1 answers carry `Connection: close`
//! meanwhile so pooled connections leave too), then accepting stops and in-flight
//! requests finish within the drain timeout.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use turnpike_config::Snapshot;

use crate::access_log::{AccessLog, AccessLogTarget};
use crate::conn::{ConnCtx, Shared};
use crate::conn_limit::{ConnLimits, ConnPermit};
use crate::drain::{self, Drain};
use crate::h1_conn;
use crate::headers;
use crate::health::Health;
use crate::idle::{watch_idle, ActivityIo};
use crate::log_limit::LogLimit;
use crate::metrics::GatewayMetrics;
use crate::park;
use crate::proxy;
use crate::upstream::pool::Upstreams;
use turnpike_tls::{TlsError, TlsSource};

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
    /// Longest wait for the next bytes of a request body; longer gets `408
    /// request_timeout` (zero: no limit).
    pub body_read_timeout: Duration,
    /// An HTTP/2 connection with no bytes in either direction for this long is closed.
    pub idle_timeout: Duration,
    /// A plain HTTP/1.1 connection idle (no request in flight, no bytes received) for a
    /// whole period of this length is parked: hyper's buffers are freed until the client
    /// sends again (`park.rs`). Zero: never parked.
    pub park_after: Duration,
    /// How long in-flight requests may take to finish once accepting stopped.
    pub drain_timeout: Duration,
    /// After a [`Stop::Drain`] shutdown: how long readiness fails while connections are
    /// still accepted and served, before accepting stops.
    pub drain_delay: Duration,
    /// Client connections held at once, all listeners together; more are refused.
    pub max_connections: usize,
    /// Client connections held at once per client IP; 0 for no cap.
    pub max_connections_per_ip: usize,
    /// Connections open to one upstream endpoint (idle and busy); 0 for no cap.
    pub max_upstream_connections: usize,
    pub access_log: Option<AccessLogTarget>,
    /// Peers whose forwarding headers (`X-Forwarded-*`, `Forwarded`, `X-Real-IP`) are
    /// kept; from anyone else they are dropped (`headers::strip_request`).
    pub trusted_proxies: crate::headers::TrustedProxies,
    /// What all buffered request bodies may hold at once (APIs' `request_buffering`);
    /// past it, a body streams as it arrives.
    pub request_buffer_bytes: u64,
}

/// Default of `--request-buffer-mib`.
pub(crate) const DEFAULT_REQUEST_BUFFER_MIB: u64 = 256;

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
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            park_after: Duration::from_secs(2),
            drain_timeout: Duration::from_secs(30),
            drain_delay: Duration::ZERO,
            max_connections: 10_000,
            max_connections_per_ip: 0,
            max_upstream_connections: crate::upstream::pool::DEFAULT_MAX_CONNECTIONS_PER_ENDPOINT,
            access_log: None,
            trusted_proxies: crate::headers::TrustedProxies::default(),
            request_buffer_bytes: DEFAULT_REQUEST_BUFFER_MIB << 20,
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
            metrics: None,
            observers: Vec::new(),
            health: None,
            trace: false,
        }
    }
}

/// How a gateway stops, as its shutdown future says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Readiness fails at once; connections are still accepted for the drain delay, then
    /// accepting stops and in-flight requests finish (SIGTERM).
    Drain,
    /// Accepting stops at once; in-flight requests finish (SIGINT, a second signal).
    Now,
}

pub struct GatewayBuilder {
    settings: ServerSettings,
    snapshots: Option<Arc<ArcSwap<Snapshot>>>,
    observers: Vec<Arc<dyn turnpike_policy::Observer>>,
    metrics: Option<Arc<GatewayMetrics>>,
    health: Option<Arc<Health>>,
    trace: bool,
}

impl GatewayBuilder {
    /// Traces every request (W3C trace context on `RequestCtx::trace`, `traceparent`
    /// sent upstream); an observer exports the spans.
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Readiness shared with the management listener and the snapshot source (default:
    /// ready, as a snapshot handle given to the builder is assumed loaded).
    pub fn health(mut self, h: Arc<Health>) -> Self {
        self.health = Some(h);
        self
    }

    /// Serve from an externally owned snapshot handle (the control plane swaps it).
    pub fn snapshots(mut self, handle: Arc<ArcSwap<Snapshot>>) -> Self {
        self.snapshots = Some(handle);
        self
    }

    /// Tells `o.on_complete` about every request, routed or not (analytics, traces);
    /// what runs per API is the snapshot's chain.
    pub fn observer(mut self, o: Arc<dyn turnpike_policy::Observer>) -> Self {
        self.observers.push(o);
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
                // The certificate files are reloaded when they change (turnpike-tls).
                let cfg = turnpike_tls::server_config(&turnpike_tls::ServerTls {
                    source: s.tls.clone(),
                    alpn: vec![b"h2".to_vec(), b"http/1.1".to_vec()],
                    client_ca: None,
                })?
                .config;
                let l = listen(SocketAddr::new(s.bind, port)).await?;
                Some((l, tokio_rustls::TlsAcceptor::from(cfg)))
            }
            None => None,
        };
        let access_log = match &s.access_log {
            Some(t) => Some(AccessLog::start(t.clone()).map_err(ServeError::AccessLog)?),
            None => None,
        };
        let health = self.health.unwrap_or_else(|| Health::new(true));
        let shared = Arc::new(Shared {
            health: health.clone(),
            snapshots: self
                .snapshots
                .unwrap_or_else(|| Arc::new(ArcSwap::from_pointee(Snapshot::default()))),
            upstreams: Upstreams::with_max_connections(s.max_upstream_connections),
            access_log,
            metrics: self.metrics,
            observers: self.observers.into(),
            body_read_timeout: s.body_read_timeout,
            trusted_proxies: s.trusted_proxies.clone(),
            buffer_budget: Arc::new(crate::client_body::BufferBudget::new(
                s.request_buffer_bytes,
            )),
            trace: self.trace,
        });
        crate::conn::spawn_sweeper(Arc::downgrade(&shared));
        crate::upstream::checks::spawn_supervisor(Arc::downgrade(&shared));
        Ok(BoundGateway {
            http,
            https,
            shared,
            caps: ConnLimits::new(s.max_connections, s.max_connections_per_ip),
            settings: s,
            health,
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
    caps: Arc<ConnLimits>,
    settings: ServerSettings,
    health: Arc<Health>,
}

impl BoundGateway {
    /// The client connections' caps and counts (open, parked), for metrics.
    pub fn connections(&self) -> Arc<ConnLimits> {
        self.caps.clone()
    }

    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The access log, when one is written (its drop counter, for metrics).
    pub fn access_log(&self) -> Option<Arc<AccessLog>> {
        self.shared.access_log.clone()
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

    /// The readiness this gateway reports and fails when draining.
    pub fn health(&self) -> Arc<Health> {
        self.health.clone()
    }

    /// Serves until `shutdown` resolves, then drains as [`Stop::Drain`] says.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let shutdown = async move {
            shutdown.await;
            Stop::Drain
        };
        self.serve_until(shutdown, std::future::pending()).await
    }

    /// Serves until `shutdown` resolves; then readiness fails, and (for [`Stop::Drain`])
    /// connections are still accepted for the drain delay; then accepting stops (new
    /// connections are refused) and in-flight requests finish within the drain timeout.
    /// `cut` (a second signal) ends the delay and the drain early.
    pub async fn serve_until(
        self,
        shutdown: impl Future<Output = Stop>,
        cut: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        let graceful = Arc::new(Drain::new());
        let (stop_tx, stop_rx) = watch::channel(false);
        let limits = Arc::new(Protocols::new(&self.settings));
        let caps = self.caps.clone();
        let _sweeps = sweep(&graceful, &caps, self.settings.park_after);
        let mut loops: Vec<JoinHandle<()>> = Vec::new();
        if let Some(l) = self.http {
            loops.push(tokio::spawn(accept_loop(
                l,
                None,
                self.shared.clone(),
                limits.clone(),
                caps.clone(),
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
                caps.clone(),
                graceful.clone(),
                stop_rx.clone(),
            )));
        }
        let how = shutdown.await;
        self.health.begin_drain();
        tokio::pin!(cut);
        let delay = self.settings.drain_delay;
        if how == Stop::Drain && !delay.is_zero() {
            tracing::info!(
                ?delay,
                "shutdown: readiness fails; still accepting for the drain delay"
            );
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = &mut cut => tracing::info!("shutdown: drain delay cut short"),
            }
        }
        tracing::info!("shutdown: no longer accepting, draining in-flight requests");
        let _ = stop_tx.send(true);
        for l in loops {
            l.await?;
        }
        let Ok(graceful) = Arc::try_unwrap(graceful) else {
            return Ok(());
        };
        let drain = self.settings.drain_timeout;
        tokio::select! {
            done = tokio::time::timeout(drain, graceful.shutdown()) => match done {
                Ok(()) => tracing::info!("drained"),
                Err(_) => tracing::warn!(?drain, "drain timeout: remaining connections are cut"),
            },
            _ = &mut cut => tracing::warn!("shutdown: drain cut short; remaining connections are cut"),
        }
        Ok(())
    }

    /// Serves in a background task; the handle knows the addresses and stops it.
    pub fn spawn(self) -> GatewayHandle {
        let connections = self.connections();
        let (tx, rx) = oneshot::channel::<()>();
        let http_addr = self.http_addr();
        let https_addr = self.https_addr();
        let snapshots = self.snapshots();
        let health = self.health();
        let join = tokio::spawn(self.serve(async move {
            let _ = rx.await;
        }));
        GatewayHandle {
            http_addr,
            https_addr,
            snapshots,
            health,
            connections,
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
    pub health: Arc<Health>,
    /// Client connections open and parked.
    pub connections: Arc<ConnLimits>,
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
    /// Plain HTTP/1.1 connections are parked when idle (`park_after` not zero).
    parking: bool,
}

impl Protocols {
    fn new(s: &ServerSettings) -> Self {
        let mut h1 = http1::Builder::new();
        // half_close: a client that shuts its write side once it sent a whole request
        // (a chunked body, say) still gets its answer (found by tests/hostile.rs).
        h1.timer(TokioTimer::new())
            .keep_alive(true)
            .half_close(true)
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
            parking: !s.park_after.is_zero(),
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    protocols: Arc<Protocols>,
    caps: Arc<ConnLimits>,
    graceful: Arc<Drain>,
    mut stop: watch::Receiver<bool>,
) {
    static ACCEPT_FAILED: LogLimit = LogLimit::new(Duration::from_secs(10));
    static REFUSED: LogLimit = LogLimit::new(Duration::from_secs(10));
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
                if let Some(left_out) = ACCEPT_FAILED.allow() {
                    tracing::warn!(error = %e, left_out, "accept failed");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let permit = match caps.admit(peer.ip()) {
            Ok(p) => p,
            Err(why) => {
                if let Some(left_out) = REFUSED.allow() {
                    tracing::warn!(%peer, code = why.kind().spec().code, open = caps.open(),
                        left_out, "connection refused: cap reached");
                }
                if tls.is_none() {
                    caps.refuse_http(stream, why);
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let ctx = Arc::new(ConnCtx {
            shared: shared.clone(),
            client: peer,
            client_ip: headers::ip_header(peer.ip()),
            trusted_proxy: shared.trusted_proxies.contains(peer.ip()),
            https: tls.is_some(),
            upgrade: crate::io::UpgradeSlot::counted(caps.clone()),
            wake: crate::self_wake::ConnWake::new(),
        });
        let watcher = graceful.watcher(tls.is_some());
        let protocols = protocols.clone();
        match &tls {
            None => {
                // The service's and this task's references: more means a request (or
                // its response body) in flight.
                let probe = ctx.clone();
                let svc = service_fn(move |req| proxy::handle(ctx.clone(), req));
                tokio::spawn(async move {
                    let h1 = &protocols.h1;
                    let upgrade = &probe.upgrade;
                    let served = if protocols.parking {
                        // A request in flight, or a `101` on its way: never parked.
                        let busy = || Arc::strong_count(&probe) > 2 || upgrade.is_pending();
                        let head_timeout = protocols.handshake_timeout;
                        park::serve_parking(
                            h1,
                            stream,
                            svc,
                            watcher,
                            busy,
                            head_timeout,
                            park::Held {
                                permit: &permit,
                                upgrade,
                                wake: &probe.wake,
                            },
                        )
                        .await
                    } else {
                        h1_conn::serve_h1(h1, stream, svc, watcher, upgrade, &probe.wake).await
                    };
                    drop(permit);
                    if let Err(e) = served {
                        log_conn_error(&e, peer);
                    }
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                tokio::spawn(serve_tls(
                    stream, peer, acceptor, ctx, protocols, watcher, permit,
                ));
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
    mut watcher: drain::Watcher,
    _permit: ConnPermit,
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
    let conn = ctx.clone();
    let wake = ctx.wake.clone();
    let svc = service_fn(move |req| proxy::handle(ctx.clone(), req));
    let result = if is_h2 {
        let (io, activity) = ActivityIo::new(tls);
        let conn = protocols.h2.serve_connection(TokioIo::new(io), svc);
        tokio::pin!(conn);
        let run = drain::until_done(conn, &mut watcher, &wake);
        watch_idle(run, activity, protocols.idle_timeout).await
    } else {
        h1_conn::serve_h1(&protocols.h1, tls, svc, watcher, &conn.upgrade, &wake).await
    };
    if let Err(e) = result {
        log_conn_error(&e, peer);
    }
}

/// Wakes every connection once per `every` to park the idle ones (none when zero), and
/// moves the memory release epoch when more are parked than at the last tick; stops
/// when dropped.
fn sweep(drain: &Drain, caps: &Arc<ConnLimits>, every: Duration) -> Option<crate::AbortOnDrop> {
    if every.is_zero() {
        return None;
    }
    let sweeper = drain.sweeper();
    let caps = caps.clone();
    Some(crate::AbortOnDrop(tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        let parked = std::sync::atomic::AtomicUsize::new(0);
        // After a sweep, the connections it woke get a moment to park before the count
        // is read (and their freed memory returned).
        let settle = (every / 4).min(Duration::from_millis(100));
        loop {
            tick.tick().await;
            sweeper.sweep();
            tokio::time::sleep(settle).await;
            park::note_parked(caps.parked(), &parked);
        }
    })))
}

fn log_conn_error(e: &hyper::Error, peer: SocketAddr) {
    if e.is_timeout() {
        tracing::debug!(%peer, "closing a connection: request head not received in time");
    } else {
        tracing::debug!(%peer, error = %e, "connection error");
    }
}
