//! The data plane. Owns the listeners (HTTP, HTTPS), the request path (route, policies,
//! upstream proxy), and the one `ArcSwap<Snapshot>` a request loads once. Must not depend
//! on a store or the control plane: it only ever sees snapshots.
//!
//! Two ways in:
//! - [`run`]: `turnpike gateway --config FILE`, DB-less, the file watched and hot-swapped;
//! - [`Gateway::builder`]: serve from a snapshot handle someone else swaps
//!   (`Gateway::builder(settings).snapshots(handle).bind().await?.serve(shutdown)`), which
//!   is also how tests start a gateway on `127.0.0.1:0` and learn its addresses.

#![warn(unreachable_pub)]

mod access_log;
mod ai_providers;
mod answer;
mod client_body;
mod complete;
mod conn;
mod conn_limit;
mod drain;
mod edge;
pub mod endpoint_states;
mod error;
mod genai_metrics;
mod h1_conn;
mod headers;
pub mod health;
mod idle;
mod io;
mod lenient;
mod log_limit;
mod metric_labels;
mod metrics;
mod offload;
mod park;
mod proxy;
mod read_idle;
pub mod reload;
mod request_buffer;
mod response_body;
mod response_caches;
mod self_wake;
mod server;
mod throttle_runtime;
mod upgrade;
mod upstream;
mod well_known;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use turnpike_analytics::{Analytics, FileFormat, JsonLinesSink, PipelineSettings};
use turnpike_config::{PolicyRuntime, Snapshot};
use turnpike_otel::{Tracer, TracerSettings};

pub use access_log::{AccessLog, AccessLogTarget};
pub use conn_limit::raise_fd_limit;
pub use headers::TrustedProxies;
pub use health::Health;
pub use metrics::GatewayMetrics;
pub use offload::{policy_runtime, TokioOffload};
pub use park::{memory_release_epoch, set_memory_release};
pub use server::{
    BoundGateway, Gateway, GatewayBuilder, GatewayHandle, ServeError, ServerSettings, Stop,
};
pub use throttle_runtime::{start_throttling, ThrottleTasks};
pub use turnpike_policy::error::{Blame, ErrorKind, GatewayError};
pub use turnpike_policy::{
    Answer, Authenticated, Chain, Completion, Flow, Hooks, Observer, Policy, RequestCtx,
    ResponseStream, Step, Timings, UpstreamTarget,
};
pub use turnpike_tls::TlsSource;
pub use upgrade::ws;

