//! The end of every request: [`Finisher`] rides with the response body (or, until the
//! response head exists, with the request) and, exactly once, when the last byte went
//! out or the client went away, computes the latency split and bytes in/out and tells
//! the API's `on_complete` policies, the metrics and the access log. It exists only when
//! one of those listens; otherwise a request reads no clock for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{request, Method, StatusCode, Uri};
use turnpike_config::CompiledApi;
use turnpike_policy::{Completion, ErrorKind, RequestCtx, Timings};

use crate::access_log::PendingRecord;
use crate::conn::ConnCtx;
use crate::response_body::{BodyEnd, Ending};

/// "Client closed request" (nginx's 499): the client left before the response ended.
fn client_gone() -> StatusCode {
    StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST)
}

/// Where the request body's size comes from.
#[derive(Default)]
pub(crate) enum BytesIn {
    #[default]
    None,
    Declared(u64),
    Buffered(u64),
    Streaming(Arc<AtomicU64>),
}

impl BytesIn {
    pub(crate) fn buffered(&mut self, n: u64) {
        *self = BytesIn::Buffered(n);
    }

    pub(crate) fn streaming(&mut self, c: Arc<AtomicU64>) {
        *self = BytesIn::Streaming(c);
    }

    fn get(&self) -> u64 {
        match self {
            BytesIn::None => 0,
            BytesIn::Declared(n) | BytesIn::Buffered(n) => *n,
            BytesIn::Streaming(c) => c.load(Ordering::Relaxed),
        }
    }
}

/// The instants of a request's phases.
pub(crate) struct Marks {
    pub(crate) start: Instant,
    /// The upstream request was about to be sent.
    pub(crate) sent: Option<Instant>,
    /// The upstream's response head arrived.
    pub(crate) head: Option<Instant>,
    /// The status of that head.
    pub(crate) upstream_status: Option<StatusCode>,
    pub(crate) bytes_in: BytesIn,
}

/// Reports one request once.
pub(crate) struct Finisher {
    conn: Arc<ConnCtx>,
    api: Option<Arc<CompiledApi>>,
    ctx: RequestCtx,
    marks: Marks,
    /// Method and URI for the access log (kept only when it is on).
    line: Option<(Method, Uri)>,
    status: StatusCode,
    error: Option<ErrorKind>,
    done: bool,
    /// A HEAD request: hyper sends no body, so an unpolled body is no sign of a client gone.
    head_request: bool,
    method: Method,
}

impl Finisher {
    /// `declared`: the request body's length when known before reading it (hyper's
    /// exact size hint: `Content-Length`, or 0 without a body).
    pub(crate) fn new(
        conn: &Arc<ConnCtx>,
        api: Option<Arc<CompiledApi>>,
        ctx: RequestCtx,
        parts: &request::Parts,
        declared: Option<u64>,
    ) -> Box<Finisher> {
        let line = conn
            .shared
            .access_log
            .as_ref()
            .map(|_| (parts.method.clone(), parts.uri.clone()));
        Box::new(Finisher {
            conn: conn.clone(),
            api,
            ctx,
            marks: Marks {
                start: Instant::now(),
                sent: None,
                head: None,
                upstream_status: None,
                bytes_in: declared.map_or(BytesIn::None, BytesIn::Declared),
            },
            line,
            status: client_gone(),
            error: None,
            done: false,
            head_request: parts.method == Method::HEAD,
            method: parts.method.clone(),
        })
    }

    /// The context and marks the request side fills in.
    pub(crate) fn parts(&mut self) -> (&mut RequestCtx, &mut Marks) {
        (&mut self.ctx, &mut self.marks)
    }

    /// The response head was decided.
    pub(crate) fn responded(&mut self, status: StatusCode, error: Option<ErrorKind>) {
        self.status = status;
        self.error = error;
    }

    fn timings(&self, now: Instant) -> Timings {
        let m = &self.marks;
        match (m.sent, m.head) {
            (Some(sent), Some(head)) => Timings {
                gateway_before: sent.saturating_duration_since(m.start),
                upstream: Some(head.saturating_duration_since(sent)),
                gateway_after: now.saturating_duration_since(head),
            },
            _ => Timings {
                gateway_before: now.saturating_duration_since(m.start),
                upstream: None,
                gateway_after: Duration::ZERO,
            },
        }
    }

    fn report(&mut self, bytes_out: u64, aborted: bool) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let now = Instant::now();
        // A client that went away before the response ended did not get it, whatever the
        // upstream or a policy answered: 499, as nginx logs it (error row kept).
        if aborted {
            self.status = client_gone();
        }
        let done = Completion {
            status: self.status,
            error: self.error,
            aborted,
            timings: self.timings(now),
            bytes_in: self.marks.bytes_in.get(),
            bytes_out,
            method: self.method.clone(),
            upstream_status: self.marks.upstream_status,
            api: self.api.as_ref().map(|a| &a.label),
            started: self.marks.start,
        };
        if let Some(api) = &self.api {
            api.chain.complete(&self.ctx, &done);
        }
        let shared = &self.conn.shared;
        // Last registered first, the order the observers ran in as a policy chain.
        for o in shared.observers.iter().rev() {
            o.on_complete(&self.ctx, &done);
        }
        // To the response head (the histogram's meaning), or the whole request when
        // no head was sent.
        let t = &done.timings;
        let to_head = match t.upstream {
            Some(upstream) => t.gateway_before + upstream,
            None => t.gateway_before,
        };
        if let Some(m) = shared.metrics.as_deref() {
            m.observe(self.api.as_ref(), self.status, to_head, self.error);
            if m.per_resource() {
                if let (Some(api), Some(template)) = (&self.api, &self.ctx.resource) {
                    m.observe_resource(api, template, self.status);
                }
            }
        }
        if let (Some(log), Some((method, uri))) = (shared.access_log.as_ref(), self.line.take()) {
            PendingRecord {
                start: self.marks.start,
                request_id: self.ctx.request_id.clone(),
                client: self.conn.client,
                method,
                uri,
                status: self.status.as_u16(),
                bytes: bytes_out,
                upstream: self
                    .marks
                    .head
                    .map(|h| h.saturating_duration_since(self.marks.start)),
                sink: log.clone(),
            }
            .finish();
        }
    }
}

impl BodyEnd for Finisher {
    fn end(&mut self, bytes_out: u64, how: Ending) {
        if how == Ending::UpstreamBroke {
            // The head went out; the body broke: an upstream failure, not the client's.
            self.error.get_or_insert(ErrorKind::UpstreamReset);
        }
        // hyper drops, unpolled, the body of a response that has none on the wire.
        let bodiless = self.head_request || matches!(self.status.as_u16(), 100..=199 | 204 | 304);
        self.report(bytes_out, how == Ending::ClientGone && !bodiless);
    }

    fn ext(&mut self) -> Option<&mut http::Extensions> {
        Some(&mut self.ctx.ext)
    }
}

impl Drop for Finisher {
    /// The request future was dropped before a response existed: the client went away.
    fn drop(&mut self) {
        if !self.done {
            self.report(0, true);
        }
    }
}
