//! A multiplexed endpoint's answer to one message relayed as the remote gives it
//! (`mux.rs`): a stream of Server-Sent Events passed on event by event as each is
//! whole (a tool's progress and log notifications reach the client before its
//! result), by a task that reads the remote and hands the events over through a small
//! channel, which the gateway's answer body polls (`turnpike_policy::StreamedAnswer`).
//! The task ends after the event answering the request, when the remote ends the
//! stream, or when the client goes away (the channel closes). Bounds: an event at most
//! `turnpike_policy::sse::MAX_EVENT` bytes, [`MAX_EVENTS`] events and
//! [`MAX_ANSWER_BYTES`] in all, and `idle` between two chunks; past one the stream is
//! cut (the client sees it end early).
//!
//! A legacy remote's request that asked for progress is answered the same way: its
//! progress notifications (taken off the session's stream by `legacy.rs`) as events as
//! they arrive, then its answer, each within `idle`.
//!
//! A `GET` (the server stream) merges every remote's server stream of the session into
//! one ([`merged`]).
//!
//! An audited call's answer, streamed or whole, carries its outcome to the audit record
//! when it went out ([`Relayed::settle`]).

use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use tokio::sync::mpsc;
use turnpike_policy::mcp::ToolOutcome;
use turnpike_policy::sse::{Event, Events};
use turnpike_policy::{AnswerBody, ErrorKind, GatewayError, StreamedAnswer};

use super::legacy::Sent;
use super::remote::{Opened, MAX_ANSWER_BYTES};
use crate::audit;

/// Most events relayed for one message.
pub(crate) const MAX_EVENTS: usize = 10_000;
/// Chunks read ahead of a slow client.
const AHEAD: usize = 8;

/// What the reading task hands over.
enum Piece {
    Chunk(Bytes),
    /// The answer's outcome, for an audited call.
    Outcome(ToolOutcome),
    /// The stream is cut here.
    Cut(ErrorKind, String),
}

/// An answer's body on its way to the client (see the module doc).
struct Relayed {
    rx: Option<mpsc::Receiver<Piece>>,
    whole: Option<Bytes>,
    outcome: Option<ToolOutcome>,
}

/// The answer relaying `opened`'s events as they arrive (`audited`: its outcome is
/// settled in the call's audit record).
pub(crate) fn stream(opened: Opened, idle: Duration, audited: bool) -> Response<Bytes> {
    let (tx, rx) = mpsc::channel(AHEAD);
    let how = Pumping {
        idle: Some(idle),
        answer: true,
        audited,
    };
    tokio::spawn(pump(opened.resp, tx, how));
    streaming(opened.status, rx)
}

/// The answer to a `GET`: the server streams of `opened` merged into one, each event
/// relayed as it arrives without its `id:` (a server's own, which no `Last-Event-ID`
/// could name the server of), open until every remote ended its stream (or, with
/// `idle`, went silent that long) or the client went away.
pub(crate) fn merged(opened: Vec<Opened>, idle: Option<Duration>) -> Response<Bytes> {
    let (tx, rx) = mpsc::channel(AHEAD);
    for o in opened {
        let how = Pumping {
            idle,
            answer: false,
            audited: false,
        };
        tokio::spawn(pump(o.resp, tx.clone(), how));
    }
    streaming(StatusCode::OK, rx)
}

/// How a remote's events are relayed.
struct Pumping {
    /// The longest silence between two chunks (`None`: as long as the remote likes).
    idle: Option<Duration>,
    /// An answer to one request: bounded ([`MAX_EVENTS`], [`MAX_ANSWER_BYTES`]), ended
    /// after the event answering it, ids kept; else a server stream, ids dropped.
    answer: bool,
    /// The answer's outcome settles the call's audit record.
    audited: bool,
}

/// The answer relaying a legacy request's progress, then its answer, as events.
pub(crate) fn legacy(sent: Sent, idle: Duration, audited: bool) -> Response<Bytes> {
    let (tx, rx) = mpsc::channel(AHEAD);
    tokio::spawn(pump_legacy(sent, tx, idle, audited));
    streaming(StatusCode::OK, rx)
}

/// An event stream answered with what `rx` hands over.
fn streaming(status: StatusCode, rx: mpsc::Receiver<Piece>) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = status;
    let event_stream = HeaderValue::from_static("text/event-stream");
    resp.headers_mut().insert(CONTENT_TYPE, event_stream);
    let body = Relayed {
        rx: Some(rx),
        whole: None,
        outcome: None,
    };
    StreamedAnswer::attach(&mut resp, Box::new(body));
    resp
}

/// A whole answer; with an audited call's `outcome`, settled when it went out (else
/// the answer as it is).
pub(crate) fn settled(mut resp: Response<Bytes>, outcome: Option<ToolOutcome>) -> Response<Bytes> {
    if outcome.is_none() {
        return resp;
    }
    let body = Relayed {
        rx: None,
        whole: Some(std::mem::take(resp.body_mut())).filter(|b| !b.is_empty()),
        outcome,
    };
    StreamedAnswer::attach(&mut resp, Box::new(body));
    resp
}

