//! Test support: start a gateway in-process on 127.0.0.1:0 with a YAML config, and small
//! upstreams on 127.0.0.1:0 (the real `turnpike echo`, a header-reflecting one, one that
//! holds requests until released). Nothing here uses fixed ports or sleeps to wait.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Notify};
use turnpike_config::Snapshot;
use turnpike_gateway::{Gateway, GatewayBuilder, GatewayHandle, ServerSettings};

pub struct TestGateway {
    pub handle: GatewayHandle,
    pub http: SocketAddr,
    pub https: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl TestGateway {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.http, path)
    }

    pub fn snapshots(&self) -> &Arc<ArcSwap<Snapshot>> {
        &self.handle.snapshots
    }

    /// Swaps in a new config (must be valid).
    pub fn swap(&self, yaml: &str) {
        let snap = Snapshot::from_yaml(yaml, "test").expect("valid test config");
        self.snapshots().store(Arc::new(snap));
    }
}

pub async fn gateway(yaml: &str) -> TestGateway {
    gateway_with(yaml, |_| {}).await
}

pub async fn gateway_with(yaml: &str, tweak: impl FnOnce(&mut ServerSettings)) -> TestGateway {
    let snap = Snapshot::from_yaml(yaml, "test").expect("valid test config");
    gateway_serving(snap, tweak).await
}

/// A gateway serving `snap` (compiled by the caller, e.g. on a runtime of its own).
pub async fn gateway_serving(
    snap: Snapshot,
    tweak: impl FnOnce(&mut ServerSettings),
) -> TestGateway {
    let snaps = Arc::new(ArcSwap::from_pointee(snap));
    gateway_built(snaps, tweak, |b| b).await
}

/// A gateway serving `snaps`, its settings adjusted by `tweak` and its builder by
/// `build` (observers).
pub async fn gateway_built(
    snaps: Arc<ArcSwap<Snapshot>>,
    tweak: impl FnOnce(&mut ServerSettings),
    build: impl FnOnce(GatewayBuilder) -> GatewayBuilder,
) -> TestGateway {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = ServerSettings::local(dir.path());
    tweak(&mut settings);
    let bound = build(Gateway::builder(settings).snapshots(snaps))
        .bind()
        .await
        .expect("gateway binds");
    let http = bound.http_addr().expect("http listener");
    let https = bound.https_addr().expect("https listener");
    TestGateway {
        handle: bound.spawn(),
        http,
        https,
        dir,
    }
}

/// One API `name` at `/{name}/v1` (default version) over `endpoints`, any path and method.
pub fn api(name: &str, endpoints: &[String], extra: &str) -> String {
    let eps: Vec<String> = endpoints.iter().map(|e| format!("\"{e}\"")).collect();
    format!(
        "  - name: {name}\n    context: /{name}\n    version: v1\n    default: true\n    \
         endpoints: [{}]\n{extra}    resources:\n      - {{ path: \"/*\", methods: [\"*\"] }}\n",
        eps.join(", ")
    )
}

pub fn config(apis: &[String]) -> String {
    format!("apis:\n{}", apis.concat())
}

pub fn http(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// A plain HTTP/1.1 client that never uses a proxy.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The real echo back end of the bench kit.
pub async fn echo() -> SocketAddr {
    turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig::default())
        .await
        .expect("echo starts")
}

pub async fn echo_delayed(delay: Duration) -> SocketAddr {
    turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        delay,
        ..Default::default()
    })
    .await
    .expect("echo starts")
}

/// A loopback address nobody listens on (bound, then closed).
pub fn refused_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

