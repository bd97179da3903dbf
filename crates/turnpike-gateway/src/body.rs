//! Body types of the proxy path. Bodies stream frame by frame in both directions unless
//! a policy of the API asked for the whole body ([`collect`]): [`RequestBody`] counts
//! bytes against the API's limit while it streams to the upstream (or carries a
//! buffered, possibly rewritten, body); [`GatewayBody`] is what the client receives,
//! either a generated or buffered body or the upstream's body, which hands its HTTP/1.1
//! connection back to the pool at end of stream. When someone must know how the body
//! ended (bytes sent, client gone: `on_complete`, the access log, metrics, bandwidth
//! quotas), a [`BodyEnd`] rides along and is told once.
//! [`set_length`] is the one place that fixes `Content-Length`/`Transfer-Encoding` after
//! a body was replaced, for both upstream clients and the client side. A streamed
//! request body that stalls longer than the body-read timeout fails with
//! [`BodyError::ReadTimeout`] (408); [`BodyWatch`] tells the forwarder how the body
//! ended (a response timeout while the client is still sending is the client's 408, and
//! an over-limit body the upstream answered early is still a 413).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;

use crate::error::{ErrorKind, GatewayError};
use crate::h1::DirectBody;
use crate::upstream::EndpointPool;

/// Why a body stopped.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("request body exceeds the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("no request body bytes received for {after:?}")]
    ReadTimeout { after: Duration },
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
}

/// The client's request body on its way upstream: streamed with the API's size limit
/// enforced (a Content-Length above the limit is refused before this exists), or
/// buffered (a body policy ran).
pub struct RequestBody {
    inner: ReqInner,
    /// Bytes already read from `inner` (request buffering), sent before the rest.
    head: Option<Bytes>,
    /// The share of the request-buffering budget the buffered bytes hold.
    reserved: Option<Reserved>,
    limit: u64,
    seen: u64,
    /// Shared with `on_complete` when the body streams without a Content-Length.
    counter: Option<Arc<AtomicU64>>,
    /// Longest wait for the next bytes of a streamed body (zero: no limit).
    read_timeout: Duration,
    /// Armed the first time the body waits for the client, reset at each frame.
    clock: Option<Pin<Box<tokio::time::Sleep>>>,
    watch: Option<BodyWatch>,
}

/// How a streamed request body ended, shared between the body (wherever hyper polls
/// it) and the forwarder.
#[derive(Clone, Default)]
pub struct BodyWatch(Arc<WatchInner>);

#[derive(Default)]
struct WatchInner {
    state: AtomicU8,
    /// The body's last poll waited for the client (rather than its last frame waiting
    /// for the upstream to take it).
    awaiting_client: std::sync::atomic::AtomicBool,
    changed: tokio::sync::Notify,
}

/// A state of a [`BodyWatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEndState {
    Streaming,
    Done,
    TooLarge,
    TimedOut,
    Broken,
}

impl BodyWatch {
    /// The body had not ended, and was waiting for the client's next bytes: a timeout
    /// now is the client's, not the upstream's (which may just not be reading).
    pub fn waiting_for_client(&self) -> bool {
        !matches!(self.state(), BodyEndState::Done | BodyEndState::TooLarge)
            && self.0.awaiting_client.load(Ordering::Acquire)
    }

    fn awaiting_client(&self, yes: bool) {
        self.0.awaiting_client.store(yes, Ordering::Release);
    }

    pub fn state(&self) -> BodyEndState {
        match self.0.state.load(Ordering::Acquire) {
            0 => BodyEndState::Streaming,
            1 => BodyEndState::Done,
            2 => BodyEndState::TooLarge,
            3 => BodyEndState::TimedOut,
            _ => BodyEndState::Broken,
        }
    }

    fn set(&self, s: BodyEndState) {
        let v = match s {
            BodyEndState::Streaming => 0,
            BodyEndState::Done => 1,
            BodyEndState::TooLarge => 2,
            BodyEndState::TimedOut => 3,
            BodyEndState::Broken => 4,
        };
        if self
            .0
            .state
            .compare_exchange(0, v, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.0.changed.notify_one();
        }
    }

    /// Waits until the body ended, however it did.
    pub async fn ended(&self) -> BodyEndState {
        loop {
            let notified = self.0.changed.notified();
            let s = self.state();
            if s != BodyEndState::Streaming {
                return s;
            }
            notified.await;
        }
    }
}

enum ReqInner {
    Stream(Incoming),
    Full(Option<Bytes>),
}

