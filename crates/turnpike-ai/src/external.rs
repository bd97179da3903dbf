//! The external guard service (`ai.guards.external`): the gateway POSTs a prompt's texts
//! (PII already masked) as `{"phase": "request", "api", "model", "texts": [...]}` and
//! reads `{"allow": bool, "reason"?: string}`. A guard that cannot answer in time (down,
//! slow, a non-2xx status, a body that is not that JSON or over [`MAX_VERDICT_BYTES`])
//! lets the call through when `fail_open`, else refuses it 503 (`guard_unavailable`); a
//! guard that says no refuses it 400 (`guard_refused`) with its reason.

use std::time::Duration;

use serde_json::{json, Value};
use turnpike_model::ai_guard::ExternalGuardSpec;
use turnpike_policy::{BuildCx, ErrorKind, GatewayError};

/// Largest verdict read.
const MAX_VERDICT_BYTES: usize = 16 * 1024;
/// Longest reason passed on to the client.
const MAX_REASON_CHARS: usize = 200;
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
const MAX_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct External {
    url: String,
    client: reqwest::Client,
    timeout: Duration,
    fail_open: bool,
}

/// Why the guard gave no verdict (logged, never shown to clients).
#[derive(Debug, thiserror::Error)]
enum NoVerdict {
    #[error("the guard service timed out")]
    Timeout,
    #[error("the guard service failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the guard service answered {0}")]
    Status(u16),
    #[error("the guard service's answer is not a verdict")]
    Garbled,
}

impl External {
    pub(crate) fn build(spec: &ExternalGuardSpec, cx: &mut BuildCx<'_>) -> Option<External> {
        if !(spec.url.starts_with("http://") || spec.url.starts_with("https://")) {
            cx.problem(".guards.external.url", "must be an http:// or https:// URL");
            return None;
        }
        let timeout = crate::settings::duration(
            cx,
            ".guards.external.timeout",
            spec.timeout.as_ref(),
            DEFAULT_TIMEOUT,
            MAX_TIMEOUT,
        );
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .ok()?;
        Some(External {
            url: spec.url.clone(),
            client,
            timeout,
            fail_open: spec.fail_open,
        })
    }

    /// Asks about a prompt: `Ok` to go on.
    pub(crate) async fn check(
        &self,
        api: &str,
        model: Option<&str>,
        texts: &[String],
    ) -> Result<(), GatewayError> {
        let payload = json!({"phase": "request", "api": api, "model": model, "texts": texts});
        let verdict = tokio::time::timeout(self.timeout, self.ask(&payload))
            .await
            .unwrap_or(Err(NoVerdict::Timeout));
        match verdict {
            Ok(None) => Ok(()),
            Ok(Some(reason)) => {
                let mut e = GatewayError::new(ErrorKind::AiGuardRefused);
                e.detail = Some(format!("the guard service refused the prompt: {reason}").into());
                Err(e)
            }
            Err(why) if self.fail_open => {
                tracing::warn!(error = %why, "ai guard unavailable, failing open");
                Ok(())
            }
            Err(why) => Err(GatewayError::with_source(
                ErrorKind::AiGuardUnavailable,
                why,
            )),
        }
    }

    /// The verdict: `None` allowed, `Some(reason)` refused.
    async fn ask(&self, payload: &Value) -> Result<Option<String>, NoVerdict> {
        let body = serde_json::to_vec(payload).map_err(|_| NoVerdict::Garbled)?;
        let mut resp = self
            .client
            .post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await?;
        if !resp.status().is_success() {
            return Err(NoVerdict::Status(resp.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await? {
            if body.len() + chunk.len() > MAX_VERDICT_BYTES {
                return Err(NoVerdict::Garbled);
            }
            body.extend_from_slice(&chunk);
        }
        let v: Value = serde_json::from_slice(&body).map_err(|_| NoVerdict::Garbled)?;
        match v.get("allow").and_then(Value::as_bool) {
            Some(true) => Ok(None),
            Some(false) => {
                let reason = v
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                Ok(Some(reason.chars().take(MAX_REASON_CHARS).collect()))
            }
            None => Err(NoVerdict::Garbled),
        }
    }
}