/// Command-line arguments of `turnpike gateway`.
#[derive(Debug, Clone, clap::Args)]
pub struct GatewayArgs {
    /// Declarative API file (DB-less mode); watched and reloaded on change and on SIGHUP.
    /// (`turnpike gateway` needs it or --control-plane; `turnpike up` refuses both.)
    #[arg(long, env = "TURNPIKE_CONFIG", conflicts_with = "control_plane")]
    pub config: Option<PathBuf>,
    /// Let a reload swap in a file that declares no API (every request then answers 404).
    /// Without it such a file (empty, truncated) is refused and the running APIs stay.
    #[arg(long, env = "TURNPIKE_ALLOW_EMPTY")]
    pub allow_empty: bool,
    /// Control plane base URL (e.g. http://127.0.0.1:9400): follow its snapshots by
    /// long-poll instead of reading a file. Several control planes on one database:
    /// repeat the flag or separate URLs with commas; the gateway uses the first that
    /// answers and fails over (and back) by itself.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        requires = "gateway_token",
        value_delimiter = ','
    )]
    pub control_plane: Vec<String>,
    /// Seconds on another control plane before trying the first one again.
    #[arg(long, env = "TURNPIKE_CONTROL_PLANE_FAILBACK", default_value_t = 30.0)]
    pub control_plane_failback: f64,
    /// The control plane's gateway token (printed by `turnpike control-plane`).
    #[arg(long, env = "TURNPIKE_GATEWAY_TOKEN", hide_env_values = true)]
    pub gateway_token: Option<String>,
    /// PEM CA certificate(s) an `https://` control plane's certificate must chain to (its
    /// self-signed `tls/cert.pem`, or a private CA); default: the web PKI roots. A
    /// control plane whose certificate does not verify is never followed.
    #[arg(long, env = "TURNPIKE_CONTROL_PLANE_CA")]
    pub control_plane_ca: Option<PathBuf>,
    /// Client certificate (PEM) this gateway presents to the control plane (mTLS, with
    /// --control-plane-key); reloaded when its files change.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE_CERT",
        requires = "control_plane_key"
    )]
    pub control_plane_cert: Option<PathBuf>,
    /// Private key of --control-plane-cert.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE_KEY",
        requires = "control_plane_cert"
    )]
    pub control_plane_key: Option<PathBuf>,
    /// With --control-plane: seconds a snapshot may go without the control plane
    /// confirming it current (a long-poll answered) before credentials are refused with
    /// `503 snapshot_stale` (open resources are still served): bounds how long an
    /// application, key or subscription revoked during an outage still gets in. The
    /// long-poll then waits at most a quarter of it. 0: no bound.
    #[arg(long, env = "TURNPIKE_MAX_SNAPSHOT_AGE", default_value_t = 86_400.0)]
    pub max_snapshot_age: f64,
    /// Name shown in the control plane's gateway list.
    #[arg(long, env = "TURNPIKE_GATEWAY_ID", default_value = "gateway")]
    pub gateway_id: String,
    /// Plain HTTP port: a number, 0 for any free port, or `off`.
    #[arg(long, env = "TURNPIKE_HTTP_PORT", default_value = "8280", value_parser = parse_port)]
    pub http_port: Port,
    /// HTTPS port (HTTP/2 and HTTP/1.1 by ALPN): a number, 0 for any free port, or `off`.
    #[arg(long, env = "TURNPIKE_HTTPS_PORT", default_value = "8243", value_parser = parse_port)]
    pub https_port: Port,
    /// Address to listen on.
    #[arg(long, env = "TURNPIKE_BIND", default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Where generated state lives (the self-signed certificate under `tls/`).
    #[arg(long, env = "TURNPIKE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// PEM certificate chain for HTTPS (with --tls-key); else a self-signed one is made.
    #[arg(long, env = "TURNPIKE_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS.
    #[arg(long, env = "TURNPIKE_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Largest request head accepted, in bytes (larger gets 431).
    #[arg(long, env = "TURNPIKE_MAX_HEADER_BYTES", default_value_t = 64 * 1024)]
    pub max_header_bytes: usize,
    /// Seconds allowed to receive a request head (and the next one on an idle
    /// HTTP/1.1 keep-alive connection) and a TLS handshake.
    #[arg(long, env = "TURNPIKE_HEADER_READ_TIMEOUT", default_value_t = 30.0)]
    pub header_read_timeout: f64,
    /// Seconds a request body may pause (no bytes from the client) before the request
    /// is answered `408 request_timeout`; also, a body still arriving when the API's
    /// response timeout ends gets 408 rather than the upstream's 504. 0: no limit.
    #[arg(long, env = "TURNPIKE_BODY_READ_TIMEOUT", default_value_t = 30.0)]
    pub body_read_timeout: f64,
    /// Seconds an HTTP/2 connection may stay silent before it is closed.
    #[arg(long, env = "TURNPIKE_IDLE_TIMEOUT", default_value_t = 60.0)]
    pub idle_timeout: f64,
    /// Seconds a plain HTTP/1.1 keep-alive connection must stay idle (no request in
    /// flight, no bytes received) before it is parked: its buffers are freed until the
    /// client sends again, so idle clients cost about a kilobyte each. 0: never parked.
    #[arg(long, env = "TURNPIKE_PARK_IDLE_AFTER", default_value_t = 2.0)]
    pub park_idle_after: f64,
    /// Seconds in-flight requests get to finish once accepting stopped.
    #[arg(long, env = "TURNPIKE_DRAIN_TIMEOUT", default_value_t = 30.0)]
    pub drain_timeout: f64,
    /// Seconds after SIGTERM during which `/ready` fails but connections are still
    /// accepted and served, so a balancer or Kubernetes moves traffic away before anything
    /// is refused. SIGINT or a second signal skips it.
    #[arg(long, env = "TURNPIKE_DRAIN_DELAY", default_value_t = 5.0)]
    pub drain_delay: f64,
    /// Client connections held at once (all listeners); more are refused with
    /// `503 too_many_connections`. Default: half the open-file limit, which the gateway
    /// raises to its hard limit at start.
    #[arg(long, env = "TURNPIKE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Client connections held at once per client IP; more get
    /// `429 too_many_client_connections`. Default: a quarter of --max-connections, so
    /// that one address cannot take every place; 0: no cap (behind a balancer every
    /// connection comes from the balancer's few addresses: raise it or set 0 there).
    #[arg(long, env = "TURNPIKE_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Connections open to one upstream endpoint at once (idle and busy); past it a
    /// request waits for one to be free, up to the API's connect timeout, then gets
    /// `503 upstream_busy`. 0: no cap.
    #[arg(long, env = "TURNPIKE_MAX_UPSTREAM_CONNECTIONS", default_value_t = upstream::pool::DEFAULT_MAX_CONNECTIONS_PER_ENDPOINT)]
    pub max_upstream_connections: usize,
    /// Peers whose forwarding headers are believed: a comma-separated list of addresses
    /// and CIDR blocks (`10.0.0.0/8,2001:db8::/32`), e.g. the balancer in front of the
    /// gateway. From any other peer, `X-Forwarded-*`, `Forwarded` and `X-Real-IP` are
    /// dropped and `X-Forwarded-For` starts at the peer. Empty (default): nobody.
    #[arg(long, env = "TURNPIKE_TRUSTED_PROXIES", default_value = "", value_parser = headers::TrustedProxies::parse)]
    pub trusted_proxies: headers::TrustedProxies,
    /// The gateway's public base URL as clients reach it (`https://api.example.com`):
    /// the base of each API's OAuth resource URI (RFC 8707 `resource`, a token's `aud`)
    /// and of its Protected Resource Metadata (RFC 9728; docs/security.md). Default:
    /// the scheme and `Host` of each request, i.e. the listen address for clients that
    /// dial it.
    #[arg(long = "public-url", env = "TURNPIKE_GATEWAY_PUBLIC_URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// MiB that all request bodies being buffered (an API's `request_buffering`) may hold
    /// at once; past it, a body streams to the upstream as it arrives instead.
    #[arg(long, env = "TURNPIKE_REQUEST_BUFFER_MIB", default_value_t = server::DEFAULT_REQUEST_BUFFER_MIB)]
    pub request_buffer_mib: u64,
    /// Access log: a file path (appended) or `-` for stdout. Off when absent.
    #[arg(long, env = "TURNPIKE_ACCESS_LOG")]
    pub access_log: Option<String>,
    /// Runtime worker threads (read by the binary); default one per CPU.
    #[arg(long, env = "TURNPIKE_WORKERS")]
    pub workers: Option<usize>,
    /// Redis URL (`redis://host:port/db`): share throttle quotas with the other gateways,
    /// leased in batches by a background task (no Redis call on the request path), and
    /// the response cache of APIs whose cache says `shared: redis` (docs/caching.md).
    #[arg(long, env = "TURNPIKE_REDIS")]
    pub redis: Option<String>,
    /// While Redis is unreachable: `open` (each gateway enforces the full limit alone)
    /// or `closed` (only what Redis had granted, then 429).
    #[arg(long, env = "TURNPIKE_REDIS_FAIL", default_value = "open", value_parser = throttle_runtime::parse_fail_mode)]
    pub redis_fail: turnpike_throttle::FailMode,
    /// Quota leased per key per Redis round (`b`; over-admission is at most nodes x b).
    #[arg(long, env = "TURNPIKE_REDIS_BATCH", default_value_t = 100)]
    pub redis_batch: u64,
    /// Milliseconds between lease rounds.
    #[arg(long, env = "TURNPIKE_REDIS_SYNC_MS", default_value_t = 50)]
    pub redis_sync_ms: u64,
    /// Management listener: Prometheus metrics at `GET /metrics`, liveness at
    /// `GET /health`, readiness at `GET /ready` (docs/operations.md), e.g.
    /// `127.0.0.1:9091` (port 0: any free port). Off when absent.
    #[arg(long, alias = "management-addr", env = "TURNPIKE_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Also count requests per resource template
    /// (`turnpike_http_resource_requests_total`): one series per template and status
    /// class, so off by default.
    #[arg(long, env = "TURNPIKE_METRICS_PER_RESOURCE")]
    pub metrics_per_resource: bool,
    /// Analytics (docs/analytics.md): `on` sums requests into per-minute rollups and
    /// ships them to the control plane this gateway follows every
    /// `--analytics-interval`, or writes `--analytics-file` when given; `off` builds no
    /// record at all.
    #[arg(long, env = "TURNPIKE_ANALYTICS", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub analytics: bool,
    /// Write analytics to this file as JSON lines (DB-less gateways; with
    /// --control-plane the file replaces shipping).
    #[arg(long, env = "TURNPIKE_ANALYTICS_FILE")]
    pub analytics_file: Option<PathBuf>,
    /// What the analytics file holds: one event per request with Turnpike's field names
    /// (`turnpike`) or WSO2's (`wso2`), or per-minute rollup rows (`rollups`, written
    /// every `--analytics-interval`; the cheapest).
    #[arg(long, env = "TURNPIKE_ANALYTICS_FORMAT", default_value = "turnpike", value_parser = FileFormat::parse)]
    pub analytics_format: FileFormat,
    /// Seconds between two shipments of rollups (to the control plane or a rollups
    /// file); rows of one minute shipped in several pieces add up.
    #[arg(long, env = "TURNPIKE_ANALYTICS_INTERVAL", default_value = "10", value_parser = parse_interval)]
    pub analytics_interval: Duration,
    /// While the control plane is unreachable, seconds a shipment of analytics waits
    /// (in `DATA_DIR/analytics-spool/`, sent oldest first when it answers); older ones
    /// are dropped, counted in `/metrics` (`turnpike_analytics_spool_dropped_total`).
    #[arg(long, env = "TURNPIKE_ANALYTICS_BUFFER_AGE", default_value = "600", value_parser = parse_secs)]
    pub analytics_buffer_age: Duration,
    /// Bytes of analytics shipments kept while the control plane is unreachable; past
    /// it the oldest are dropped (counted).
    #[arg(long, env = "TURNPIKE_ANALYTICS_BUFFER_BYTES", default_value_t = 64 << 20)]
    pub analytics_buffer_bytes: u64,
    /// Events the analytics queue holds; when full the oldest are dropped (counted in
    /// `/metrics`).
    #[arg(long, env = "TURNPIKE_ANALYTICS_QUEUE", default_value_t = 16_384)]
    pub analytics_queue: usize,
    /// OpenTelemetry traces (docs/observability.md): the OTLP/HTTP collector's base URL
    /// (`http://host:4318`); spans go to `{URL}/v1/traces`. Off when absent: then
    /// `traceparent` passes through untouched.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans.
    #[arg(long, env = "OTEL_SERVICE_NAME", default_value = "turnpike-gateway")]
    pub otlp_service_name: String,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        other => Err(format!("`{other}`: expected on or off")),
    }
}

