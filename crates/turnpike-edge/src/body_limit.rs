//! The body limit policy: a request whose `Content-Length` exceeds the API's
//! `max_body_size` is refused with 413 before anything is read or sent upstream. A body
//! without `Content-Length` (chunked) is counted against the same limit while it streams
//! (the gateway's request body) or while it is buffered for a body policy.

use std::sync::Arc;

use http::request;
use turnpike_model::Quantity;
use turnpike_policy::http::content_length;
use turnpike_policy::spec::size::{parse_size, DEFAULT_MAX_BODY_BYTES};
use turnpike_policy::{
    BuildCx, ErrorKind, GatewayError, Hooks, Policy, PolicyKind, RequestCtx, Stage, Step,
};

pub struct BodyLimitPolicy {
    limit: u64,
}

impl BodyLimitPolicy {
    /// The largest body accepted, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }
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
        // A malformed length is the gateway's to refuse (400) before any policy runs.
        let declared = content_length(&req.headers).ok().flatten();
        if declared.is_some_and(|n| n > self.limit) {
            return GatewayError::new(ErrorKind::BodyTooLarge).into();
        }
        Step::CONTINUE
    }
}

/// The body limit kind: `max_body_size` (10 MB when absent; `0`, no limit). A bad
/// value is reported by validation, which reads the same field for request buffering.
pub struct BodyLimit;

impl PolicyKind for BodyLimit {
    const NAME: &'static str = "body_limit";
    type Spec = Option<Quantity>;

    fn stage(_: &Option<Quantity>) -> Stage {
        Stage::Limits
    }

    fn build(spec: &Option<Quantity>, _: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let limit = match spec {
            None => DEFAULT_MAX_BODY_BYTES,
            Some(q) => parse_size(q).ok().flatten()?,
        };
        Some(Arc::new(BodyLimitPolicy { limit }))
    }
}
