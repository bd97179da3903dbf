//! The observer and its background exporter: a drop-oldest ring of [`SpanRecord`]s
//! filled by `on_complete`, drained every flush interval into OTLP/HTTP protobuf POSTs.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use crossbeam_queue::ArrayQueue;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use prost::Message;
use tokio::sync::Notify;
use turnpike_policy::{Completion, Observer, RequestCtx};

use crate::encode::{export_request, SpanRecord};

/// Where and how spans are exported.
#[derive(Debug, Clone)]
pub struct TracerSettings {
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`, e.g.
    /// `http://127.0.0.1:4318`); spans go to `{endpoint}/v1/traces`.
    pub endpoint: String,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// `service.instance.id`: the gateway's id.
    pub gateway_id: String,
    /// Requests the ring holds; when full the oldest are dropped.
    pub capacity: usize,
    /// Most requests in one export.
    pub batch: usize,
    /// How often the ring is drained.
    pub flush: Duration,
    /// Longest wait for the collector's answer.
    pub timeout: Duration,
}

impl TracerSettings {
    /// Defaults for `endpoint`.
    pub fn new(endpoint: &str) -> TracerSettings {
        TracerSettings {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            service_name: "turnpike-gateway".into(),
            gateway_id: "gateway".into(),
            capacity: 8_192,
            batch: 512,
            flush: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        }
    }
}

struct Shared {
    ring: ArrayQueue<SpanRecord>,
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    stop: Notify,
}

/// The trace exporter of one gateway.
pub struct Tracer {
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Tracer {
    /// Starts the exporting task (inside a tokio runtime). The endpoint must be an
    /// `http://` URL.
    pub fn start(settings: TracerSettings) -> Result<Arc<Tracer>, String> {
        let url = format!("{}/v1/traces", settings.endpoint);
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("OTLP endpoint `{}`: {e}", settings.endpoint))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(format!(
                "OTLP endpoint `{}`: an http://host:port URL is expected (OTLP/HTTP)",
                settings.endpoint
            ));
        }
        let shared = Arc::new(Shared {
            ring: ArrayQueue::new(settings.capacity.max(1)),
            exported: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            stop: Notify::new(),
        });
        let task = tokio::spawn(drain(shared.clone(), settings, uri));
        Ok(Arc::new(Tracer {
            shared,
            task: Mutex::new(Some(task)),
        }))
    }

    /// Requests whose spans were exported, dropped from the full ring, or refused.
    pub fn counts(&self) -> (u64, u64, u64) {
        let s = &self.shared;
        (
            s.exported.load(Ordering::Relaxed),
            s.dropped.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
        )
    }

    /// Exports what is queued, then stops (waiting at most `within`).
    pub async fn close(&self, within: Duration) {
        self.shared.stop.notify_one();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(mut task) = task {
            if tokio::time::timeout(within, &mut task).await.is_err() {
                task.abort();
            }
        }
    }

    /// The exporter's counters in Prometheus text format (the gateway's `/metrics`).
    pub fn render_metrics(&self, out: &mut String) {
        let (exported, dropped, failed) = self.counts();
        let _ = writeln!(
            out,
            "# HELP turnpike_trace_requests_total Traced requests by what became of their spans (dropped: pushed out of the full queue, oldest first)\n# TYPE turnpike_trace_requests_total counter"
        );
        for (result, n) in [
            ("exported", exported),
            ("dropped", dropped),
            ("failed", failed),
        ] {
            let _ = writeln!(
                out,
                "turnpike_trace_requests_total{{result=\"{result}\"}} {n}"
            );
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.shared.stop.notify_one();
    }
}

impl Observer for Tracer {
    fn name(&self) -> &'static str {
        "opentelemetry"
    }

    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        if let Some(r) = SpanRecord::new(ctx, done) {
            if self.shared.ring.force_push(r).is_some() {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

async fn drain(shared: Arc<Shared>, settings: TracerSettings, uri: http::Uri) {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let max = settings.batch.max(1);
    let mut batch = Vec::with_capacity(max);
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(settings.flush) => false,
            _ = shared.stop.notified() => true,
        };
        loop {
            batch.clear();
            while batch.len() < max {
                let Some(r) = shared.ring.pop() else { break };
                batch.push(r);
            }
            if batch.is_empty() {
                break;
            }
            let n = batch.len() as u64;
            let body = export_request(&batch, &settings.service_name, &settings.gateway_id)
                .encode_to_vec();
            match post(&client, &uri, body, settings.timeout).await {
                Ok(()) => shared.exported.fetch_add(n, Ordering::Relaxed),
                Err(e) => {
                    tracing::warn!(error = %e, requests = n, "OTLP export failed");
                    shared.failed.fetch_add(n, Ordering::Relaxed)
                }
            };
            if batch.len() < max {
                break;
            }
        }
        if stopping {
            return;
        }
    }
}

async fn post(
    client: &Client<HttpConnector, Full<Bytes>>,
    uri: &http::Uri,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<(), String> {
    let req = http::Request::post(uri.clone())
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = tokio::time::timeout(timeout, client.request(req))
        .await
        .map_err(|_| "the collector did not answer in time".to_owned())?
        .map_err(|e| format!("the collector: {e}"))?;
    let status = resp.status();
    // Read the (small) answer so the connection is reused.
    let _ = tokio::time::timeout(timeout, resp.into_body().collect()).await;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the collector answered {status}"))
    }
}