/// A listener port: `None` is off.
pub type Port = Option<u16>;

fn parse_port(s: &str) -> Result<Port, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    s.parse::<u16>()
        .map(Some)
        .map_err(|_| format!("`{s}` is not a port (0-65535) or `off`"))
}

/// A shipping interval: 0.01 to 3600 seconds.
fn parse_interval(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| (0.01..=3600.0).contains(v))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{s}`: expected seconds between 0.01 and 3600"))
}

/// Seconds, non-negative.
fn parse_secs(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|v| Duration::try_from_secs_f64(v).ok())
        .ok_or_else(|| format!("`{s}`: expected a number of seconds"))
}

fn secs(name: &str, v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v).map_err(|_| format!("--{name}: `{v}` is not a duration"))
}

/// `--public-url`: an absolute `http(s)` URL without query or fragment.
fn parse_public_url(s: &str) -> Result<String, String> {
    let uri: http::Uri = s.parse().map_err(|e| format!("not a URL: {e}"))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.authority().is_none() || uri.query().is_some() || s.contains('#') {
        return Err(
            "an absolute http:// or https:// URL without query, e.g. https://api.example.com"
                .into(),
        );
    }
    Ok(s.trim_end_matches('/').to_owned())
}

impl GatewayArgs {
    /// Gives the policies `--public-url` (the base of every API's resource URI) before
    /// any snapshot is compiled against `runtime`.
    pub fn share_public_url(&self, runtime: &PolicyRuntime) {
        if let Some(url) = &self.public_url {
            runtime.auth.set_public_url(url);
        }
    }

    /// The TLS of every call to the control plane (snapshot long-poll, status reports,
    /// analytics shipping): `--control-plane-ca` and the mTLS pair; `None` when neither
    /// is set (the web PKI roots, no client certificate).
    pub fn control_plane_tls(
        &self,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, turnpike_tls::TlsError> {
        if self.control_plane_ca.is_none() && self.control_plane_cert.is_none() {
            return Ok(None);
        }
        turnpike_tls::client_config(&turnpike_tls::ClientTls {
            ca: self.control_plane_ca.clone(),
            cert: self.control_plane_cert.clone(),
            key: self.control_plane_key.clone(),
        })
        .map(Some)
    }

    /// `--max-snapshot-age`: `None` when 0 (no bound).
    pub fn max_snapshot_age(&self) -> Result<Option<Duration>, String> {
        let age = secs("max-snapshot-age", self.max_snapshot_age)?;
        Ok(Some(age).filter(|a| !a.is_zero()))
    }

    /// The transport settings these flags describe.
    /// Raises the open-file limit as a side effect (once, at start).
    pub fn settings(&self) -> Result<ServerSettings, String> {
        let fd_limit = conn_limit::raise_fd_limit();
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => TlsSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            (None, None) => TlsSource::SelfSigned {
                data_dir: self.data_dir.clone(),
            },
            _ => return Err("--tls-cert and --tls-key must be given together".into()),
        };
        let max_connections = self
            .max_connections
            .unwrap_or_else(|| conn_limit::default_max_connections(fd_limit));
        Ok(ServerSettings {
            bind: self.bind,
            http_port: self.http_port,
            https_port: self.https_port,
            tls,
            max_header_bytes: self.max_header_bytes,
            header_read_timeout: secs("header-read-timeout", self.header_read_timeout)?,
            body_read_timeout: secs("body-read-timeout", self.body_read_timeout)?,
            idle_timeout: secs("idle-timeout", self.idle_timeout)?,
            park_after: secs("park-idle-after", self.park_idle_after)?,
            drain_timeout: secs("drain-timeout", self.drain_timeout)?,
            drain_delay: secs("drain-delay", self.drain_delay)?,
            max_connections,
            max_connections_per_ip: self
                .max_connections_per_ip
                .unwrap_or_else(|| conn_limit::default_max_connections_per_ip(max_connections)),
            max_upstream_connections: self.max_upstream_connections,
            access_log: self.access_log.as_deref().map(AccessLogTarget::parse),
            trusted_proxies: self.trusted_proxies.clone(),
            request_buffer_bytes: self.request_buffer_mib.saturating_mul(1 << 20),
        })
    }
}

/// Runs the DB-less gateway until SIGTERM/SIGINT, then drains and returns.
/// Prints `gateway listening on http://ADDR` / `https://ADDR` on stdout (so scripts can
/// read the ports when 0 was asked for).
pub async fn run(args: GatewayArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let config = args.config.clone().ok_or(
        "`turnpike gateway` needs --config FILE (DB-less) or --control-plane URL --gateway-token T",
    )?;
    let runtime = Arc::new(policy_runtime());
    args.share_public_url(&runtime);
    let _throttling = start_throttling(&args, &runtime)?;
    let snapshot = Snapshot::load_with(&config, &runtime)?;
    tracing::info!(file = %config.display(), apis = snapshot.apis.len(), "config loaded");
    let snapshots = Arc::new(ArcSwap::from_pointee(snapshot));
    let empty = if args.allow_empty {
        reload::EmptyFile::Allow
    } else {
        reload::EmptyFile::Refuse
    };
    let watcher = reload::spawn_watcher(config, snapshots.clone(), runtime, empty);
    let result = serve_until_terminated(&args, snapshots, Health::new(true)).await;
    watcher.abort();
    result
}

