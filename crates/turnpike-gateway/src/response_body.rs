//! What the client receives: [`ResponseBody`], a generated or buffered body or the
//! upstream's (which hands its HTTP/1.1 connection back to the pool at end of stream,
//! `upstream/body.rs`). When someone must know how the body ended (bytes sent, client
//! gone: `on_complete`, the access log, metrics, bandwidth quotas), a [`BodyEnd`] rides
//! along and is told once. A body some policy wants to see as it passes goes through
//! its [`ResponseStream`]s chunk by chunk ([`ResponseBody::transformed`]), and what they
//! learnt is settled into the request's context before the [`BodyEnd`] hears the end.
//! [`collect`] reads a whole body (either
//! side) for a policy that asked for it; [`set_length`] is the one place that fixes
//! `Content-Length`/`Transfer-Encoding` after a body was replaced, for both upstream
//! clients and the client side.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::header::Entry;
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use turnpike_policy::{AnswerBody, ResponseStream};

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
        // A body that knows it has ended (its length reached) is not polled again for
        // the `None` it would give: a request or answer read whole in one frame (a
        // tool call's message, its operation's answer) costs one poll, not two.
        if body.is_end_stream() {
            break;
        }
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
    match headers.keys_len() <= PASS_HEADERS {
        true => set_length_in_pass(headers, len),
        false => set_length_by_lookup(headers, len),
    }
}

/// The most names a head may have for [`set_length`] to find the framing headers in
/// one pass over it (a compare per header, no hashing) rather than by two lookups.
const PASS_HEADERS: usize = 8;

/// [`set_length`] in one pass: the length kept when its first value states `len`, its
/// one value replaced where it stands, several or none by an insertion; a
/// `Transfer-Encoding` (absent but for a chunked body read whole) removed after.
fn set_length_in_pass(headers: &mut HeaderMap, len: usize) {
    let (mut lengths, mut chunked) = (0u32, false);
    let mut length = None;
    for (name, value) in headers.iter_mut() {
        if *name == CONTENT_LENGTH {
            lengths += 1;
            length.get_or_insert(value);
        } else if *name == TRANSFER_ENCODING {
            chunked = true;
        }
    }
    match length {
        // The length the body has (every value of the name kept, as a lookup would).
        Some(v) if states(v.as_bytes(), len) => {}
        Some(v) if lengths == 1 => *v = length_value(len),
        _ => {
            headers.insert(CONTENT_LENGTH, length_value(len));
        }
    }
    if chunked {
        headers.remove(TRANSFER_ENCODING);
    }
}

/// [`set_length`] by lookups (a head of many headers).
fn set_length_by_lookup(headers: &mut HeaderMap, len: usize) {
    // Absent but for a chunked body read whole: one lookup.
    headers.remove(TRANSFER_ENCODING);
    match headers.entry(CONTENT_LENGTH) {
        // Most bodies read whole keep the length the upstream declared (a cached answer,
        // a check that changed nothing): its header stays, and nothing is formatted.
        Entry::Occupied(o) if states(o.get().as_bytes(), len) => {}
        // Another length replaced where it is (every value of the name): one lookup,
        // not a removal and an insertion.
        Entry::Occupied(mut o) => {
            o.insert(length_value(len));
        }
        Entry::Vacant(v) => {
            v.insert(length_value(len));
        }
    }
}

fn length_value(len: usize) -> HeaderValue {
    small_length(len).unwrap_or_else(|| HeaderValue::from(len))
}

/// The decimal texts of 0 to 999, one after another (`0123...9899100101...999`).
const DECIMALS: [u8; 2890] = decimals();
/// [`DECIMALS`] as text, checked once (at compile time), not per length.
static DECIMAL_TEXT: &str = match std::str::from_utf8(&DECIMALS) {
    Ok(text) => text,
    Err(_) => panic!("digits are ASCII"),
};

const fn decimals() -> [u8; 2890] {
    let mut out = [0u8; 2890];
    let (mut n, mut at) = (0, 0);
    while n < 1000 {
        if n >= 100 {
            out[at] = b'0' + (n / 100) as u8;
            at += 1;
        }
        if n >= 10 {
            out[at] = b'0' + (n / 10 % 10) as u8;
            at += 1;
        }
        out[at] = b'0' + (n % 10) as u8;
        at += 1;
        n += 1;
    }
    out
}

