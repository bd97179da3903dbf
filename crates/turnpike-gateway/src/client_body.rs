//! The request body as it comes from the client. Bodies stream frame by frame unless a
//! policy of the API asked for the whole body (`response_body::collect`): [`ClientBody`]
//! counts bytes against the API's limit while it streams to the upstream (or carries a
//! buffered, possibly rewritten, body). A streamed request body that stalls longer than
//! the body-read timeout fails with [`BodyError::ReadTimeout`] (408); [`BodyWatch`]
//! tells the forwarder how the body ended (a response timeout while the client is still
//! sending is the client's 408, and an over-limit body the upstream answered early is
//! still a 413). [`BufferBudget`] bounds what request buffering (`request_buffer.rs`)
//! holds at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use crate::self_wake::ConnWake;

/// Why a body stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
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
pub(crate) struct ClientBody {
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
    /// The client connection's wake state: the wakes a poll makes on it are held
    /// (`self_wake.rs`); `None`: passed on as made.
    conn_wake: Option<Arc<ConnWake>>,
}

/// How a streamed request body ended, shared between the body (wherever hyper polls
/// it) and the forwarder.
#[derive(Clone, Default)]
pub(crate) struct BodyWatch(Arc<WatchInner>);

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
pub(crate) enum BodyEndState {
    Streaming,
    Done,
    TooLarge,
    TimedOut,
    Broken,
}

impl BodyWatch {
    /// The body had not ended, and was waiting for the client's next bytes: a timeout
    /// now is the client's, not the upstream's (which may just not be reading).
    pub(crate) fn waiting_for_client(&self) -> bool {
        !matches!(self.state(), BodyEndState::Done | BodyEndState::TooLarge)
            && self.0.awaiting_client.load(Ordering::Acquire)
    }

    fn awaiting_client(&self, yes: bool) {
        self.0.awaiting_client.store(yes, Ordering::Release);
    }

    pub(crate) fn state(&self) -> BodyEndState {
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
    pub(crate) async fn ended(&self) -> BodyEndState {
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

impl ClientBody {
    /// A streamed body: at most `limit` bytes, the next bytes within `read_timeout`
    /// (zero: no limit). `conn`: the client connection's wake state, when the body is
    /// polled in that connection's task: the wakes hyper's channel makes for nothing are
    /// then dropped (`self_wake.rs`).
    pub(crate) fn new(
        inner: Incoming,
        limit: Option<u64>,
        read_timeout: Duration,
        conn: Option<&Arc<ConnWake>>,
    ) -> Self {
        let conn_wake = conn.filter(|_| !inner.is_end_stream()).cloned();
        ClientBody {
            inner: ReqInner::Stream(inner),
            head: None,
            reserved: None,
            limit: limit.unwrap_or(u64::MAX),
            seen: 0,
            counter: None,
            read_timeout,
            clock: None,
            watch: None,
            conn_wake,
        }
    }

    /// A handle telling how this body ends (made once, for a body still streaming).
    pub(crate) fn watch(&mut self) -> BodyWatch {
        self.watch.get_or_insert_with(BodyWatch::default).clone()
    }

    fn ended(&mut self, how: BodyEndState) {
        if let Some(w) = &self.watch {
            w.set(how);
        }
    }

    /// No body: what is left where a body was taken to be sent.
    pub(crate) fn empty() -> Self {
        Self::full(Bytes::new())
    }

    /// A buffered body (its headers fixed with [`set_length`]).
    pub(crate) fn full(b: Bytes) -> Self {
        ClientBody {
            inner: ReqInner::Full((!b.is_empty()).then_some(b)),
            head: None,
            reserved: None,
            limit: u64::MAX,
            seen: 0,
            counter: None,
            read_timeout: Duration::ZERO,
            clock: None,
            watch: None,
            conn_wake: None,
        }
    }

    /// This body with `head` (bytes already read from it, counted against its limit)
    /// sent first: a buffered start, then the rest as it streams.
    pub(crate) fn with_head(mut self, head: Bytes) -> Self {
        self.head = (!head.is_empty()).then_some(head);
        self
    }

    /// Holds `reserved` until this body is dropped (sent, or abandoned).
    pub(crate) fn holding(mut self, reserved: Reserved) -> Self {
        self.reserved = Some(reserved);
        self
    }

    /// A copy to send again (a retry on another endpoint): only a body wholly in
    /// memory, or none at all; a body that streams cannot be sent twice.
    pub(crate) fn replay(&self) -> Option<ClientBody> {
        if self.head.is_some() {
            return None;
        }
        match &self.inner {
            ReqInner::Full(b) => Some(ClientBody::full(b.clone().unwrap_or_default())),
            ReqInner::Stream(s) if http_body::Body::is_end_stream(s) => {
                Some(ClientBody::full(Bytes::new()))
            }
            ReqInner::Stream(_) => None,
        }
    }

    /// Counts the bytes that stream through into `counter`.
    pub(crate) fn count_into(&mut self, counter: Arc<AtomicU64>) {
        self.counter = Some(counter);
    }
}

impl Body for ClientBody {
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
        // hyper's channel wakes the connection when a chunk is taken, for its dispatcher
        // to send the next: for nothing once the body is complete (`self_wake.rs`).
        let mut poll = || Pin::new(&mut *inner).poll_frame(cx);
        let polled = match &this.conn_wake {
            None => poll(),
            Some(conn) => {
                let (polled, woke) = conn.holding_wakes(poll);
                let complete = match &polled {
                    Poll::Ready(None) => true,
                    Poll::Ready(Some(Ok(_))) => inner.is_end_stream(),
                    _ => false,
                };
                if woke && !complete {
                    conn.wake_by_ref();
                }
                polled
            }
        };
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

impl Drop for ClientBody {
    /// Dropped before its end (the upstream stopped reading it): whoever waits for the
    /// end learns it will not come.
    fn drop(&mut self) {
        self.ended(BodyEndState::Broken);
    }
}

/// What all buffered request bodies may hold at once (`--request-buffer-mib`); past it,
/// request buffering stops reading and a body streams as it arrives.
#[derive(Debug)]
pub(crate) struct BufferBudget {
    used: AtomicU64,
    limit: u64,
}

impl BufferBudget {
    pub(crate) fn new(limit: u64) -> Self {
        BufferBudget {
            used: AtomicU64::new(0),
            limit,
        }
    }

    /// Bytes the buffered bodies hold now.
    pub(crate) fn used(&self) -> u64 {
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
