//! What the kinds' unit tests share: a build against a file and runtime, a request, a
//! context, and the error a hook answered.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{request, response, HeaderValue, Method, Uri};
use turnpike_model::GatewayFile;
use turnpike_policy::{
    BuildCx, ErrorKind, Flow, Policy, PolicyKind, Problem, RequestCtx, Runtime, Scratch, Step,
    UpstreamTarget,
};

/// What one build of `K` for API 0 of `file` gave, and its problems' paths.
pub(crate) fn build<K: PolicyKind>(
    spec: &K::Spec,
    at: &str,
    file: &GatewayFile,
    runtime: &Runtime,
    scratch: &mut Scratch,
) -> (Option<Arc<dyn Policy>>, Vec<String>) {
    let mut problems: Vec<Problem> = Vec::new();
    let mut cx = BuildCx {
        api: 0,
        at: at.into(),
        problems: &mut problems,
        runtime,
        file,
        scratch,
    };
    let built = K::build(spec, &mut cx);
    (built, problems.into_iter().map(|p| p.path).collect())
}

pub(crate) fn ctx() -> RequestCtx {
    RequestCtx::new(
        HeaderValue::from_static("rid"),
        SocketAddr::from(([127, 0, 0, 1], 1)),
        false,
        UpstreamTarget::suffix(Uri::from_static("/"), 0),
    )
}

/// A request's head with `headers`.
pub(crate) fn request(method: Method, headers: &[(&'static str, &'static str)]) -> request::Parts {
    let mut b = http::Request::builder().method(method).uri("/");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let (parts, ()) = b.body(()).unwrap_or_default().into_parts();
    parts
}

pub(crate) fn response() -> response::Parts {
    http::Response::new(()).into_parts().0
}

/// The error a ready hook answered, `None` when it let the request go on.
pub(crate) fn refused(step: Step<'_>) -> Option<ErrorKind> {
    match step {
        Step::Done(Err(e)) => Some(e.kind),
        Step::Done(Ok(Flow::Continue)) => None,
        Step::Done(Ok(Flow::Respond(_))) => panic!("answered"),
        Step::Pending(_) => panic!("pending"),
    }
}
