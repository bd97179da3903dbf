//! Request buffering (an API's `request_buffering`, `turnpike_config::RequestBuffering`):
//! the body is read up to the API's buffer size before an upstream connection is taken,
//! so a client that sends slowly holds this task and at most that many bytes, never a
//! connection of the back end's. The whole body read: it goes as one buffer with its
//! `Content-Length`. A larger one: the bytes read go first and the rest streams as it
//! arrives, as without buffering. Not sent within the buffering timeout, or stalled past
//! the body-read timeout: 408, and no upstream connection was ever opened. What all
//! buffers hold at once is capped (`--request-buffer-mib`, [`BufferBudget`]): past it a
//! body streams as it arrives, as it did before buffering existed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::HeaderMap;
use http_body::Body;
use hyper::body::Incoming;
use turnpike_config::RequestBuffering;

use crate::client_body::{BodyError, BufferBudget, ClientBody, Reserved};
use crate::error::{ErrorKind, GatewayError};
use crate::response_body::{self as body};

/// [`buffer`] for `api`'s request, boxed and built out of line: the request path's
/// future holds one pointer for it, and its code stays small enough to be folded into
/// the caller's (callgrind: inline, the request future's copies grew for every request,
/// bodies or not).
#[cold]
#[inline(never)]
pub(crate) fn boxed<'a>(
    incoming: Incoming,
    rb: RequestBuffering,
    api: &turnpike_config::CompiledApi,
    conn: &'a crate::conn::ConnCtx,
    headers: &'a mut HeaderMap,
) -> Pin<Box<dyn Future<Output = Result<ClientBody, GatewayError>> + Send + 'a>> {
    Box::pin(buffer(
        incoming,
        rb,
        api.max_body_bytes,
        conn.shared.body_read_timeout,
        &conn.shared.buffer_budget,
        headers,
    ))
}

/// Reads up to `rb.size` bytes of `incoming` (at most `limit` in all, each next bytes
/// within `read_timeout`, all of them within `rb.timeout`), while the gateway-wide
/// `budget` has room. Fixes `headers`' framing when the whole body was read without a
/// `Content-Length` (chunked).
pub(crate) async fn buffer(
    incoming: Incoming,
    rb: RequestBuffering,
    limit: Option<u64>,
    read_timeout: Duration,
    budget: &Arc<BufferBudget>,
    headers: &mut HeaderMap,
) -> Result<ClientBody, GatewayError> {
    let mut body = ClientBody::new(incoming, limit, read_timeout, None);
    let mut reserved = Reserved::new(budget.clone());
    let read = read_up_to(&mut body, rb.size, &mut reserved);
    let (read, ended) = match tokio::time::timeout(rb.timeout, read).await {
        Ok(r) => r?,
        Err(_) => {
            let mut e = GatewayError::new(ErrorKind::RequestTimeout);
            e.detail = Some("the request body was not received in time".into());
            return Err(e);
        }
    };
    if ended || body.is_end_stream() {
        if !headers.contains_key(CONTENT_LENGTH) {
            body::set_length(headers, read.len());
        }
        return Ok(ClientBody::full(read).holding(reserved));
    }
    Ok(body.with_head(read).holding(reserved))
}

/// Frames of `body` until its end, `size` bytes, or the budget's end, and whether the
/// end was seen (a chunked body says so only by its last poll). One frame (the common
/// case) is kept without a copy.
async fn read_up_to(
    body: &mut ClientBody,
    size: u64,
    reserved: &mut Reserved,
) -> Result<(Bytes, bool), GatewayError> {
    let mut got = body::Gathered::default();
    let mut have = 0u64;
    let mut ended = false;
    while have < size && reserved.budget().has_room() {
        let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
        else {
            ended = true;
            break;
        };
        let frame = frame.map_err(refusal)?;
        let Ok(data) = frame.into_data() else {
            continue; // request trailers are not forwarded
        };
        have += data.len() as u64;
        reserved.add(data.len() as u64);
        got.push(data);
    }
    Ok((got.finish(), ended))
}

fn refusal(e: BodyError) -> GatewayError {
    let kind = match e {
        BodyError::TooLarge { .. } => ErrorKind::BodyTooLarge,
        BodyError::ReadTimeout { .. } => ErrorKind::RequestTimeout,
        BodyError::Hyper(_) => ErrorKind::BadRequest,
    };
    GatewayError::with_source(kind, e)
}