impl RequestBody {
    /// A streamed body: at most `limit` bytes, the next bytes within `read_timeout`
    /// (zero: no limit).
    pub fn new(inner: Incoming, limit: Option<u64>, read_timeout: Duration) -> Self {
        RequestBody {
            inner: ReqInner::Stream(inner),
            head: None,
            reserved: None,
            limit: limit.unwrap_or(u64::MAX),
            seen: 0,
            counter: None,
            read_timeout,
            clock: None,
            watch: None,
        }
    }

    /// A handle telling how this body ends (made once, for a body still streaming).
    pub fn watch(&mut self) -> BodyWatch {
        self.watch.get_or_insert_with(BodyWatch::default).clone()
    }

    fn ended(&mut self, how: BodyEndState) {
        if let Some(w) = &self.watch {
            w.set(how);
        }
    }

    pub fn empty() -> Self {
        Self::full(Bytes::new())
    }

    /// A buffered body (its headers fixed with [`set_length`]).
    pub fn full(b: Bytes) -> Self {
        RequestBody {
            inner: ReqInner::Full((!b.is_empty()).then_some(b)),
            head: None,
            reserved: None,
            limit: u64::MAX,
            seen: 0,
            counter: None,
            read_timeout: Duration::ZERO,
            clock: None,
            watch: None,
        }
    }

    /// This body with `head` (bytes already read from it, counted against its limit)
    /// sent first: a buffered start, then the rest as it streams.
    pub fn with_head(mut self, head: Bytes) -> Self {
        self.head = (!head.is_empty()).then_some(head);
        self
    }

    /// Holds `reserved` until this body is dropped (sent, or abandoned).
    pub(crate) fn holding(mut self, reserved: Reserved) -> Self {
        self.reserved = Some(reserved);
        self
    }

    /// Counts the bytes that stream through into `counter`.
    pub fn count_into(&mut self, counter: Arc<AtomicU64>) {
        self.counter = Some(counter);
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
        if let Some(head) = this.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        let inner = match &mut this.inner {
            ReqInner::Full(b) => return Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            ReqInner::Stream(s) => s,
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if let Some(w) = &this.watch {
            w.awaiting_client(polled.is_pending());
        }
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.seen += data.len() as u64;
                    if let Some(c) = &this.counter {
                        c.store(this.seen, Ordering::Relaxed);
                    }
                    if this.seen > this.limit {
                        this.inner = ReqInner::Full(None);
                        this.ended(BodyEndState::TooLarge);
                        return Poll::Ready(Some(Err(BodyError::TooLarge { limit: this.limit })));
                    }
                }
                if let Some(clock) = this.clock.as_mut() {
                    let next = tokio::time::Instant::now() + this.read_timeout;
                    clock.as_mut().reset(next);
                }
                if this.is_end_stream() {
                    this.ended(BodyEndState::Done);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.ended(BodyEndState::Broken);
                Poll::Ready(Some(Err(BodyError::Hyper(e))))
            }
            Poll::Ready(None) => {
                this.ended(BodyEndState::Done);
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.read_timeout.is_zero() {
                    return Poll::Pending;
                }
                let after = this.read_timeout;
                let clock = this
                    .clock
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
                if clock.as_mut().poll(cx).is_ready() {
                    this.inner = ReqInner::Full(None);
                    this.ended(BodyEndState::TimedOut);
                    return Poll::Ready(Some(Err(BodyError::ReadTimeout { after })));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none()
            && match &self.inner {
                ReqInner::Stream(s) => s.is_end_stream(),
                ReqInner::Full(b) => b.is_none(),
            }
    }

    fn size_hint(&self) -> SizeHint {
        let rest = match &self.inner {
            ReqInner::Stream(s) => s.size_hint(),
            ReqInner::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
        };
        let Some(head) = &self.head else {
            return rest;
        };
        // hyper counts a streamed body's remaining length down as it reads: the head
        // plus what is left is the whole.
        let n = head.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower().saturating_add(n));
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(n));
        }
        hint
    }
}

impl Drop for RequestBody {
    /// Dropped before its end (the upstream stopped reading it): whoever waits for the
    /// end learns it will not come.
    fn drop(&mut self) {
        self.ended(BodyEndState::Broken);
    }
}

/// What all buffered request bodies may hold at once (`--request-buffer-mib`); past it,
/// request buffering stops reading and a body streams as it arrives.
#[derive(Debug)]
pub struct BufferBudget {
    used: AtomicU64,
    limit: u64,
}

