//! The policy hooks skeleton (STYLE.md, "The policy pipeline"): a [`Policy`] has a few
//! named hooks with no-op defaults, a hook answers with a [`Flow`] (continue, respond now)
//! or a [`GatewayError`], and a per-request [`RequestCtx`] carries the route, timings and
//! what earlier steps learned (in `ext`). A [`Chain`] with no policies costs one
//! `is_empty` check per hook point.
//!
//! Hooks are synchronous for now; a step that must wait (token introspection) will add a
//! `Flow::Wait(future)` variant owning what it needs, so the common path stays unboxed.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{request, response, HeaderValue, StatusCode};
use turnpike_auth::{Identity, Subscription};
use turnpike_config::CompiledApi;

use crate::body::GatewayBody;
use crate::error::GatewayError;

/// What a request hook decided.
pub enum Flow {
    /// Go on to the next step.
    Continue,
    /// Stop here and send this response (a cache hit, a mock, a redirect).
    Respond(http::Response<GatewayBody>),
}

/// What the gateway knows about one request, shared by the policies of its chain.
pub struct RequestCtx<'a> {
    pub request_id: &'a HeaderValue,
    pub client: SocketAddr,
    /// The matched API (kept alive for the whole request, whatever swaps meanwhile).
    pub api: &'a Arc<CompiledApi>,
    /// What earlier policies learned, typed (a map: allocates on first insert; the hot
    /// steps below have their own fields).
    pub ext: http::Extensions,
    /// The throttle step's decision when a limit applied: the response hook writes its
    /// rate-limit headers and charges bandwidth quotas (a field, not `ext`: no allocation).
    pub throttle: Option<turnpike_throttle::Decision>,
    /// Who called, set by the auth step before the chain runs; `None` for open APIs
    /// and resources. Read it through [`RequestCtx::identity`].
    pub auth: Option<Authenticated<'a>>,
}

/// What the auth step learned about the caller.
#[derive(Clone)]
pub struct Authenticated<'a> {
    pub identity: Arc<Identity>,
    /// The subscription that let the call through (its tier drives throttling);
    /// `None` when the API does not require one.
    pub subscription: Option<&'a Subscription>,
}

impl RequestCtx<'_> {
    /// The authenticated caller, if the API is secured.
    #[inline]
    pub fn identity(&self) -> Option<&Arc<Identity>> {
        self.auth.as_ref().map(|a| &a.identity)
    }

    /// The caller's subscription to this API, if one was required.
    #[inline]
    pub fn subscription(&self) -> Option<&Subscription> {
        self.auth.as_ref().and_then(|a| a.subscription)
    }
}

/// One step of a route's chain. Built once from a spec when a snapshot is compiled.
pub trait Policy: Send + Sync + 'static {
    /// Stable name for logs and metrics.
    fn name(&self) -> &'static str;

    /// After routing, before the upstream is called.
    fn on_request_headers(
        &self,
        _ctx: &mut RequestCtx<'_>,
        _req: &mut request::Parts,
    ) -> Result<Flow, GatewayError> {
        Ok(Flow::Continue)
    }

    /// When the upstream's response head arrived.
    fn on_response_headers(
        &self,
        _ctx: &mut RequestCtx<'_>,
        _resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        Ok(())
    }

    /// Always runs once the response head is decided, also after an error.
    fn on_complete(&self, _ctx: &RequestCtx<'_>, _status: StatusCode) {}
}

/// An ordered list of policies.
#[derive(Clone, Default)]
pub struct Chain(Arc<[Arc<dyn Policy>]>);

impl Chain {
    pub fn new(policies: Vec<Arc<dyn Policy>>) -> Self {
        Chain(policies.into())
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn on_request_headers(
        &self,
        ctx: &mut RequestCtx<'_>,
        req: &mut request::Parts,
    ) -> Result<Flow, GatewayError> {
        for p in self.0.iter() {
            match p.on_request_headers(ctx, req)? {
                Flow::Continue => {}
                respond => return Ok(respond),
            }
        }
        Ok(Flow::Continue)
    }

    pub fn on_response_headers(
        &self,
        ctx: &mut RequestCtx<'_>,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        for p in self.0.iter().rev() {
            p.on_response_headers(ctx, resp)?;
        }
        Ok(())
    }

    pub fn on_complete(&self, ctx: &RequestCtx<'_>, status: StatusCode) {
        for p in self.0.iter().rev() {
            p.on_complete(ctx, status);
        }
    }
}
