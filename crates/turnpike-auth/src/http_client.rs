//! The one outbound HTTP client of this crate (hyper, HTTP/1.1, plain or rustls with the
//! webpki roots): introspection calls and background JWKS fetches. Never on the hot path
//! of a cached credential.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Why an outbound call failed (logged, never shown to clients).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("request: {0}")]
    Request(String),
    #[error("timed out")]
    Timeout,
    #[error("status {0}")]
    Status(StatusCode),
    #[error("body: {0}")]
    Body(String),
}

/// A shared client; clone freely.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

/// Responses larger than this are refused (JWKS and introspection answers are small).
const MAX_BODY: usize = 256 * 1024;

impl HttpClient {
    pub fn new(timeout: Duration) -> Result<Self, FetchError> {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| FetchError::Tls(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            timeout,
        })
    }

    /// Sends a request and returns the body of a 200 answer.
    pub async fn send(&self, req: Request<Full<Bytes>>) -> Result<Bytes, FetchError> {
        let call = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| FetchError::Request(e.to_string()))?;
            if resp.status() != StatusCode::OK {
                return Err(FetchError::Status(resp.status()));
            }
            let body = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| FetchError::Body(e.to_string()))?;
            Ok(body.to_bytes())
        };
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| FetchError::Timeout)?
    }
}
