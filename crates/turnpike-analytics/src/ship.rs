//! Shipping to the control plane: each batch is POSTed as JSON to
//! `{control plane}/api/am/gateway/v1/analytics` with the gateway token, where it is
//! rolled up into the store. A failed POST is retried twice; then the batch counts as
//! failed (the gateway keeps serving; the ring keeps the newest events meanwhile).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::sink::{Sink, SinkError};

/// The ingest endpoint's path on the control plane.
pub const INGEST_PATH: &str = "/api/am/gateway/v1/analytics";

/// The body of one POST.
#[derive(Debug, Serialize, Deserialize)]
pub struct Batch {
    pub events: Vec<Event>,
}

/// POSTs batches to a control plane.
pub struct ShipSink {
    url: String,
    token: String,
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl ShipSink {
    /// `control_plane` is the base URL the gateway follows (`http://host:9400`).
    pub fn new(control_plane: &str, token: &str) -> ShipSink {
        ShipSink {
            url: format!("{}{INGEST_PATH}", control_plane.trim_end_matches('/')),
            token: token.to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            timeout: Duration::from_secs(10),
        }
    }

    async fn post(&self, body: Bytes) -> Result<(), SinkError> {
        let req = http::Request::post(&self.url)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .body(Full::new(body))
            .map_err(|e| SinkError::Other(e.to_string()))?;
        let resp = tokio::time::timeout(self.timeout, self.client.request(req))
            .await
            .map_err(|_| SinkError::Other("control plane: timed out".into()))?
            .map_err(|e| SinkError::Other(format!("control plane: {e}")))?;
        let status = resp.status();
        // Read the (small) answer so the connection is reused.
        let _ = tokio::time::timeout(self.timeout, resp.into_body().collect()).await;
        if status.is_success() {
            Ok(())
        } else {
            Err(SinkError::Other(format!("control plane answered {status}")))
        }
    }
}

#[async_trait::async_trait]
impl Sink for ShipSink {
    async fn write(&mut self, batch: &[Event]) -> Result<(), SinkError> {
        // `{"events":[...]}`, what serde_json writes for a `Batch`, each event by
        // `json_line`.
        let mut body = Vec::with_capacity(16 + batch.len() * 640);
        body.extend_from_slice(b"{\"events\":[");
        for (i, e) in batch.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            crate::json_line::write(e, &mut body);
        }
        body.extend_from_slice(b"]}");
        let body = Bytes::from(body);
        let mut last = None;
        for attempt in 0..3u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
            }
            match self.post(body.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| SinkError::Other("not sent".into())))
    }
}