/// Reads the remote's events and hands each on as soon as it is whole.
async fn pump(mut resp: reqwest::Response, tx: mpsc::Sender<Piece>, how: Pumping) {
    let mut events = Events::default();
    let (mut count, mut bytes) = (0usize, 0usize);
    loop {
        let next = resp.chunk();
        let chunk = match how.idle {
            Some(idle) => tokio::time::timeout(idle, next).await,
            None => Ok(next.await),
        };
        let chunk = match chunk {
            Err(_) => {
                let kind = ErrorKind::UpstreamResponseTimeout;
                return cut(&tx, kind, "the remote went silent").await;
            }
            Ok(Err(e)) => return cut(&tx, ErrorKind::UpstreamReset, &e.to_string()).await,
            Ok(Ok(None)) => return,
            Ok(Ok(Some(c))) => c,
        };
        bytes += chunk.len();
        if how.answer && bytes > MAX_ANSWER_BYTES {
            let why = format!("the remote's answer is over {MAX_ANSWER_BYTES} bytes");
            return cut(&tx, ErrorKind::UpstreamProtocol, &why).await;
        }
        if let Err(why) = events.push(&chunk) {
            return cut(&tx, ErrorKind::UpstreamProtocol, &why).await;
        }
        let mut out = Vec::new();
        let mut answer = None;
        while let Some(mut e) = events.next_event() {
            count += 1;
            if how.answer && count > MAX_EVENTS {
                let why = format!("the remote sent more than {MAX_EVENTS} events");
                return cut(&tx, ErrorKind::UpstreamProtocol, &why).await;
            }
            if !how.answer {
                e.id = None;
            }
            e.write(&mut out);
            answer = audit::answer_outcome(e.data.as_bytes()).filter(|_| how.answer);
            if answer.is_some() {
                break;
            }
        }
        if !out.is_empty() && tx.send(Piece::Chunk(out.into())).await.is_err() {
            return; // the client went away
        }
        if let Some(outcome) = answer {
            if how.audited {
                let _ = tx.send(Piece::Outcome(outcome)).await;
            }
            // The request is answered: the stream ends here.
            return;
        }
    }
}

/// Hands a legacy request's progress notifications on as events, then its answer.
async fn pump_legacy(mut sent: Sent, tx: mpsc::Sender<Piece>, idle: Duration, audited: bool) {
    let mut progress = sent.progress.take();
    for _ in 0..MAX_EVENTS {
        let next = async {
            match progress.as_mut() {
                Some(p) => tokio::select! {
                    Some(m) = p.recv() => Ok((m, false)),
                    a = &mut sent.answer => a.map(|m| (m, true)),
                },
                None => (&mut sent.answer).await.map(|m| (m, true)),
            }
        };
        let (message, answered) = match tokio::time::timeout(idle, next).await {
            Err(_) => {
                return cut(&tx, ErrorKind::UpstreamResponseTimeout, "no answer in time").await
            }
            Ok(Err(_)) => return cut(&tx, ErrorKind::UpstreamReset, "its stream ended").await,
            Ok(Ok(m)) => m,
        };
        let data = serde_json::to_string(&message).unwrap_or_default();
        let event = Event {
            name: Some("message".into()),
            id: None,
            data,
        };
        let mut out = Vec::new();
        event.write(&mut out);
        if tx.send(Piece::Chunk(out.into())).await.is_err() {
            return; // the client went away
        }
        if answered {
            if let Some(o) = audit::answer_outcome(event.data.as_bytes()).filter(|_| audited) {
                let _ = tx.send(Piece::Outcome(o)).await;
            }
            return;
        }
    }
    let why = format!("the remote sent more than {MAX_EVENTS} events");
    cut(&tx, ErrorKind::UpstreamProtocol, &why).await;
}

async fn cut(tx: &mpsc::Sender<Piece>, kind: ErrorKind, why: &str) {
    tracing::warn!(error = %why, "mcp remote server's answer cut");
    let _ = tx.send(Piece::Cut(kind, why.to_owned())).await;
}

impl AnswerBody for Relayed {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, GatewayError>>> {
        if let Some(b) = self.whole.take() {
            return Poll::Ready(Some(Ok(b)));
        }
        let Some(rx) = self.rx.as_mut() else {
            return Poll::Ready(None);
        };
        loop {
            let piece = match rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(p) => p,
            };
            match piece {
                Some(Piece::Chunk(b)) => return Poll::Ready(Some(Ok(b))),
                Some(Piece::Outcome(o)) => self.outcome = Some(o),
                Some(Piece::Cut(kind, why)) => {
                    self.rx = None;
                    let e = GatewayError::with_source(kind, std::io::Error::other(why));
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    self.rx = None;
                    return Poll::Ready(None);
                }
            }
        }
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        if let Some(o) = self.outcome.take() {
            audit::settle_ext(ext, o);
        }
    }
}