/// A length below 1000 as a header value without an allocation (a static slice of
/// [`DECIMALS`]; `HeaderValue::from(u64)` formats into a new buffer each time).
fn small_length(len: usize) -> Option<HeaderValue> {
    let (at, width) = match len {
        0..=9 => (len, 1),
        10..=99 => (10 + 2 * (len - 10), 2),
        100..=999 => (190 + 3 * (len - 100), 3),
        _ => return None,
    };
    Some(HeaderValue::from_static(DECIMAL_TEXT.get(at..at + width)?))
}

/// Whether `digits` are exactly `len` in decimal (no sign, no leading zero, no space).
fn states(digits: &[u8], mut len: usize) -> bool {
    let mut rest = digits.iter().rev();
    loop {
        // `len % 10` is a digit.
        if rest.next() != Some(&(b'0' + (len % 10) as u8)) {
            return false;
        }
        len /= 10;
        if len == 0 {
            return rest.next().is_none();
        }
    }
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

    /// The request's extensions, where a body's [`ResponseStream`]s settle what they
    /// learnt just before [`BodyEnd::end`].
    fn ext(&mut self) -> Option<&mut http::Extensions> {
        None
    }
}

/// What must hear about the end of a body, boxed only when something does.
struct Tail {
    bytes: u64,
    /// When the first data frame was handed to the connection (time to first token).
    first: Option<Instant>,
    end: Option<Box<dyn BodyEnd>>,
}

