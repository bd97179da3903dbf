//! The body limit policy: a request whose `Content-Length` exceeds the API's
//! `max_body_size` is refused with 413 before anything is read or sent upstream. A body
//! without `Content-Length` (chunked) is counted against the same limit while it streams
//! (the gateway's request body) or while it is buffered for a body policy.

use http::header::CONTENT_LENGTH;
use http::request;
use turnpike_policy::{ErrorKind, GatewayError, Hooks, Policy, RequestCtx, Step};

pub(crate) struct BodyLimitPolicy {
    pub(crate) limit: u64,
}

impl Policy for BodyLimitPolicy {
    fn name(&self) -> &'static str {
        "body_limit"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }

    #[inline]
    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        let declared = req
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.limit) {
            return GatewayError::new(ErrorKind::BodyTooLarge).into();
        }
        Step::CONTINUE
    }
}