/// Binds the listeners the flags describe, serves from `snapshots` (swapped by whoever
/// owns it: the file watcher, or a control-plane follower) until SIGTERM/SIGINT, drains.
/// `health` says whether a snapshot is loaded yet (the management listener's `/ready`).
/// Prints `gateway listening on http://ADDR` / `https://ADDR` on stdout.
pub async fn serve_until_terminated(
    args: &GatewayArgs,
    snapshots: Arc<ArcSwap<Snapshot>>,
    health: Arc<Health>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    bind_from_args(args, snapshots, health)
        .await?
        .serve_until_terminated()
        .await
}

/// The gateway every mode runs (`gateway --config`, `gateway --control-plane`, `up`):
/// the listeners and the management listener its flags describe, bound, not yet serving.
pub struct FlagGateway {
    /// The bound listeners (their addresses, for what to print).
    pub bound: BoundGateway,
    management: Option<AbortOnDrop>,
    /// The analytics pipeline, when on and something receives its events.
    pub analytics: Option<Arc<Analytics>>,
    /// The trace exporter, when `--otlp-endpoint` is set.
    pub tracer: Option<Arc<Tracer>>,
}

impl FlagGateway {
    /// Serves until SIGTERM/SIGINT, then drains (the drain delay, then in-flight
    /// requests), and stops the management listener.
    pub async fn serve_until_terminated(
        self,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let (first, second) = stop_signals();
        self.bound.serve_until(first, second).await?;
        drop(self.management);
        if let Some(a) = &self.analytics {
            a.close(Duration::from_secs(5)).await;
        }
        if let Some(t) = &self.tracer {
            t.close(Duration::from_secs(5)).await;
        }
        Ok(())
    }
}

