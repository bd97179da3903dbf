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

#[cfg(test)]
mod tests {
    use http::Method;
    use turnpike_model::GatewayFile;
    use turnpike_policy::{ErrorKind, Runtime, Scratch};

    use super::*;
    use crate::testing::{build, ctx, refused, request};

    fn limit(spec: Option<Quantity>) -> Option<Arc<dyn Policy>> {
        let (rt, file) = (Runtime::default(), GatewayFile::default());
        let at = "apis[0].max_body_size";
        build::<BodyLimit>(&spec, at, &file, &rt, &mut Scratch::default()).0
    }

    fn verdict(policy: &dyn Policy, length: &'static str) -> Option<ErrorKind> {
        let mut req = request(Method::POST, &[("content-length", length)]);
        refused(policy.on_request_headers(&mut ctx(), &mut req))
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_the_body() {
        let Some(p) = limit(Some(Quantity::from("1KiB"))) else {
            panic!("no policy")
        };
        assert_eq!(verdict(&*p, "1024"), None);
        assert_eq!(verdict(&*p, "1025"), Some(ErrorKind::BodyTooLarge));
        assert_eq!(verdict(&*p, "1025, 1025"), Some(ErrorKind::BodyTooLarge));
        // Not one length: the gateway refuses it before any policy; not ours to judge.
        assert_eq!(verdict(&*p, "1025, 7"), None);
        let mut chunked = request(Method::POST, &[]);
        assert_eq!(
            refused(p.on_request_headers(&mut ctx(), &mut chunked)),
            None
        );
    }

    #[test]
    fn an_absent_size_is_the_default_and_a_bad_one_builds_nothing() {
        let default = limit(None).map(|p| verdict(&*p, "10485761"));
        assert_eq!(default, Some(Some(ErrorKind::BodyTooLarge)));
        assert!(limit(Some(Quantity::from("lots"))).is_none());
    }
}
