//! The response cache tests' rig (cache.rs, cache_shared.rs): a back end that counts
//! its calls and answers each path its own way (see `Backend::answer`), and a gateway
//! on 127.0.0.1:0 serving examples/cache.yaml in front of it.
#![allow(dead_code)]
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use turnpike_config::{PolicyRuntime, Snapshot};

/// A back end that counts calls per path and answers by path (see `answer`).
#[derive(Clone, Default)]
pub struct Backend {
    calls: Arc<Mutex<HashMap<String, usize>>>,
    pub failing: Arc<AtomicBool>,
}

impl Backend {
    pub fn calls(&self, path: &str) -> usize {
        self.calls
            .lock()
            .expect("lock")
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    pub async fn start(&self) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let me = self.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                let me = me.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let me = me.clone();
                        async move { Ok::<_, Infallible>(me.answer(req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
        addr
    }

    pub async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_owned();
        let n = {
            let mut calls = self.calls.lock().expect("lock");
            let c = calls.entry(path.clone()).or_default();
            *c += 1;
            *c
        };
        if self.failing.load(Ordering::SeqCst) {
            return Response::builder()
                .status(503)
                .body(Full::new(Bytes::from("down")))
                .expect("resp");
        }
        if let Some(resp) = self.not_modified(&req, &path, n) {
            return resp;
        }
        if path == "/slow" || (path == "/shortslow" && n > 1) {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let lang = header(&req, "accept-language");
        let caller = header(&req, "x-caller");
        let body = format!("{path} call {n} lang {lang} caller {caller}");
        let mut b = Response::builder().header("content-type", "text/plain");
        b = match path.as_str() {
            "/private" => b.header("cache-control", "private, max-age=60"),
            "/nostore" => b.header("cache-control", "no-store"),
            "/cookie" => b.header("set-cookie", "session=abc"),
            "/vary" => b.header("vary", "Accept-Language"),
            "/public" => b.header("cache-control", "public, max-age=60"),
            "/short" | "/shortslow" => b.header("cache-control", "max-age=1"),
            "/tagged" => b.header("cache-tag", "t1, t2"),
            "/aged" => b.header("age", "59"),
            "/etag" => b
                .header("cache-control", "no-cache")
                .header("etag", "\"v1\""),
            "/lastmod" => b
                .header("cache-control", "max-age=0")
                .header("last-modified", LAST_MODIFIED),
            _ => b,
        };
        b.body(Full::new(Bytes::from(body))).expect("resp")
    }
}

pub const LAST_MODIFIED: &str = "Wed, 21 Oct 2015 07:28:00 GMT";

impl Backend {
    /// A 304 to a conditional GET of `/etag` (`If-None-Match: "v1"`) or `/lastmod`
    /// (`If-Modified-Since`), counted as `PATH?conditional`, with a header the stored
    /// head should take over.
    pub fn not_modified(
        &self,
        req: &Request<Incoming>,
        path: &str,
        n: usize,
    ) -> Option<Response<Full<Bytes>>> {
        let matches = (path == "/etag" && header(req, "if-none-match") == "\"v1\"")
            || (path == "/lastmod" && header(req, "if-modified-since") == LAST_MODIFIED);
        if !matches {
            return None;
        }
        *self
            .calls
            .lock()
            .expect("lock")
            .entry(format!("{path}?conditional"))
            .or_default() += 1;
        let resp = Response::builder()
            .status(304)
            .header("etag", "\"v1\"")
            .header("x-refreshed", format!("call {n}"))
            .body(Full::new(Bytes::new()))
            .expect("resp");
        Some(resp)
    }
}

pub fn header(req: &Request<Incoming>, name: &str) -> String {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned()
}

pub const KEY_A: &str = "app-a-key-123";
pub const KEY_B: &str = "app-b-key-456";

/// examples/cache.yaml with its endpoint on `addr`, and `extra` settings in the cache.
pub fn yaml(addr: SocketAddr, extra: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/cache.yaml");
    let text = std::fs::read_to_string(path).expect("examples/cache.yaml");
    let text = text.replace("http://127.0.0.1:9000", &http(addr));
    text.replace("      - cache:\n", &format!("      - cache:\n{extra}"))
}

pub struct Rig {
    pub gw: TestGateway,
    pub backend: Backend,
    pub runtime: PolicyRuntime,
    pub client: reqwest::Client,
}

pub async fn rig(extra: &str) -> Rig {
    let backend = Backend::default();
    let addr = backend.start().await;
    rig_on(backend, addr, extra).await
}

/// A gateway of its own (its own runtime and store) in front of `backend`.
pub async fn rig_on(backend: Backend, addr: SocketAddr, extra: &str) -> Rig {
    rig_of(backend, &yaml(addr, extra)).await
}

/// A gateway of its own serving `text`.
pub async fn rig_of(backend: Backend, text: &str) -> Rig {
    rig_with(backend, text, PolicyRuntime::new()).await
}

/// A gateway of its own in front of `backend` whose runtime has the shared level
/// `level` (each gateway its own, as each process has).
pub async fn rig_sharing(
    backend: Backend,
    addr: SocketAddr,
    extra: &str,
    level: Arc<turnpike_cache::SharedLevel>,
) -> Rig {
    let runtime = PolicyRuntime::new();
    assert!(turnpike_cache::attach_shared(runtime.kernel(), level));
    rig_with(backend, &yaml(addr, extra), runtime).await
}

/// A gateway serving `text` compiled on `runtime`.
pub async fn rig_with(backend: Backend, text: &str, runtime: PolicyRuntime) -> Rig {
    let snap = Snapshot::from_yaml_with(text, "test", &runtime).expect("valid");
    let gw = gateway_serving(snap, |_| {}).await;
    Rig {
        gw,
        backend,
        runtime,
        client: client(),
    }
}

impl Rig {
    /// Swaps in the example file with `extra` cache settings, on this gateway's runtime.
    pub fn swap(&self, addr: SocketAddr, extra: &str) {
        let snap =
            Snapshot::from_yaml_with(&yaml(addr, extra), "test", &self.runtime).expect("valid");
        self.gw.snapshots().store(Arc::new(snap));
    }
}

pub struct Got {
    pub status: u16,
    pub x_cache: String,
    pub age: Option<u64>,
    pub body: String,
    pub headers: reqwest::header::HeaderMap,
}

impl Rig {
    /// A GET with `key` in the `apikey` header (none when empty) and `headers`.
    pub async fn get(&self, path: &str, key: &str, headers: &[(&str, &str)]) -> Got {
        let mut req = self.client.get(self.gw.url(&format!("/cached/v1{path}")));
        if !key.is_empty() {
            req = req.header("apikey", key);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("response");
        let h = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (x_cache, age) = (
            h("x-cache").unwrap_or_default(),
            h("age").and_then(|a| a.parse().ok()),
        );
        let status = resp.status().as_u16();
        Got {
            status,
            x_cache,
            age,
            headers: resp.headers().clone(),
            body: resp.text().await.expect("body"),
        }
    }
}