/// Binds what the flags describe: the HTTP and HTTPS listeners, the access log, the
/// management listener with metrics (`--metrics-addr`). Prints `gateway listening on
/// http://ADDR` / `https://ADDR` and `gateway metrics on http://ADDR/metrics` on stdout (so
/// scripts can read the ports when 0 was asked for).
pub async fn bind_from_args(
    args: &GatewayArgs,
    snapshots: Arc<ArcSwap<Snapshot>>,
    health: Arc<Health>,
) -> Result<FlagGateway, Box<dyn std::error::Error + Send + Sync>> {
    let settings = args.settings()?;
    let mut builder = Gateway::builder(settings)
        .snapshots(snapshots.clone())
        .health(health.clone());
    let mut management = None;
    let mut gateway_metrics = None;
    if let Some(addr) = args.metrics_addr {
        let listener = metrics::bind(addr)
            .await
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        let m = GatewayMetrics::with_options(snapshots, args.metrics_per_resource);
        if let Ok(a) = listener.local_addr() {
            println!("gateway metrics on http://{a}/metrics");
            tracing::info!(addr = %a, "metrics listener");
        }
        management = Some(AbortOnDrop(tokio::spawn(metrics::serve(
            listener,
            m.clone(),
            health,
        ))));
        builder = builder.metrics(m.clone());
        gateway_metrics = Some(m);
    }
    let analytics = analytics_from_args(args)?;
    if let Some(a) = &analytics {
        builder = builder.observer(a.clone());
        if let Some(m) = &gateway_metrics {
            let a = Arc::downgrade(a);
            m.add_section(Box::new(move |out| {
                if let Some(a) = a.upgrade() {
                    a.render_metrics(out);
                }
            }));
        }
    }
    let tracer = match &args.otlp_endpoint {
        Some(endpoint) => {
            let mut settings = TracerSettings::new(endpoint);
            settings.service_name = args.otlp_service_name.clone();
            settings.gateway_id = args.gateway_id.clone();
            let t = Tracer::start(settings)?;
            tracing::info!(endpoint = %endpoint, "OpenTelemetry traces on");
            builder = builder.trace(true).observer(t.clone());
            if let Some(m) = &gateway_metrics {
                let t = Arc::downgrade(&t);
                m.add_section(Box::new(move |out| {
                    if let Some(t) = t.upgrade() {
                        t.render_metrics(out);
                    }
                }));
            }
            Some(t)
        }
        None => None,
    };
    let bound = builder.bind().await?;
    if let Some(m) = &gateway_metrics {
        let conns = Arc::downgrade(&bound.connections());
        m.add_section(Box::new(move |out| {
            if let Some(c) = conns.upgrade() {
                use std::fmt::Write as _;
                let _ = writeln!(
                    out,
                    "# HELP turnpike_connections_open Client connections open\n# TYPE turnpike_connections_open gauge\nturnpike_connections_open {}\n# HELP turnpike_connections_parked Idle client connections parked (holding no buffers)\n# TYPE turnpike_connections_parked gauge\nturnpike_connections_parked {}\n# HELP turnpike_connections_upgraded Client connections upgraded to a WebSocket\n# TYPE turnpike_connections_upgraded gauge\nturnpike_connections_upgraded {}",
                    c.open(),
                    c.parked(),
                    c.upgraded()
                );
            }
        }));
    }
    if let (Some(m), Some(log)) = (&gateway_metrics, bound.access_log()) {
        let log = Arc::downgrade(&log);
        m.add_section(Box::new(move |out| {
            if let Some(log) = log.upgrade() {
                use std::fmt::Write as _;
                let _ = writeln!(
                    out,
                    "# HELP turnpike_access_log_dropped_total Access log lines dropped because the writer fell behind\n# TYPE turnpike_access_log_dropped_total counter\nturnpike_access_log_dropped_total {}",
                    log.dropped()
                );
            }
        }));
    }
    if let Some(a) = bound.http_addr() {
        println!("gateway listening on http://{a}");
        tracing::info!(addr = %a, "HTTP listener");
    }
    if let Some(a) = bound.https_addr() {
        println!("gateway listening on https://{a}");
        tracing::info!(addr = %a, "HTTPS listener");
    }
    Ok(FlagGateway {
        bound,
        management,
        analytics,
        tracer,
    })
}

