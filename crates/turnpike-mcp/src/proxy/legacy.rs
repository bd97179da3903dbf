//! A remote MCP server over the legacy HTTP+SSE transport (protocol 2024-11-05,
//! `upstream: sse`): the gateway opens the remote's event stream (`GET` its URL), reads
//! the `endpoint` event naming where messages go, POSTs each message there (the remote
//! answers `202`) and takes the answer to a request off the stream by its id. One
//! stream per gateway session, read by a task that ends with the session (`DELETE`), when
//! the remote closes it, or once the session has been idle longer than its limit.
//!
//! A request that asked for progress (`params._meta.progressToken`) also gets the
//! remote's `notifications/progress` carrying its token as they arrive (the caller
//! relays them before the answer, `relay.rs`). The remote's other notifications and
//! requests on the stream are not relayed: the stream is the session's, not a call's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use turnpike_model::clock::Clock;
use turnpike_policy::sse::Events;

use super::remote::{Answer, RemoteClient};

/// Most requests of one session waiting for their answers at once.
const MAX_PENDING: usize = 64;
/// Progress notifications held for one request whose client reads them slower than
/// the remote sends them (more are dropped: the stream's reader never waits).
const PROGRESS_AHEAD: usize = 16;
/// How often a stream's task checks whether its session is still used.
const IDLE_CHECK: Duration = Duration::from_secs(30);

/// Every open legacy stream of a gateway (in the runtime), by the key the gateway's
/// session keeps as its remote session id.
#[derive(Default)]
pub(crate) struct Streams {
    open: papaya::HashMap<Box<str>, Arc<Stream>>,
}

/// One open stream (see the module doc).
pub(crate) struct Stream {
    /// Where messages are POSTed (the `endpoint` event, resolved against the stream's URL).
    post: reqwest::Url,
    pending: Mutex<HashMap<String, Waiting>>,
    /// When the session last sent a message (the runtime clock's seconds).
    last_used: AtomicU64,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A request waiting for its answer (and its progress, when it asked for it).
struct Waiting {
    answer: oneshot::Sender<Value>,
    /// Its progress token (as JSON text) and where its progress notifications go.
    progress: Option<(String, mpsc::Sender<Value>)>,
}

/// A request sent: its answer, and its progress notifications when it asked for them
/// (each channel ends with the stream).
pub(crate) struct Sent {
    pub answer: oneshot::Receiver<Value>,
    pub progress: Option<mpsc::Receiver<Value>>,
}

/// How a stream is opened and kept.
pub(crate) struct Opening<'a> {
    pub client: &'a RemoteClient,
    pub url: &'a reqwest::Url,
    pub timeout: Duration,
    pub idle_secs: u64,
    pub clock: Arc<dyn Clock>,
}

