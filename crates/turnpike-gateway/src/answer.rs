//! The answer path: how a response leaves (request id, `Connection: close` while
//! draining, the body holding the connection), the response hooks, and how an error or a
//! policy's answer becomes response parts. Shared by plain requests (`proxy.rs`) and
//! upgrades (`upgrade/`).

use std::sync::Arc;

use bytes::Bytes;
use http::{response, HeaderValue, Response, Version};
use turnpike_policy::{Answer, RequestCtx, Stop, StreamedAnswer};

use crate::conn::ConnCtx;
use crate::error::{ErrorKind, GatewayError};
use crate::headers::{self, X_REQUEST_ID};
use crate::park::HeldBody;
use crate::response_body::ResponseBody;
use crate::upstream::forward::Upstream;

/// A request routed to an API only to be refused there.
pub(crate) enum Refuse {
    /// A method the resource does not accept, with its `Allow` value (answered after
    /// the pre-route phase, which may answer a CORS preflight).
    Method(HeaderValue),
    /// No resource of the API serves the path, which the API owns (its errors have a
    /// format of their own, e.g. SOAP Faults): 404 before any request hook.
    NotFound,
}

/// The response as it leaves: its request id, `Connection: close` on HTTP/1.x while
/// draining (not on a `101`, whose connection goes on as a WebSocket), and the body
/// holding the connection's context.
#[inline]
pub(crate) fn leaving(
    mut resp: Response<ResponseBody>,
    request_id: HeaderValue,
    h1: bool,
    conn: &Arc<ConnCtx>,
) -> Response<HeldBody<ResponseBody, Arc<ConnCtx>>> {
    resp.headers_mut().insert(X_REQUEST_ID.clone(), request_id);
    if h1
        && conn.shared.health.is_draining()
        && resp.status() != http::StatusCode::SWITCHING_PROTOCOLS
    {
        resp.headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp.map(|b| HeldBody::new(b, conn.clone()))
}

/// The response hooks, back to front; an error raised there becomes the response (and
/// `failed`) and the hooks outside the one that raised it still see it. Returns how many
/// policies' response sides ran.
#[inline]
pub(crate) fn response_hooks(
    chain: &turnpike_policy::Chain,
    ctx: &mut RequestCtx,
    rparts: &mut response::Parts,
    rbody: &mut ResponseBody,
    mut upto: usize,
    failed: &mut Option<ErrorKind>,
) -> usize {
    while let Err((at, e)) = chain.response_headers(ctx, rparts, upto) {
        *failed = Some(e.kind);
        (*rparts, *rbody) = error_parts(e, &ctx.request_id);
        upto = at;
    }
    upto
}

#[inline]
pub(crate) fn stop(at: usize, e: GatewayError) -> Stop {
    Stop {
        at,
        answer: Answer::Error(e),
    }
}

pub(crate) fn upstream_response(up: Upstream) -> (response::Parts, ResponseBody) {
    let (mut rparts, body) = match up {
        Upstream::Hyper(resp, pooled) => {
            let (rparts, rbody) = resp.into_parts();
            (rparts, ResponseBody::upstream(rbody, pooled))
        }
        Upstream::Direct(resp) => {
            let (rparts, rbody) = resp.into_parts();
            (rparts, ResponseBody::direct(rbody))
        }
    };
    headers::strip_hop_by_hop(&mut rparts.headers);
    rparts.version = Version::HTTP_11;
    (rparts, body)
}

#[inline]
pub(crate) fn answer_response(
    answer: Answer,
    request_id: &HeaderValue,
) -> (response::Parts, ResponseBody, Option<ErrorKind>) {
    match answer {
        Answer::Respond(r) => {
            let (mut p, b) = (*r).into_parts();
            // A policy's answer whose body comes later (an extensions lookup, on the
            // answer path only).
            match p
                .extensions
                .remove::<StreamedAnswer>()
                .and_then(StreamedAnswer::take)
            {
                Some(body) => (p, ResponseBody::answer(body), None),
                None => (p, ResponseBody::full(b), None),
            }
        }
        Answer::Error(e) => {
            let kind = e.kind;
            let (p, b) = error_parts(e, request_id);
            (p, b, Some(kind))
        }
    }
}

pub(crate) fn error_parts(
    e: GatewayError,
    request_id: &HeaderValue,
) -> (response::Parts, ResponseBody) {
    let (p, b): (response::Parts, Bytes) = e.into_response(request_id).into_parts();
    (p, ResponseBody::full(b))
}