/// The analytics pipeline the flags ask for: the JSON-lines file, else shipping to the
/// followed control plane; `None` when off or when nothing would receive the events.
fn analytics_from_args(
    args: &GatewayArgs,
) -> Result<Option<Arc<Analytics>>, Box<dyn std::error::Error + Send + Sync>> {
    if !args.analytics {
        return Ok(None);
    }
    let sink: Box<dyn turnpike_analytics::Sink> = match (
        &args.analytics_file,
        // Analytics go to the first control plane (all share one database).
        args.control_plane.first(),
        &args.gateway_token,
    ) {
        (Some(path), _, _) => Box::new(JsonLinesSink::new(path, args.analytics_format)),
        (None, Some(cp), Some(token)) => {
            let spool = turnpike_analytics::SpoolSettings {
                max_age: args.analytics_buffer_age,
                max_bytes: args.analytics_buffer_bytes,
                dir: Some(args.data_dir.join("analytics-spool")),
            };
            let tls = args.control_plane_tls()?;
            Box::new(
                turnpike_analytics::ship::ShipSink::with_tls(cp, token, tls)?.with_spool(spool),
            )
        }
        _ => return Ok(None),
    };
    let settings = PipelineSettings {
        capacity: args.analytics_queue,
        gateway: args.gateway_id.clone(),
        ship_every: args.analytics_interval,
        ..PipelineSettings::default()
    };
    tracing::info!(queue = settings.capacity, "analytics on");
    Ok(Some(Analytics::start(settings, sink)))
}

