//! A multiplexed endpoint's own calls to its remote servers (Streamable HTTP, as a
//! client): one JSON-RPC message POSTed (or a session ended by `DELETE`), the answer
//! read whole under a cap, as JSON or as Server-Sent Events, and the message answering
//! a request picked out of it. One HTTP client per gateway runtime (its connection
//! pools outlive reloads), built on first use, so a control plane that only validates
//! an API builds none.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use serde_json::Value;

use crate::session::MCP_SESSION_ID;

/// Largest answer read from a remote (a result relayed whole, or all the events of one
/// relayed as they arrive).
pub(crate) const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The header naming the protocol version a client agreed (sent on as the client sent it).
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// The runtime's client (see the module doc).
#[derive(Default)]
pub(crate) struct RemoteClient {
    client: OnceLock<Option<reqwest::Client>>,
}

/// A remote's answer, read whole.
pub(crate) struct Answer {
    pub status: StatusCode,
    /// Its `Mcp-Session-Id`, when it gave one.
    pub session: Option<HeaderValue>,
    pub content_type: Option<HeaderValue>,
    pub body: Bytes,
}

/// One message to a remote: where, in which of its sessions, how long to wait.
pub(crate) struct Target<'a> {
    pub url: &'a reqwest::Url,
    pub session: Option<&'a str>,
    pub version: Option<&'a HeaderValue>,
    pub timeout: Duration,
}

impl RemoteClient {
    pub(crate) fn client(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| reqwest::Client::builder().build().ok())
            .as_ref()
            .ok_or_else(|| "no HTTP client could be built".to_owned())
    }

    /// POSTs `body` (`None`: a `DELETE` ending the session) and reads the answer
    /// whole, all within the target's timeout.
    pub(crate) async fn send(
        &self,
        to: &Target<'_>,
        body: Option<Bytes>,
    ) -> Result<Answer, String> {
        let whole = async { self.open(to, body).await?.whole().await };
        tokio::time::timeout(to.timeout, whole)
            .await
            .map_err(|_| "no answer in time".to_owned())?
    }

    /// POSTs `body` (`None`: a `DELETE`) and waits for the answer's head (within the
    /// target's timeout); its body is the caller's to read.
    pub(crate) async fn open(
        &self,
        to: &Target<'_>,
        body: Option<Bytes>,
    ) -> Result<Opened, String> {
        let client = self.client()?;
        let req = match body {
            Some(b) => client
                .post(to.url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json, text/event-stream")
                .body(b),
            None => client.delete(to.url.clone()),
        };
        Self::opened(to, req).await
    }

    /// Opens the server stream (`GET`) of the remote's session `to` names and waits
    /// for its head (within the target's timeout).
    pub(crate) async fn listen(&self, to: &Target<'_>) -> Result<Opened, String> {
        let req = (self.client()?.get(to.url.clone())).header(ACCEPT, "text/event-stream");
        Self::opened(to, req).await
    }

    /// Sends `req` in `to`'s session and protocol version; the answer's head.
    async fn opened(to: &Target<'_>, mut req: reqwest::RequestBuilder) -> Result<Opened, String> {
        if let Some(s) = to.session.filter(|s| !s.is_empty()) {
            req = req.header(MCP_SESSION_ID, s);
        }
        if let Some(v) = to.version {
            req = req.header(PROTOCOL_VERSION, v.clone());
        }
        let resp = tokio::time::timeout(to.timeout, req.send())
            .await
            .map_err(|_| "no answer in time".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(Opened {
            status: resp.status(),
            session: resp.headers().get(MCP_SESSION_ID).cloned(),
            content_type: resp.headers().get(CONTENT_TYPE).cloned(),
            resp,
        })
    }
}

/// A remote's answer whose head arrived, its body still to read.
pub(crate) struct Opened {
    pub status: StatusCode,
    pub session: Option<HeaderValue>,
    pub content_type: Option<HeaderValue>,
    pub resp: reqwest::Response,
}

impl Opened {
    /// A stream of events (relayed as it arrives), not a whole answer.
    pub(crate) fn is_stream(&self) -> bool {
        self.content_type
            .as_ref()
            .and_then(|t| t.as_bytes().get(..17))
            .is_some_and(|m| m.eq_ignore_ascii_case(b"text/event-stream"))
    }

    /// The body read whole, at most [`MAX_ANSWER_BYTES`].
    pub(crate) async fn whole(mut self) -> Result<Answer, String> {
        let mut body = Vec::new();
        while let Some(chunk) = self.resp.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("its answer is over {MAX_ANSWER_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status: self.status,
            session: self.session,
            content_type: self.content_type,
            body: body.into(),
        })
    }
}

impl Answer {
    /// An answer without a body.
    pub(crate) fn empty(status: StatusCode) -> Answer {
        Answer {
            status,
            session: None,
            content_type: None,
            body: Bytes::new(),
        }
    }

    /// The result of this answer to request `id`; its error or status otherwise.
    pub(crate) fn result(&self, id: &Value) -> Result<Value, String> {
        if !self.status.is_success() {
            return Err(format!("it answered {}", self.status));
        }
        let mut m = self.message(id).ok_or("its answer holds no result")?;
        match m.get_mut("result") {
            Some(r) => Ok(r.take()),
            None => Err(format!("it answered an error: {}", m["error"])),
        }
    }

    /// The message answering request `id` (`{"result": ...}` or `{"error": ...}`), from
    /// a JSON body or from the events of a stream.
    pub(crate) fn message(&self, id: &Value) -> Option<Value> {
        let answers = |v: &Value| {
            v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some())
        };
        if !turnpike_policy::http::is_stream(&self.headers_for_type()) {
            let v: Value = serde_json::from_slice(&self.body).ok()?;
            return answers(&v).then_some(v);
        }
        // The whole stream is here: its events read in one linear pass.
        let text = String::from_utf8_lossy(&self.body).replace('\r', "");
        text.split("\n\n")
            .map(event_data)
            .filter_map(|data| serde_json::from_str::<Value>(&data).ok())
            .find(answers)
    }

    fn headers_for_type(&self) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(t) = &self.content_type {
            h.insert(CONTENT_TYPE, t.clone());
        }
        h
    }
}

/// The `data:` lines of one event, joined as the SSE specification joins them.
fn event_data(event: &str) -> String {
    let mut data = String::new();
    for line in event.lines() {
        if let Some(v) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(content_type: &'static str, body: &'static str) -> Answer {
        Answer {
            status: StatusCode::OK,
            session: None,
            content_type: Some(HeaderValue::from_static(content_type)),
            body: Bytes::from_static(body.as_bytes()),
        }
    }

    #[test]
    fn the_answer_to_a_request_is_found_in_json_or_among_events() {
        let j = answer(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#,
        );
        assert_eq!(j.message(&json!(3)).expect("found")["result"]["a"], 1);
        assert!(j.message(&json!(4)).is_none(), "another request's");
        let s = answer(
            "text/event-stream",
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":1,\"message\":\"m\"}}",
        );
        assert_eq!(s.message(&json!("x")).expect("found")["error"]["code"], 1);
        assert!(answer("application/json", "nope")
            .message(&json!(1))
            .is_none());
    }
}