async fn serve_fn<F, Fut>(f: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            let f = f.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let f = f.clone();
                    async move { Ok::<_, Infallible>(f(req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    addr
}

/// Answers JSON describing what it received: upstream name, method, path (with query),
/// version, headers (repeated ones joined by ", "), and body length. Reads the whole
/// body before answering.
pub async fn inspect(name: &'static str) -> SocketAddr {
    serve_fn(move |req: Request<Incoming>| async move {
        let (parts, body) = req.into_parts();
        let len = body
            .collect()
            .await
            .map(|b| b.to_bytes().len())
            .unwrap_or(0);
        let mut headers = serde_json::Map::new();
        for k in parts.headers.keys() {
            let vals: Vec<&str> = parts
                .headers
                .get_all(k)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            headers.insert(k.as_str().to_owned(), vals.join(", ").into());
        }
        let v = serde_json::json!({
            "upstream": name,
            "method": parts.method.as_str(),
            "path": parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or(""),
            "version": format!("{:?}", parts.version),
            "headers": headers,
            "body_len": len,
        });
        let mut resp = Response::new(Full::new(Bytes::from(v.to_string())));
        let h = resp.headers_mut();
        h.insert("content-type", "application/json".parse().expect("hv"));
        // Hop-by-hop headers the gateway must not pass on to the client.
        h.insert("keep-alive", "timeout=5".parse().expect("hv"));
        h.insert("connection", "x-upstream-secret".parse().expect("hv"));
        h.insert("x-upstream-secret", "1".parse().expect("hv"));
        resp
    })
    .await
}

/// An upstream that counts the requests it answers (`calls`) and answers each with
/// `{path} call {n}`, `n` counting every request it got.
pub struct Numbered {
    pub addr: SocketAddr,
    pub calls: Arc<std::sync::atomic::AtomicUsize>,
}

pub async fn numbered() -> Numbered {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let addr = serve_fn(move |req: Request<Incoming>| {
        let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let body = format!("{} call {n}", req.uri().path());
        async move { Response::new(Full::new(Bytes::from(body))) }
    })
    .await;
    Numbered { addr, calls }
}

/// An upstream that reports each arrival and answers only when released.
pub struct Holding {
    pub addr: SocketAddr,
    pub arrivals: mpsc::UnboundedReceiver<()>,
    pub release: Arc<Notify>,
}

pub async fn holding() -> Holding {
    let (tx, arrivals) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    let addr = serve_fn(move |_req: Request<Incoming>| {
        let tx = tx.clone();
        let r = r.clone();
        async move {
            let _ = tx.send(());
            r.notified().await;
            Response::new(Full::new(Bytes::from_static(b"released")))
        }
    })
    .await;
    Holding {
        addr,
        arrivals,
        release,
    }
}

/// Parses the gateway's JSON error body.
pub async fn error_body(resp: reqwest::Response) -> serde_json::Value {
    json_of(resp).await
}

/// Parses a JSON response body.
pub async fn json_of(resp: reqwest::Response) -> serde_json::Value {
    let text = resp.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The seed's Star Wars schema (what `turnpike echo --graphql` answers).
pub const STARWARS: &str =
    include_str!("../../../../bench/graphql/starwars/starwars-schema.graphql");

/// `turnpike echo --graphql` in-process on 127.0.0.1:0: the Star Wars back end.
pub async fn graphql_echo() -> SocketAddr {
    let gql = turnpike_bench::graphql_echo::GraphqlBackend::new(None).expect("schema");
    turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        graphql: Some(Arc::new(gql)),
        ..Default::default()
    })
    .await
    .expect("echo")
}

/// A back end that counts the connections it accepted and the requests it is reading
/// (head received, not yet answered), and answers each request with the number of body
/// bytes it read.
pub struct Counting {
    pub addr: SocketAddr,
    pub accepted: Arc<std::sync::atomic::AtomicUsize>,
    pub active: Arc<std::sync::atomic::AtomicUsize>,
}

impl Counting {
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
    pub fn active(&self) -> usize {
        self.active.load(std::sync::atomic::Ordering::SeqCst)
    }
}

pub async fn counting() -> Counting {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (count, busy) = (accepted.clone(), active.clone());
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let busy = busy.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let busy = busy.clone();
                    async move {
                        busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let n = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes().len())
                            .unwrap_or(0);
                        busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(n.to_string()))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    Counting {
        addr,
        accepted,
        active,
    }
}

/// A TLS connection to the gateway's HTTPS listener, trusting its self-signed
/// certificate and offering `alpn`.
pub async fn tls_connect(
    gw: &TestGateway,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    tls_to(gw.https, &gw.dir.path().join("tls").join("cert.pem"), alpn).await
}

/// A TLS connection to `addr` trusting the certificate in `cert` (PEM), offering `alpn`.
pub async fn tls_to(
    addr: SocketAddr,
    cert: &std::path::Path,
    alpn: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let pem = std::fs::read(cert).expect("cert");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.expect("a certificate")).expect("root");
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
        .connect(name, tcp)
        .await
        .expect("TLS")
}

/// An SSE back end: each request's event sender goes to the test, which decides when
/// each event is produced.
pub async fn sse_upstream() -> (SocketAddr, mpsc::UnboundedReceiver<mpsc::Sender<Bytes>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (streams, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let streams = streams.clone();
            let svc = service_fn(move |_req: Request<Incoming>| {
                let (tx, events) = mpsc::channel::<Bytes>(1);
                let _ = streams.send(tx);
                let frames = futures_util::stream::unfold(events, |mut events| async move {
                    let e = events.recv().await?;
                    Some((Ok::<_, Infallible>(hyper::body::Frame::data(e)), events))
                });
                let resp = Response::builder()
                    .header("content-type", "text/event-stream")
                    .header("cache-control", "no-cache")
                    .body(http_body_util::StreamBody::new(frames))
                    .expect("response");
                async move { Ok::<_, Infallible>(resp) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, rx)
}