/// The gateway's stop signals: the first SIGTERM drains ([`Stop::Drain`]: readiness
/// fails, the drain delay), a SIGINT stops accepting at once; the second future resolves
/// on the next signal (which ends the delay or the drain early).
pub fn stop_signals() -> (
    impl Future<Output = Stop> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    let (tx, rx) = tokio::sync::watch::channel((0u32, Stop::Now));
    tokio::spawn(async move {
        let mut signals = SignalStream::new();
        loop {
            let how = signals.next().await;
            tx.send_modify(|(n, first)| {
                if *n == 0 {
                    *first = how;
                }
                *n += 1;
            });
        }
    });
    let mut first_rx = rx.clone();
    let first = async move {
        match first_rx.wait_for(|(n, _)| *n >= 1).await {
            Ok(seen) => seen.1,
            Err(_) => Stop::Now,
        }
    };
    let mut second_rx = rx;
    let second = async move {
        let _ = second_rx.wait_for(|(n, _)| *n >= 2).await;
    };
    (first, second)
}

/// SIGTERM ([`Stop::Drain`]) and SIGINT ([`Stop::Now`]), registered once.
struct SignalStream {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl SignalStream {
    fn new() -> Self {
        SignalStream {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    async fn next(&mut self) -> Stop {
        #[cfg(unix)]
        if let Some(term) = &mut self.term {
            return tokio::select! {
                _ = term.recv() => Stop::Drain,
                _ = tokio::signal::ctrl_c() => Stop::Now,
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        Stop::Now
    }
}

/// Stops a background task when dropped.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod analytics_flag_tests {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        gateway: super::GatewayArgs,
    }

    fn analytics(args: &[&str]) -> Result<bool, String> {
        let argv = std::iter::once("gateway").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .map(|c| c.gateway.analytics)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn analytics_takes_on_or_off() {
        assert_eq!(analytics(&[]), Ok(true));
        assert_eq!(analytics(&["--analytics", "off"]), Ok(false));
        assert_eq!(analytics(&["--analytics", "on"]), Ok(true));
        assert!(analytics(&["--analytics", "maybe"]).is_err());
    }

    fn parsed(args: &[&str]) -> Result<super::GatewayArgs, String> {
        let argv = std::iter::once("gateway").chain(args.iter().copied());
        Cli::try_parse_from(argv)
            .map(|c| c.gateway)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_per_ip_connection_cap_is_on_by_default_and_can_be_turned_off() {
        let caps = |args: &[&str]| {
            let s = parsed(args).expect("flags").settings().expect("settings");
            (s.max_connections, s.max_connections_per_ip)
        };
        assert_eq!(caps(&["--max-connections", "10000"]), (10_000, 2_500));
        assert_eq!(
            caps(&["--max-connections", "100", "--max-connections-per-ip", "0"]),
            (100, 0)
        );
        assert_eq!(
            caps(&["--max-connections", "100", "--max-connections-per-ip", "7"]),
            (100, 7)
        );
    }

    #[test]
    fn analytics_format_and_interval() {
        use std::time::Duration;
        use turnpike_analytics::{EventFormat, FileFormat};
        let d = parsed(&[]).expect("defaults");
        assert_eq!(
            d.analytics_format,
            FileFormat::Events(EventFormat::Turnpike)
        );
        assert_eq!(d.analytics_interval, Duration::from_secs(10));
        let r = parsed(&[
            "--analytics-format",
            "rollups",
            "--analytics-interval",
            "0.5",
        ])
        .expect("rollups");
        assert_eq!(r.analytics_format, FileFormat::Rollups);
        assert_eq!(r.analytics_interval, Duration::from_millis(500));
        for bad in ["0", "-1", "nan", "soon", "7200"] {
            assert!(parsed(&["--analytics-interval", bad]).is_err(), "{bad}");
        }
        assert!(parsed(&["--analytics-format", "csv"]).is_err());
    }

    #[test]
    fn trusted_proxies_are_a_list_of_blocks_checked_at_start() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().expect("ip");
        assert!(parsed(&[]).expect("defaults").trusted_proxies.is_empty());
        let t = parsed(&["--trusted-proxies", "10.0.0.0/8,2001:db8::/32"])
            .expect("list")
            .trusted_proxies;
        assert!(t.contains(ip("10.1.2.3")) && t.contains(ip("2001:db8::7")));
        assert!(!t.contains(ip("127.0.0.1")));
        let bad = parsed(&["--trusted-proxies", "10.0.0.0/40"]).err();
        assert!(bad.is_some_and(|e| e.contains("--trusted-proxies")));
    }
}
