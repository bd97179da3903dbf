//! What the client receives: [`ResponseBody`], a generated or buffered body or the
//! upstream's (which hands its HTTP/1.1 connection back to the pool at end of stream,
//! `upstream/body.rs`). When someone must know how the body ended (bytes sent, client
//! gone: `on_complete`, the access log, metrics, bandwidth quotas), a [`BodyEnd`] rides
//! along and is told once. [`collect`] reads a whole body (either
//! side) for a policy that asked for it; [`set_length`] is the one place that fixes
//! `Content-Length`/`Transfer-Encoding` after a body was replaced, for both upstream
//! clients and the client side.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use crate::client_body::BodyError;
use crate::error::{ErrorKind, GatewayError};
use crate::read_idle::ReadIdle;
use crate::upstream::body::{Pooled, UpstreamBody};
use crate::upstream::h1::body::DirectBody;

/// Reads a whole body of at most `limit` bytes. `too_large` names the error when it is
/// bigger, `broken` when it fails.
pub(crate) async fn collect<B>(
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
pub(crate) fn set_length(headers: &mut HeaderMap, len: usize) {
    headers.remove(TRANSFER_ENCODING);
    headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
}

/// How a client-bound body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The last byte went out.
    Complete,
    /// Dropped before its end: the client went away (hyper stops polling a body whose
    /// connection broke).
    ClientGone,
    /// The upstream's body failed mid-way (reset, bad framing).
    UpstreamBroke,
}

/// Told once how a client-bound body ended, with the bytes sent and when the first of
/// them went out.
pub(crate) trait BodyEnd: Send {
    fn end(&mut self, bytes_out: u64, first_byte: Option<Instant>, how: Ending);
}

/// What must hear about the end of a body, boxed only when something does.
struct Tail {
    bytes: u64,
    /// When the first data frame was handed to the connection (time to first token).
    first: Option<Instant>,
    end: Option<Box<dyn BodyEnd>>,
}

impl Tail {
    fn finish(&mut self, how: Ending) {
        if let Some(mut e) = self.end.take() {
            e.end(self.bytes, self.first, how);
        }
    }
}

/// The error a client-bound body can end with.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

enum Inner {
    Full(Option<Bytes>),
    /// Dropped before the end (client went away): the connection is in an unknown state
    /// and is not pooled; hyper closes it when `pooled` drops.
    Upstream(UpstreamBody),
    /// A plain-HTTP upstream's body read in the client's task (see `h1`).
    Direct(DirectBody),
    /// An upstream body under the API's read-idle guard (`read_idle.rs`).
    Watched(Box<ReadIdle<ResponseBody>>),
}

/// What the client receives.
pub(crate) struct ResponseBody {
    inner: Inner,
    tail: Option<Box<Tail>>,
}

impl ResponseBody {
    pub(crate) fn full(b: Bytes) -> Self {
        ResponseBody {
            // An empty body is ended from the start (hyper then never polls it).
            inner: Inner::Full((!b.is_empty()).then_some(b)),
            tail: None,
        }
    }

    pub(crate) fn empty() -> Self {
        ResponseBody {
            inner: Inner::Full(None),
            tail: None,
        }
    }

    pub(crate) fn upstream(inner: Incoming, pooled: Option<Pooled>) -> Self {
        let mut b = UpstreamBody { inner, pooled };
        if b.inner.is_end_stream() {
            b.release();
        }
        ResponseBody {
            inner: Inner::Upstream(b),
            tail: None,
        }
    }

    pub(crate) fn direct(inner: DirectBody) -> Self {
        ResponseBody {
            inner: Inner::Direct(inner),
            tail: None,
        }
    }

    /// Fails the body when the upstream sends nothing for `every` (`timeouts.read_idle`).
    /// The tail stays outside, so bytes and the ending are still counted once.
    pub(crate) fn read_idle(mut self, every: std::time::Duration) -> Self {
        let tail = self.tail.take();
        let inner = std::mem::replace(&mut self.inner, Inner::Full(None));
        let body = ResponseBody { inner, tail: None };
        ResponseBody {
            inner: Inner::Watched(Box::new(ReadIdle::new(body, every))),
            tail,
        }
    }

    fn tail(&mut self) -> &mut Tail {
        self.tail.get_or_insert_with(|| {
            Box::new(Tail {
                bytes: 0,
                first: None,
                end: None,
            })
        })
    }

    /// Hands `end` the body's fate: called once when the last byte went out, or when
    /// the body is dropped before (client gone).
    pub(crate) fn finish_with(&mut self, end: Box<dyn BodyEnd>) {
        self.tail().end = Some(end);
    }

    /// Reads the whole body (for a response body policy), at most `limit` bytes.
    pub(crate) async fn collect(mut self, limit: u64) -> Result<Bytes, GatewayError> {
        let too_large = ErrorKind::UpstreamBodyTooLarge;
        let broken = ErrorKind::UpstreamReset;
        match std::mem::replace(&mut self.inner, Inner::Full(None)) {
            Inner::Full(b) => Ok(b.unwrap_or_default()),
            Inner::Direct(d) => collect(d, limit, too_large, broken).await,
            Inner::Watched(w) => collect(w, limit, too_large, broken).await,
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

impl Drop for ResponseBody {
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
            Inner::Watched(w) => w.is_end_stream(),
        }
    }
}

impl Body for ResponseBody {
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
            Inner::Watched(w) => Pin::new(w.as_mut()).poll_frame(cx),
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
                        if t.first.is_none() && !d.is_empty() {
                            t.first = Some(Instant::now());
                        }
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
            Inner::Watched(w) => w.size_hint(),
        }
    }
}
