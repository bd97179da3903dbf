//! Body types of the proxy path. Bodies stream frame by frame in both directions and are
//! never collected: [`RequestBody`] counts bytes against the API's limit while it streams
//! to the upstream; [`GatewayBody`] is what the client receives, either a small generated
//! body (errors) or the upstream's body, which hands its HTTP/1.1 connection back to the
//! pool at end of stream and finishes the access-log record when dropped. A policy that
//! needs the size of a response sent without `Content-Length` (bandwidth quotas) puts an
//! [`OnBodyEnd`] in the response's extensions and is told the bytes sent, once.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;

use crate::access_log::PendingRecord;
use crate::h1::DirectBody;
use crate::upstream::EndpointPool;

/// Why a body stopped.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("request body exceeds the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
}

/// The client's request body on its way upstream, with the API's size limit enforced
/// while streaming (a Content-Length above the limit is refused before this exists).
pub struct RequestBody {
    inner: Option<Incoming>,
    limit: u64,
    seen: u64,
}

impl RequestBody {
    pub fn new(inner: Incoming, limit: Option<u64>) -> Self {
        RequestBody {
            inner: Some(inner),
            limit: limit.unwrap_or(u64::MAX),
            seen: 0,
        }
    }

    pub fn empty() -> Self {
        RequestBody {
            inner: None,
            limit: u64::MAX,
            seen: 0,
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.seen += data.len() as u64;
                    if this.seen > this.limit {
                        this.inner = None;
                        return Poll::Ready(Some(Err(BodyError::TooLarge { limit: this.limit })));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(BodyError::Hyper(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

/// Told once how many body bytes went to the client, when the body ends or is dropped.
#[derive(Clone)]
pub struct OnBodyEnd(pub Arc<dyn Fn(u64) + Send + Sync>);

/// Counts a body's bytes for an [`OnBodyEnd`].
struct BodyMeter {
    bytes: u64,
    done: Option<OnBodyEnd>,
}

impl BodyMeter {
    fn see<E>(
        meter: &mut Option<Box<BodyMeter>>,
        r: &Poll<Option<Result<Frame<Bytes>, E>>>,
        ended: bool,
    ) {
        let Some(m) = meter.as_mut() else { return };
        if let Poll::Ready(Some(Ok(frame))) = r {
            if let Some(d) = frame.data_ref() {
                m.bytes += d.len() as u64;
            }
        }
        if ended || matches!(r, Poll::Ready(None)) {
            m.finish();
        }
    }

    fn finish(&mut self) {
        if let Some(OnBodyEnd(f)) = self.done.take() {
            f(self.bytes);
        }
    }
}

impl Drop for BodyMeter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// An HTTP/1.1 upstream connection to return to its pool once the response ends.
pub struct Pooled {
    pub sender: http1::SendRequest<RequestBody>,
    pub pool: Arc<EndpointPool>,
}

/// The upstream's response body on its way to the client.
pub struct UpstreamBody {
    inner: Incoming,
    pooled: Option<Pooled>,
    log: Option<Box<PendingRecord>>,
    meter: Option<Box<BodyMeter>>,
}

impl UpstreamBody {
    fn release(&mut self) {
        if let Some(p) = self.pooled.take() {
            p.pool.put_back(p.sender);
        }
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // Dropped before the end (client went away): the connection is in an unknown
        // state and is not pooled; hyper closes it when `pooled` drops.
        if let Some(log) = self.log.take() {
            log.finish();
        }
    }
}

/// A plain-HTTP upstream's body read in the client's task (see `h1.rs`).
pub struct DirectUpstream {
    inner: DirectBody,
    log: Option<Box<PendingRecord>>,
    meter: Option<Box<BodyMeter>>,
}

impl Drop for DirectUpstream {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            log.finish();
        }
    }
}

/// The error a client-bound body can end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the client receives.
pub enum GatewayBody {
    Full(Option<Bytes>),
    Upstream(UpstreamBody),
    Direct(DirectUpstream),
}

impl GatewayBody {
    pub fn full(b: Bytes) -> Self {
        GatewayBody::Full(Some(b))
    }

    pub fn empty() -> Self {
        GatewayBody::Full(None)
    }

    pub fn upstream(
        inner: Incoming,
        pooled: Option<Pooled>,
        log: Option<Box<PendingRecord>>,
    ) -> Self {
        let mut b = UpstreamBody {
            inner,
            pooled,
            log,
            meter: None,
        };
        if b.inner.is_end_stream() {
            b.release();
        }
        GatewayBody::Upstream(b)
    }

    pub fn direct(inner: DirectBody) -> Self {
        GatewayBody::Direct(DirectUpstream {
            inner,
            log: None,
            meter: None,
        })
    }

    /// Calls `end` once with the bytes sent to the client, when the body ends (or is
    /// dropped early, with what was sent).
    pub fn on_end(&mut self, end: OnBodyEnd) {
        let meter = Some(Box::new(BodyMeter {
            bytes: 0,
            done: Some(end),
        }));
        match self {
            GatewayBody::Full(b) => {
                if let Some(mut m) = meter {
                    m.bytes = b.as_ref().map_or(0, |b| b.len() as u64);
                    m.finish();
                }
            }
            GatewayBody::Upstream(u) => u.meter = meter,
            GatewayBody::Direct(d) => d.meter = meter,
        }
    }

    /// Hands the access-log record to the body: written now for a generated body, or
    /// when the upstream body is done (or dropped) with the bytes actually sent.
    pub fn attach_log(&mut self, mut rec: Box<PendingRecord>) {
        match self {
            GatewayBody::Full(b) => {
                rec.bytes = b.as_ref().map_or(0, |b| b.len() as u64);
                rec.finish();
            }
            GatewayBody::Upstream(u) => u.log = Some(rec),
            GatewayBody::Direct(d) => d.log = Some(rec),
        }
    }
}

impl Body for GatewayBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            GatewayBody::Full(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            GatewayBody::Direct(d) => {
                let r = Pin::new(&mut d.inner).poll_frame(cx);
                if let (Poll::Ready(Some(Ok(frame))), Some(log)) = (&r, d.log.as_mut()) {
                    if let Some(data) = frame.data_ref() {
                        log.bytes += data.len() as u64;
                    }
                }
                if d.meter.is_some() {
                    let ended = d.inner.is_end_stream();
                    BodyMeter::see(&mut d.meter, &r, ended);
                }
                r.map(|o| o.map(|r| r.map_err(BoxError::from)))
            }
            GatewayBody::Upstream(u) => {
                let r = Pin::new(&mut u.inner).poll_frame(cx);
                match &r {
                    Poll::Ready(Some(Ok(frame))) => {
                        if let (Some(log), Some(d)) = (u.log.as_mut(), frame.data_ref()) {
                            log.bytes += d.len() as u64;
                        }
                        if u.inner.is_end_stream() {
                            u.release();
                        }
                    }
                    Poll::Ready(None) => u.release(),
                    Poll::Ready(Some(Err(_))) => u.pooled = None,
                    Poll::Pending => {}
                }
                if u.meter.is_some() {
                    let ended = u.inner.is_end_stream();
                    BodyMeter::see(&mut u.meter, &r, ended);
                }
                r.map(|o| o.map(|r| r.map_err(BoxError::from)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            GatewayBody::Full(b) => b.is_none(),
            GatewayBody::Upstream(u) => u.inner.is_end_stream(),
            GatewayBody::Direct(d) => d.inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            GatewayBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            GatewayBody::Full(None) => SizeHint::with_exact(0),
            GatewayBody::Upstream(u) => u.inner.size_hint(),
            GatewayBody::Direct(d) => d.inner.size_hint(),
        }
    }
}