impl BufferBudget {
    pub fn new(limit: u64) -> Self {
        BufferBudget {
            used: AtomicU64::new(0),
            limit,
        }
    }

    /// Bytes the buffered bodies hold now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether another read may be buffered. The read's bytes are counted after it, so
    /// the budget is exceeded by at most one read per body being buffered.
    pub(crate) fn has_room(&self) -> bool {
        self.used() < self.limit
    }
}

/// Bytes of a [`BufferBudget`] one body holds, given back when it is dropped.
pub(crate) struct Reserved {
    budget: Arc<BufferBudget>,
    n: u64,
}

impl Reserved {
    pub(crate) fn new(budget: Arc<BufferBudget>) -> Self {
        Reserved { budget, n: 0 }
    }

    pub(crate) fn budget(&self) -> &BufferBudget {
        &self.budget
    }

    pub(crate) fn add(&mut self, n: u64) {
        self.budget.used.fetch_add(n, Ordering::Relaxed);
        self.n += n;
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Ordering::Relaxed);
    }
}

/// Reads a whole body of at most `limit` bytes. `too_large` names the error when it is
/// bigger, `broken` when it fails.
pub async fn collect<B>(
    mut body: B,
    limit: u64,
    too_large: ErrorKind,
    broken: ErrorKind,
) -> Result<Bytes, GatewayError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut got = Gathered::default();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| {
            let e: BoxError = e.into();
            let kind = match e.downcast_ref::<BodyError>() {
                Some(BodyError::ReadTimeout { .. }) => ErrorKind::RequestTimeout,
                Some(BodyError::TooLarge { .. }) => too_large,
                _ => broken,
            };
            GatewayError::with_source(kind, e)
        })?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers are not kept
        };
        if (got.len() + data.len()) as u64 > limit {
            return Err(GatewayError::with_source(
                too_large,
                format!("body exceeds the limit of {limit} bytes"),
            ));
        }
        got.push(data);
    }
    Ok(got.finish())
}

/// Frames gathered into one buffer; one frame (the common case) is kept without a copy.
#[derive(Default)]
pub(crate) struct Gathered {
    first: Option<Bytes>,
    buf: BytesMut,
}

impl Gathered {
    pub(crate) fn len(&self) -> usize {
        self.first.as_ref().map_or(0, Bytes::len) + self.buf.len()
    }

    pub(crate) fn push(&mut self, data: Bytes) {
        match self.first.take() {
            None if self.buf.is_empty() => self.first = Some(data),
            Some(f) => {
                self.buf.extend_from_slice(&f);
                self.buf.extend_from_slice(&data);
            }
            None => self.buf.extend_from_slice(&data),
        }
    }

    pub(crate) fn finish(self) -> Bytes {
        self.first.unwrap_or_else(|| self.buf.freeze())
    }
}

/// After a body was replaced by one of `len` bytes: `Content-Length: len`, no
/// `Transfer-Encoding`. The one place framing headers are rewritten.
pub fn set_length(headers: &mut HeaderMap, len: usize) {
    headers.remove(TRANSFER_ENCODING);
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
}

/// How a client-bound body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The last byte went out.
    Complete,
    /// Dropped before its end: the client went away (hyper stops polling a body whose
    /// connection broke).
    ClientGone,
    /// The upstream's body failed mid-way (reset, bad framing).
    UpstreamBroke,
}

/// Told once how a client-bound body ended, with the bytes sent.
pub trait BodyEnd: Send {
    fn end(&mut self, bytes_out: u64, how: Ending);
}

/// What must hear about the end of a body, boxed only when something does.
struct Tail {
    bytes: u64,
    end: Option<Box<dyn BodyEnd>>,
}

impl Tail {
    fn finish(&mut self, how: Ending) {
        if let Some(mut e) = self.end.take() {
            e.end(self.bytes, how);
        }
    }
}

/// An HTTP/1.1 upstream connection to return to its pool once the response ends.
pub struct Pooled {
    pub sender: http1::SendRequest<RequestBody>,
    pub pool: Arc<EndpointPool>,
}

/// The upstream's response body from hyper's client.
struct UpstreamBody {
    inner: Incoming,
    pooled: Option<Pooled>,
}

impl UpstreamBody {
    fn release(&mut self) {
        if let Some(p) = self.pooled.take() {
            p.pool.put_back(p.sender);
        }
    }
}

/// The error a client-bound body can end with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