impl Streams {
    /// Opens a stream: its key once the remote named its message endpoint.
    pub(crate) async fn open(self: &Arc<Self>, how: Opening<'_>) -> Result<Box<str>, String> {
        let client = how.client.client()?;
        let get = client
            .get(how.url.clone())
            .header(ACCEPT, "text/event-stream")
            .send();
        let resp = tokio::time::timeout(how.timeout, get)
            .await
            .map_err(|_| "no answer in time".to_owned())?
            .map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!("its stream answered {}", resp.status()));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let key: Box<str> = format!("{:032x}", rand::random::<u128>()).into();
        let reader = Reader {
            streams: self.clone(),
            key: key.clone(),
            base: how.url.clone(),
            idle_secs: how.idle_secs,
            clock: how.clock.clone(),
        };
        let task = tokio::spawn(reader.run(resp, endpoint_tx));
        let post = match tokio::time::timeout(how.timeout, endpoint_rx).await {
            Ok(Ok(url)) => url,
            _ => {
                task.abort();
                return Err("its stream named no message endpoint".into());
            }
        };
        let stream = Arc::new(Stream {
            post,
            pending: Mutex::new(HashMap::new()),
            last_used: AtomicU64::new(how.clock.now_secs()),
            task: Mutex::new(Some(task)),
        });
        self.open.pin().insert(key.clone(), stream);
        Ok(key)
    }

    /// Sends one message in stream `key` and, for a request (`id`), waits for its
    /// answer: a JSON answer as a Streamable HTTP remote's would be.
    pub(crate) async fn send(
        &self,
        client: &RemoteClient,
        key: &str,
        id: Option<&Value>,
        body: Bytes,
        timeout: Duration,
        now: u64,
    ) -> Result<Answer, String> {
        let asked = id.map(|id| (id, None));
        let Some(sent) = self.post(client, key, asked, body, timeout, now).await? else {
            return Ok(answer(StatusCode::ACCEPTED, Bytes::new()));
        };
        let message = tokio::time::timeout(timeout, sent.answer)
            .await
            .map_err(|_| "no answer in time".to_owned())?
            .map_err(|_| "its stream ended".to_owned())?;
        let body = serde_json::to_vec(&message).unwrap_or_default();
        Ok(answer(StatusCode::OK, body.into()))
    }

    /// POSTs one message in stream `key`; for a request (`asked`: its id and progress
    /// token), what will answer it (`None`: a notification or a response, sent).
    pub(crate) async fn post(
        &self,
        client: &RemoteClient,
        key: &str,
        asked: Option<(&Value, Option<String>)>,
        body: Bytes,
        timeout: Duration,
        now: u64,
    ) -> Result<Option<Sent>, String> {
        let stream = self
            .open
            .pin()
            .get(key)
            .cloned()
            .ok_or("its stream ended")?;
        stream.last_used.store(now, Ordering::Relaxed);
        let waiting = match asked {
            Some((id, token)) => Some(stream.expect(id, token)?),
            None => None,
        };
        let posted = client
            .client()?
            .post(stream.post.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !posted.status().is_success() {
            return Err(format!("it answered {}", posted.status()));
        }
        Ok(waiting)
    }

    /// Ends stream `key` (its task, and with it the remote's session).
    pub(crate) fn close(&self, key: &str) {
        if let Some(s) = self.open.pin().remove(key) {
            let task = s.task.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(t) = task {
                t.abort();
            }
            s.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }
}

impl Stream {
    /// Registers a request waiting for its answer (`token`: its progress token, as
    /// JSON text).
    fn expect(&self, id: &Value, token: Option<String>) -> Result<Sent, String> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.len() >= MAX_PENDING {
            return Err(format!("{MAX_PENDING} requests already wait for it"));
        }
        let (tx, answer) = oneshot::channel();
        let (progress, rx) = match token {
            Some(t) => {
                let (ptx, prx) = mpsc::channel(PROGRESS_AHEAD);
                (Some((t, ptx)), Some(prx))
            }
            None => (None, None),
        };
        let waiting = Waiting {
            answer: tx,
            progress,
        };
        pending.insert(id.to_string(), waiting);
        Ok(Sent {
            answer,
            progress: rx,
        })
    }

    /// Hands an answer on the stream to the request waiting for it.
    fn answered(&self, message: Value) {
        let Some(id) = message.get("id").map(Value::to_string) else {
            return;
        };
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        if let Some(w) = waiting {
            let _ = w.answer.send(message);
        }
    }

    /// Hands a progress notification to the request that asked with its token (never
    /// waiting: one held past [`PROGRESS_AHEAD`] is dropped).
    fn progressed(&self, message: Value) {
        let Some(token) = message
            .pointer("/params/progressToken")
            .map(Value::to_string)
        else {
            return;
        };
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let to = pending
            .values()
            .filter_map(|w| w.progress.as_ref())
            .find(|(t, _)| *t == token);
        if let Some((_, tx)) = to {
            let _ = tx.try_send(message);
        }
    }
}

/// A request's progress token (`params._meta.progressToken`), as JSON text: what its
/// progress notifications carry.
pub(crate) fn progress_token(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer("/params/_meta/progressToken")
        .map(Value::to_string)
}

/// A JSON answer as a Streamable HTTP remote gives it.
fn answer(status: StatusCode, body: Bytes) -> Answer {
    Answer {
        status,
        session: None,
        content_type: Some(HeaderValue::from_static("application/json")),
        body,
    }
}

/// The task reading one stream.
struct Reader {
    streams: Arc<Streams>,
    key: Box<str>,
    base: reqwest::Url,
    idle_secs: u64,
    clock: Arc<dyn Clock>,
}

