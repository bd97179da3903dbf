//! Background JWKS refresh for third-party issuers (Keycloak, Auth0, ...): fetched at
//! start, then every `interval`, and early when a token names an unknown `kid` (at most
//! once per `min_interval`). Never on the request path: a request with an unknown key
//! fails at once and a later one succeeds. A failed fetch keeps the previous keys.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, Uri};
use http_body_util::Full;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::http_client::{FetchError, HttpClient};
use crate::jwt::{KeySet, TrustedIssuer};

/// How a third-party issuer's keys are kept fresh.
#[derive(Debug, Clone)]
pub struct JwksSource {
    pub url: Uri,
    pub interval: Duration,
    pub min_interval: Duration,
}

impl JwksSource {
    pub fn new(url: Uri) -> Self {
        Self {
            url,
            interval: Duration::from_secs(300),
            min_interval: Duration::from_secs(30),
        }
    }
}

async fn fetch(client: &HttpClient, url: &Uri) -> Result<KeySet, FetchError> {
    let req = Request::builder()
        .method(Method::GET)
        .uri(url.clone())
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|e| FetchError::Request(e.to_string()))?;
    let body = client.send(req).await?;
    KeySet::from_jwks_json(&body).map_err(|e| FetchError::Body(e.to_string()))
}

/// Spawns the refresh loop; abort the handle to stop it (e.g. when the issuer leaves
/// the snapshot).
pub fn spawn_jwks_refresh(
    issuer: Arc<TrustedIssuer>,
    source: JwksSource,
    client: HttpClient,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let started = Instant::now();
            let wait = match fetch(&client, &source.url).await {
                Ok(keys) => {
                    tracing::debug!(issuer = %issuer.issuer, keys = keys.len(), "JWKS refreshed");
                    issuer.set_keys(keys);
                    source.interval
                }
                Err(e) => {
                    tracing::warn!(issuer = %issuer.issuer, url = %source.url, error = %e, "JWKS fetch failed");
                    source.interval.min(Duration::from_secs(10))
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = issuer.unknown_kid.notified() => {
                    tokio::time::sleep_until(started + source.min_interval).await;
                }
            }
        }
    })
}
