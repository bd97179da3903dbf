//! Shipping to the control plane: the gateway's per-minute rollup rows are POSTed as
//! JSON (`{"rollups":[...]}`) to `{control plane}/api/am/gateway/v1/analytics` with the
//! gateway token every shipping interval, and added to the store's rows. The endpoint
//! also takes raw events (`{"events":[...]}`), which it rolls up itself. A shipment whose
//! POST fails waits in the [`Spool`] (bounded in age and bytes, on disk under the data
//! dir when one is given) and is sent, oldest first, when the control plane answers
//! again: at the next shipping interval, before anything newer, so the order holds.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::audit::AuditRecord;
use crate::event::Event;
use crate::rollup::Row;
use crate::sink::{Sink, SinkError, Takes};
use crate::spool::{Spool, SpoolSettings, SpoolStats};

/// The ingest endpoint's path on the control plane.
pub const INGEST_PATH: &str = "/api/am/gateway/v1/analytics";

/// The size past which a POST of audit records is sent and another begun.
const AUDIT_POST_BYTES: usize = 1 << 20;

/// The body of one POST: events, rollup rows, MCP audit records, or several.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Batch {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollups: Vec<Row>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audits: Vec<AuditRecord>,
}

/// POSTs batches to a control plane.
pub struct ShipSink {
    url: String,
    token: String,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    spool: Spool,
}

impl ShipSink {
    /// `control_plane` is the base URL the gateway follows (`http://host:9400`, or
    /// `https://` verified against the web PKI roots: see [`ShipSink::with_tls`]).
    pub fn new(control_plane: &str, token: &str) -> ShipSink {
        ShipSink::with_tls(control_plane, token, None)
            .expect("the web PKI roots always make a client config")
    }

    /// As [`ShipSink::new`], with the TLS the snapshot follower uses
    /// (`--control-plane-ca`, and the client certificate for mTLS); `None`: the web PKI
    /// roots. The control plane's certificate is always verified.
    pub fn with_tls(
        control_plane: &str,
        token: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<ShipSink, turnpike_tls::TlsError> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(turnpike_tls::for_hyper(tls)?)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(ShipSink {
            url: format!("{}{INGEST_PATH}", control_plane.trim_end_matches('/')),
            token: token.to_string(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout: Duration::from_secs(10),
            spool: Spool::open(SpoolSettings::default()),
        })
    }

    /// Where and how long shipments wait while the control plane is unreachable
    /// (default: in memory, 10 minutes, 64 MiB). A directory's leftovers from a previous
    /// run are sent first.
    pub fn with_spool(mut self, settings: SpoolSettings) -> ShipSink {
        self.spool = Spool::open(settings);
        self
    }

    /// What the spool holds and dropped.
    pub fn spool_stats(&self) -> Arc<SpoolStats> {
        self.spool.stats()
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

    /// Ships `body` (summing `requests`): straight away when nothing waits, else behind
    /// what waits. Not delivered now, it waits in the spool: only the spool's bounds
    /// drop analytics, so this never fails.
    async fn send(&mut self, body: Bytes, requests: u64) -> Result<(), SinkError> {
        if self.spool.is_empty() {
            match self.post(body.clone()).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::warn!(error = %e, requests, "analytics: control plane unreachable; shipments wait in the spool");
                }
            }
            self.spool.push(body, requests).await;
            return Ok(());
        }
        self.spool.push(body, requests).await;
        let _ = self.flush_spool().await;
        Ok(())
    }

    /// Sends what waits, oldest first, until the control plane fails again.
    async fn flush_spool(&mut self) -> Result<(), SinkError> {
        self.spool.expire().await;
        while let Some(body) = self.spool.front().await {
            self.post(body).await?;
            self.spool.delivered().await;
            if self.spool.is_empty() {
                tracing::info!("analytics: the spooled shipments reached the control plane");
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Sink for ShipSink {
    /// The store keeps rollups only: the gateway makes them.
    fn takes(&self) -> Takes {
        Takes::Rollups
    }

    fn spool_stats(&self) -> Option<Arc<SpoolStats>> {
        Some(self.spool.stats())
    }

    async fn flush(&mut self) -> Result<(), SinkError> {
        if self.spool.is_empty() {
            return Ok(());
        }
        self.flush_spool().await
    }

    async fn write_rollups(&mut self, rows: &[Row]) -> Result<(), SinkError> {
        #[derive(Serialize)]
        struct Rows<'a> {
            rollups: &'a [Row],
        }
        // A few hundred bytes a row: 1,000 rows stay far below the endpoint's body limit.
        for chunk in rows.chunks(1_000) {
            let body = serde_json::to_vec(&Rows { rollups: chunk })
                .map_err(|e| SinkError::Other(format!("rollups: {e}")))?;
            let requests = chunk.iter().map(|r| r.sums.requests).sum();
            self.send(Bytes::from(body), requests).await?;
        }
        Ok(())
    }

    /// `{"audits":[...]}`, spooled as rollups are (a record counts as one request): at
    /// most 1,000 records and about [`AUDIT_POST_BYTES`] a POST (a record's arguments
    /// may be 64 KiB; the control plane's body limit is 2 MiB).
    async fn write_audits(&mut self, records: &[AuditRecord]) -> Result<(), SinkError> {
        let mut body = Vec::new();
        let mut n = 0u64;
        for r in records {
            body.extend_from_slice(if n == 0 { b"{\"audits\":[" } else { b"," });
            serde_json::to_writer(&mut body, r)
                .map_err(|e| SinkError::Other(format!("audit records: {e}")))?;
            n += 1;
            if n == 1_000 || body.len() >= AUDIT_POST_BYTES {
                body.extend_from_slice(b"]}");
                self.send(Bytes::from(std::mem::take(&mut body)), n).await?;
                n = 0;
            }
        }
        if n > 0 {
            body.extend_from_slice(b"]}");
            self.send(Bytes::from(body), n).await?;
        }
        Ok(())
    }

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
        self.send(Bytes::from(body), batch.len() as u64).await
    }
}