impl Tail {
    fn finish(&mut self, how: Ending, inner: &mut Inner) {
        if let Some(mut e) = self.end.take() {
            match (inner, e.ext()) {
                (Inner::Transformed(t), Some(ext)) => t.settle(ext),
                (Inner::Answer(a), Some(ext)) => a.body.settle(ext),
                _ => {}
            }
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
    /// A body passing through policies' stream transformers.
    Transformed(Box<Transformed>),
    /// A policy's own answer arriving chunk by chunk (`turnpike_policy::StreamedAnswer`).
    Answer(Answered),
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

    /// A policy's answer whose body comes later ([`AnswerBody`]).
    pub(crate) fn answer(body: Box<dyn AnswerBody>) -> Self {
        ResponseBody {
            inner: Inner::Answer(Answered { body, ended: false }),
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

    /// Passes the body through `streams` (in order) chunk by chunk as it arrives. The
    /// tail stays outside, so the bytes counted are those the client got.
    pub(crate) fn transformed(mut self, streams: Vec<Box<dyn ResponseStream>>) -> Self {
        let tail = self.tail.take();
        let inner = std::mem::replace(&mut self.inner, Inner::Full(None));
        let body = ResponseBody { inner, tail: None };
        ResponseBody {
            inner: Inner::Transformed(Box::new(Transformed {
                body,
                streams,
                ended: false,
            })),
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
            Inner::Transformed(t) => collect(t, limit, too_large, broken).await,
            Inner::Answer(mut a) => collect(&mut a, limit, too_large, broken).await,
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
                t.finish(Ending::Complete, &mut self.inner);
            } else {
                t.finish(Ending::ClientGone, &mut self.inner);
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
            Inner::Transformed(t) => t.ended,
            Inner::Answer(a) => a.ended,
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
            Inner::Transformed(t) => Pin::new(t.as_mut()).poll_frame(cx),
            Inner::Answer(a) => Pin::new(a).poll_frame(cx),
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
                        t.finish(Ending::Complete, &mut this.inner);
                    }
                }
                Poll::Ready(None) => t.finish(Ending::Complete, &mut this.inner),
                Poll::Ready(Some(Err(_))) => t.finish(Ending::UpstreamBroke, &mut this.inner),
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
            Inner::Transformed(_) | Inner::Answer(_) => SizeHint::default(),
        }
    }
}

/// A body and the stream transformers it passes through (see
/// [`ResponseBody::transformed`]).
pub(crate) struct Transformed {
    body: ResponseBody,
    streams: Vec<Box<dyn ResponseStream>>,
    /// Every transformer was told the end (and what they gave back went out).
    ended: bool,
}

impl Transformed {
    fn settle(&mut self, ext: &mut http::Extensions) {
        for s in &mut self.streams {
            s.settle(ext);
        }
    }

    /// `chunk` through every transformer in turn; empty when one holds it.
    fn pass(&mut self, from: usize, mut chunk: Bytes) -> Result<Bytes, GatewayError> {
        for s in self.streams.iter_mut().skip(from) {
            if chunk.is_empty() {
                break;
            }
            chunk = s.on_chunk(chunk)?;
        }
        Ok(chunk)
    }

    /// Tells each transformer the end, in order: what the ones before gave back on
    /// their end passes this one as a chunk before it is told.
    fn end(&mut self) -> Result<Bytes, GatewayError> {
        let mut carried = Bytes::new();
        for s in &mut self.streams {
            if !carried.is_empty() {
                carried = s.on_chunk(carried)?;
            }
            if let Some(last) = s.on_end()?.filter(|b| !b.is_empty()) {
                carried = if carried.is_empty() {
                    last
                } else {
                    let mut both = BytesMut::with_capacity(carried.len() + last.len());
                    both.extend_from_slice(&carried);
                    both.extend_from_slice(&last);
                    both.freeze()
                };
            }
        }
        Ok(carried)
    }
}

impl Body for Transformed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            let next = match Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(next) => next,
            };
            let out = match next {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.pass(0, data),
                    // Trailers: not a transformer's business.
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.ended = true;
                    this.end()
                }
            };
            match out {
                Ok(data) if data.is_empty() => continue,
                Ok(data) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Err(e) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(BoxError::from(e))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

/// A policy's answer arriving chunk by chunk (see [`ResponseBody::answer`]).
pub(crate) struct Answered {
    body: Box<dyn AnswerBody>,
    ended: bool,
}

impl Body for Answered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match this.body.poll_chunk(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(data))) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Poll::Ready(Some(Err(e))) => {
                this.ended = true;
                Poll::Ready(Some(Err(BoxError::from(e))))
            }
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_already_declared_is_kept_and_any_other_is_rewritten() {
        assert!(states(b"0", 0) && states(b"50", 50) && states(b"10240", 10240));
        for (digits, len) in [
            (&b"050"[..], 50),
            (b"+50", 50),
            (b"5", 50),
            (b"", 0),
            (b"51", 50),
        ] {
            assert!(!states(digits, len), "{digits:?} {len}");
        }
        let mut h = HeaderMap::new();
        h.insert(CONTENT_LENGTH, HeaderValue::from_static("50"));
        set_length(&mut h, 50);
        assert_eq!(h[CONTENT_LENGTH], "50");
        set_length(&mut h, 7);
        assert_eq!(h[CONTENT_LENGTH], "7");
        h.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        set_length(&mut h, 7);
        assert!(!h.contains_key(TRANSFER_ENCODING));
        assert_eq!(h[CONTENT_LENGTH], "7");
        for n in [0, 9, 10, 99, 100, 999, 1000, 123_456] {
            set_length(&mut h, n);
            assert_eq!(h[CONTENT_LENGTH], HeaderValue::from(n), "{n}");
        }
        // Every value of a repeated length is replaced; an absent one is added.
        h.append(CONTENT_LENGTH, HeaderValue::from_static("123456"));
        set_length(&mut h, 12);
        let all: Vec<_> = h.get_all(CONTENT_LENGTH).iter().collect();
        assert_eq!(all, [HeaderValue::from_static("12")]);
        let mut h = HeaderMap::new();
        set_length(&mut h, 3);
        assert_eq!(h[CONTENT_LENGTH], "3");
    }

    /// The pass and the lookups leave the same head, whatever its size and framing.
    #[test]
    fn a_length_set_in_one_pass_as_by_lookups() {
        let lengths: [&[&'static str]; 4] = [&[], &["12"], &["7"], &["12", "12"]];
        for others in 0..12 {
            for te in [false, true] {
                for values in lengths {
                    let mut h = HeaderMap::new();
                    for i in 0..others {
                        let name = http::HeaderName::from_bytes(format!("x-{i}").as_bytes())
                            .expect("a name");
                        h.insert(name, HeaderValue::from_static("v"));
                    }
                    for v in values {
                        h.append(CONTENT_LENGTH, HeaderValue::from_static(v));
                    }
                    if te {
                        h.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
                    }
                    let (mut pass, mut lookup) = (h.clone(), h);
                    set_length_in_pass(&mut pass, 12);
                    set_length_by_lookup(&mut lookup, 12);
                    assert_eq!(pass, lookup, "{others} {te} {values:?}");
                    assert_eq!(pass[CONTENT_LENGTH], "12");
                    assert!(!pass.contains_key(TRANSFER_ENCODING));
                }
            }
        }
    }

    #[test]
    fn small_lengths_are_their_decimal_text() {
        for n in 0..1000 {
            assert_eq!(small_length(n), Some(HeaderValue::from(n)), "{n}");
        }
        assert_eq!(small_length(1000), None);
    }
}