enum Inner {
    Full(Option<Bytes>),
    /// Dropped before the end (client went away): the connection is in an unknown state
    /// and is not pooled; hyper closes it when `pooled` drops.
    Upstream(UpstreamBody),
    /// A plain-HTTP upstream's body read in the client's task (see `h1`).
    Direct(DirectBody),
}

/// What the client receives.
pub struct GatewayBody {
    inner: Inner,
    tail: Option<Box<Tail>>,
}

impl GatewayBody {
    pub fn full(b: Bytes) -> Self {
        GatewayBody {
            // An empty body is ended from the start (hyper then never polls it).
            inner: Inner::Full((!b.is_empty()).then_some(b)),
            tail: None,
        }
    }

    pub fn empty() -> Self {
        GatewayBody {
            inner: Inner::Full(None),
            tail: None,
        }
    }

    pub fn upstream(inner: Incoming, pooled: Option<Pooled>) -> Self {
        let mut b = UpstreamBody { inner, pooled };
        if b.inner.is_end_stream() {
            b.release();
        }
        GatewayBody {
            inner: Inner::Upstream(b),
            tail: None,
        }
    }

    pub fn direct(inner: DirectBody) -> Self {
        GatewayBody {
            inner: Inner::Direct(inner),
            tail: None,
        }
    }

    fn tail(&mut self) -> &mut Tail {
        self.tail.get_or_insert_with(|| {
            Box::new(Tail {
                bytes: 0,
                end: None,
            })
        })
    }

    /// Hands `end` the body's fate: called once when the last byte went out, or when
    /// the body is dropped before (client gone).
    pub fn finish_with(&mut self, end: Box<dyn BodyEnd>) {
        self.tail().end = Some(end);
    }

    /// Reads the whole body (for a response body policy), at most `limit` bytes.
    pub async fn collect(mut self, limit: u64) -> Result<Bytes, GatewayError> {
        let too_large = ErrorKind::UpstreamBodyTooLarge;
        let broken = ErrorKind::UpstreamReset;
        match std::mem::replace(&mut self.inner, Inner::Full(None)) {
            Inner::Full(b) => Ok(b.unwrap_or_default()),
            Inner::Direct(d) => collect(d, limit, too_large, broken).await,
            Inner::Upstream(mut u) => {
                let r = collect(&mut u.inner, limit, too_large, broken).await;
                if r.is_ok() {
                    u.release();
                }
                r
            }
        }
    }
}

impl Drop for GatewayBody {
    fn drop(&mut self) {
        if let Some(t) = self.tail.as_mut() {
            if self.inner.is_end_stream() {
                t.finish(Ending::Complete);
            } else {
                t.finish(Ending::ClientGone);
            }
        }
    }
}

impl Inner {
    fn is_end_stream(&self) -> bool {
        match self {
            Inner::Full(b) => b.is_none(),
            Inner::Upstream(u) => u.inner.is_end_stream(),
            Inner::Direct(d) => d.is_end_stream(),
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
        let this = self.get_mut();
        let r: Poll<Option<Result<Frame<Bytes>, BoxError>>> = match &mut this.inner {
            Inner::Full(b) => Poll::Ready(b.take().map(|d| Ok(Frame::data(d)))),
            Inner::Direct(d) => Pin::new(d)
                .poll_frame(cx)
                .map(|o| o.map(|r| r.map_err(BoxError::from))),
            Inner::Upstream(u) => {
                let r = Pin::new(&mut u.inner).poll_frame(cx);
                match &r {
                    Poll::Ready(Some(Ok(_))) => {
                        if u.inner.is_end_stream() {
                            u.release();
                        }
                    }
                    Poll::Ready(None) => u.release(),
                    Poll::Ready(Some(Err(_))) => u.pooled = None,
                    Poll::Pending => {}
                }
                r.map(|o| o.map(|r| r.map_err(BoxError::from)))
            }
        };
        if let Some(t) = this.tail.as_mut() {
            match &r {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(d) = frame.data_ref() {
                        t.bytes += d.len() as u64;
                    }
                    if this.inner.is_end_stream() {
                        t.finish(Ending::Complete);
                    }
                }
                Poll::Ready(None) => t.finish(Ending::Complete),
                Poll::Ready(Some(Err(_))) => t.finish(Ending::UpstreamBroke),
                Poll::Pending => {}
            }
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Upstream(u) => u.inner.size_hint(),
            Inner::Direct(d) => d.size_hint(),
        }
    }
}