impl Reader {
    async fn run(self, mut resp: reqwest::Response, endpoint: oneshot::Sender<reqwest::Url>) {
        let mut endpoint = Some(endpoint);
        let mut events = Events::default();
        let mut tick = tokio::time::interval(IDLE_CHECK);
        loop {
            let chunk = tokio::select! {
                c = resp.chunk() => c,
                _ = tick.tick() => {
                    if self.idle() { break; }
                    continue;
                }
            };
            let Ok(Some(chunk)) = chunk else { break };
            if events.push(&chunk).is_err() {
                break;
            }
            while let Some(e) = events.next_event() {
                self.event(e, &mut endpoint);
            }
        }
        // The remote closed it or the session is gone: waiting requests fail now.
        if let Some(s) = self.streams.open.pin().remove(&self.key) {
            s.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }

    fn event(
        &self,
        e: turnpike_policy::sse::Event,
        endpoint: &mut Option<oneshot::Sender<reqwest::Url>>,
    ) {
        match e.name.as_deref() {
            Some("endpoint") => {
                // Only where the stream came from: a remote cannot send the gateway
                // elsewhere.
                let url = (self.base.join(e.data.trim()).ok())
                    .filter(|u| u.origin() == self.base.origin());
                if let (Some(url), Some(tx)) = (url, endpoint.take()) {
                    let _ = tx.send(url);
                }
            }
            None | Some("message") => {
                let stream = self.streams.open.pin().get(&self.key).cloned();
                if let (Some(s), Ok(v)) = (stream, serde_json::from_str::<Value>(&e.data)) {
                    if v.get("result").is_some() || v.get("error").is_some() {
                        s.answered(v);
                    } else if v.get("method").and_then(Value::as_str)
                        == Some("notifications/progress")
                    {
                        s.progressed(v);
                    }
                }
            }
            Some(_) => {}
        }
    }

    /// Whether the session has not used the stream for longer than its idle limit.
    fn idle(&self) -> bool {
        let Some(s) = self.streams.open.pin().get(&self.key).cloned() else {
            // Not registered yet (still opening) or already closed.
            return false;
        };
        let last = s.last_used.load(Ordering::Relaxed);
        self.clock.now_secs().saturating_sub(last) > self.idle_secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::clock::SystemClock;
    use turnpike_policy::sse::Event;

    fn reader() -> Reader {
        Reader {
            streams: Arc::new(Streams::default()),
            key: "k".into(),
            base: reqwest::Url::parse("http://127.0.0.1:9/sse").expect("url"),
            idle_secs: 60,
            clock: Arc::new(SystemClock),
        }
    }

    fn endpoint(data: &str) -> Event {
        Event {
            name: Some("endpoint".into()),
            id: None,
            data: data.into(),
        }
    }

    #[test]
    fn the_endpoint_event_is_resolved_on_the_streams_own_origin_only() {
        let r = reader();
        let (tx, mut rx) = oneshot::channel();
        let mut slot = Some(tx);
        r.event(endpoint("/messages/?session_id=ab"), &mut slot);
        let url = rx.try_recv().expect("named");
        assert_eq!(url.as_str(), "http://127.0.0.1:9/messages/?session_id=ab");

        for elsewhere in [
            "http://10.0.0.1:9/messages/",
            "http://127.0.0.1:10/m",
            "//evil/x",
        ] {
            let (tx, mut rx) = oneshot::channel();
            let mut slot = Some(tx);
            r.event(endpoint(elsewhere), &mut slot);
            assert!(rx.try_recv().is_err(), "{elsewhere} ignored");
        }
    }

    #[test]
    fn an_answer_on_the_stream_goes_to_the_request_waiting_for_it() {
        let s = Stream {
            post: reqwest::Url::parse("http://127.0.0.1:9/m").expect("url"),
            pending: Mutex::new(HashMap::new()),
            last_used: AtomicU64::new(0),
            task: Mutex::new(None),
        };
        let mut sent = s
            .expect(&serde_json::json!(7), Some("\"p7\"".into()))
            .expect("registered");
        let rx = &mut sent.answer;
        s.answered(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/x"}));
        s.answered(serde_json::json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
        assert!(rx.try_recv().is_err(), "not its answer");
        let progress = |token: &str| {
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1}})
        };
        s.progressed(progress("p8"));
        s.progressed(progress("p7"));
        let mut p = sent.progress.take().expect("asked for progress");
        let got = p.try_recv().expect("its progress");
        assert_eq!(got["params"]["progressToken"], "p7");
        assert!(p.try_recv().is_err(), "not another's");
        s.answered(serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}));
        assert_eq!(sent.answer.try_recv().expect("answered")["result"]["a"], 1);
        for i in 0..MAX_PENDING {
            let _ = s.expect(&serde_json::json!(i), None);
        }
        assert!(
            s.expect(&serde_json::json!("one more"), None).is_err(),
            "capped"
        );
    }
}
