//! The [`Policy`] trait: a few named hooks (phases), each with a no-op default, and the
//! [`Hooks`] set a policy declares so the chain calls only what it implements and the
//! gateway buffers a body only when some policy of the API asks for it.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::{request, response, Response};

use crate::ctx::{Completion, RequestCtx};
use crate::error::GatewayError;

/// What a request-side hook decided.
pub enum Flow {
    /// Go on to the next step.
    Continue,
    /// Stop here and send this response (a CORS preflight, a cache hit, a mock). The
    /// response passes through the response hooks of the policies before this one.
    Respond(Response<Bytes>),
}

/// What a request-side hook returns.
pub type HookResult = Result<Flow, GatewayError>;

/// A request-side hook's answer: ready now (the fast path, no allocation) or a future to
/// wait for (token introspection, a remote call), boxed only on that path.
pub enum Step<'a> {
    Done(HookResult),
    Pending(Pin<Box<dyn Future<Output = HookResult> + Send + 'a>>),
}

impl Step<'_> {
    /// Go on (the answer of a hook with nothing to do).
    pub const CONTINUE: Step<'static> = Step::Done(Ok(Flow::Continue));

    /// Waits for the answer (no await point on the `Done` path).
    #[inline]
    pub async fn resolve(self) -> HookResult {
        match self {
            Step::Done(r) => r,
            Step::Pending(f) => f.await,
        }
    }
}

impl From<HookResult> for Step<'_> {
    fn from(r: HookResult) -> Self {
        Step::Done(r)
    }
}

impl From<GatewayError> for Step<'_> {
    fn from(e: GatewayError) -> Self {
        Step::Done(Err(e))
    }
}

/// The hooks a policy implements (a small bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hooks(u8);

impl Hooks {
    pub const NONE: Hooks = Hooks(0);
    /// [`Policy::pre_route`].
    pub const PRE_ROUTE: Hooks = Hooks(1);
    /// [`Policy::on_request_headers`].
    pub const REQUEST_HEADERS: Hooks = Hooks(1 << 1);
    /// [`Policy::on_request_body`]: the gateway buffers the request body.
    pub const REQUEST_BODY: Hooks = Hooks(1 << 2);
    /// [`Policy::on_response_headers`].
    pub const RESPONSE_HEADERS: Hooks = Hooks(1 << 3);
    /// [`Policy::on_response_body`]: the gateway buffers the response body (when
    /// [`Policy::wants_response_body`] says so for the response at hand).
    pub const RESPONSE_BODY: Hooks = Hooks(1 << 4);
    /// [`Policy::on_complete`].
    pub const COMPLETE: Hooks = Hooks(1 << 5);
    /// [`Policy::response_stream`]: asked for each response, whose body then passes
    /// through the policy's [`ResponseStream`] chunk by chunk (never buffered).
    pub const RESPONSE_STREAM: Hooks = Hooks(1 << 6);
    /// [`Policy::on_early_body`]: the gateway buffers the request body before the
    /// request-headers hooks.
    pub const EARLY_BODY: Hooks = Hooks(1 << 7);

    #[inline]
    pub const fn union(self, other: Hooks) -> Hooks {
        Hooks(self.0 | other.0)
    }

    #[inline]
    pub const fn contains(self, other: Hooks) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }
}

impl std::ops::BitOr for Hooks {
    type Output = Hooks;
    fn bitor(self, rhs: Hooks) -> Hooks {
        self.union(rhs)
    }
}

/// One step of an API's chain, built once from its spec when a snapshot is compiled
/// (a bad spec is a config error then, never a 500 now). Hooks run in this order:
///
/// 1. [`pre_route`](Policy::pre_route): the host and path named the API, before the
///    method is checked against its resources (a CORS preflight is answered here);
/// 2. [`on_request_headers`](Policy::on_request_headers), in chain order;
/// 3. [`on_request_body`](Policy::on_request_body), in chain order, on the whole
///    buffered body;
/// 4. the upstream exchange;
/// 5. [`on_response_headers`](Policy::on_response_headers) then
///    [`on_response_body`](Policy::on_response_body), in reverse chain order, for the
///    policies whose request side ran (also on error responses and on a `Respond`);
/// 6. [`on_complete`](Policy::on_complete), once, for every outcome, when the response
///    body has ended or the client went away.
pub trait Policy: std::any::Any + Send + Sync {
    /// Stable name for logs and metrics.
    fn name(&self) -> &'static str;

    /// The hooks this policy implements; the others are never called.
    fn hooks(&self) -> Hooks;

    /// Before the method check, lifecycle and auth (CORS preflight, IP deny lists).
    fn pre_route<'a>(&'a self, _ctx: &'a mut RequestCtx, _req: &'a mut request::Parts) -> Step<'a> {
        Step::CONTINUE
    }

    /// The whole request body (up to the API's limit) before any request-headers hook,
    /// for a policy whose request means what its body says: an MCP endpoint's JSON-RPC
    /// message names the operation that auth, scopes and throttling must then see, so
    /// the policy rewrites the method, path and body here. Runs after `pre_route` and the
    /// method check. An API without such a policy pays one bit test.
    fn on_early_body<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
        _body: &'a mut Bytes,
    ) -> Step<'a> {
        Step::CONTINUE
    }

    /// Whether this request's body is read for [`on_early_body`](Policy::on_early_body)
    /// (an API's MCP endpoint, not its REST resources); asked only of policies that
    /// declare [`Hooks::EARLY_BODY`].
    fn wants_early_body(&self, _ctx: &RequestCtx, _req: &request::Parts) -> bool {
        true
    }

    /// After routing, before the body is read and the upstream is called.
    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        Step::CONTINUE
    }

    /// The whole request body (up to the API's limit). Replace `body` to rewrite it;
    /// the gateway sets `Content-Length` and drops `Transfer-Encoding` afterwards.
    fn on_request_body<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
        _body: &'a mut Bytes,
    ) -> Step<'a> {
        Step::CONTINUE
    }

    /// The response head (the upstream's, or an error's, or a `Respond`'s).
    fn on_response_headers(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        Ok(())
    }

    /// Whether this response's body must be buffered for
    /// [`on_response_body`](Policy::on_response_body), asked after the response headers
    /// hooks ran. A policy that rewrites only some responses (the SOAP pass-through turns
    /// the gateway's own errors into Faults) answers `false` for the others, and when no
    /// policy of the chain wants it the body streams through untouched.
    fn wants_response_body(&self, _ctx: &RequestCtx, _resp: &response::Parts) -> bool {
        true
    }

    /// The whole response body (up to the API's limit); framing is fixed up after.
    fn on_response_body(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
        _body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        Ok(())
    }

    /// A transformer this response's body passes through as it arrives, asked after the
    /// response headers hooks (and after `on_response_body`, if one ran) in reverse
    /// chain order, for the policies whose request side ran. Each chunk goes out as soon
    /// as the transformers let it: an LLM's Server-Sent Events translated between
    /// providers' shapes, a cache storing what it relays. `None` (the default): the body
    /// passes untouched. The gateway drops the response's `Content-Length` when a
    /// transformer is given, since it may change the length.
    fn response_stream(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &response::Parts,
    ) -> Option<Box<dyn ResponseStream>> {
        None
    }

    /// Once per request, whatever happened, after the last body byte went out (or the
    /// client went away). Must not block: queue work elsewhere.
    fn on_complete(&self, _ctx: &RequestCtx, _done: &Completion) {}

    /// Called only for a request the gateway upgrades to a WebSocket, once its request
    /// side ran (`ctx` holds the caller): a guard that checks each operation the client
    /// then sends over the socket (a GraphQL API's subscriptions). `None` (the default):
    /// the socket's bytes pass untouched. Never called on the HTTP path.
    fn upgrade_guard(&self, _ctx: &RequestCtx) -> Option<Box<dyn OperationGuard>> {
        None
    }
}

/// One response's body transformer (see [`Policy::response_stream`]): told each chunk
/// as it arrives, then the end. It lives as long as the response body, on the request's
/// task, so it needs no lock.
pub trait ResponseStream: Send + 'static {
    /// One chunk as it arrived: return it (pass), a rewrite, or empty bytes to hold it
    /// (e.g. until an event is whole). An `Err` ends the body there (the head is out: the
    /// client sees the stream cut, `on_complete` an upstream failure).
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError>;

    /// The upstream's body ended: what is still held, or a closing chunk of its own.
    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        Ok(None)
    }

    /// Called once when the body ended or was dropped (the client went away), before any
    /// policy's `on_complete` runs: leave what the stream learnt (an LLM answer's token
    /// usage) in the request's extensions (`ctx.ext`) for those who read it there.
    fn settle(&mut self, _ext: &mut http::Extensions) {}
}

/// Checks the operations sent over an upgraded connection (see
/// [`Policy::upgrade_guard`]), with what the upgrade request's context said about the
/// caller.
pub trait OperationGuard: Send + Sync + 'static {
    /// `payload`: one operation as JSON (`{"query", "operationName", "variables"}`, the
    /// shape of a GraphQL POST body). `Err`: the refusal, a JSON array of GraphQL errors
    /// (`[{"message", "extensions": {"code"}}]`), sent to the client instead of
    /// forwarding the operation.
    fn check_operation(&self, payload: &[u8]) -> Result<(), serde_json::Value>;
}

/// The body of a policy's own answer that arrives later, chunk by chunk (a multiplexed
/// MCP endpoint relaying a remote's events as they come). A policy answering with
/// `Flow::Respond` puts it in the response's extensions ([`StreamedAnswer`]); the
/// gateway sends the head at once and each chunk as it is ready. Polled on the
/// request's task.
pub trait AnswerBody: Send + 'static {
    /// The next chunk; `None` ends the body, an `Err` cuts it (the client sees the
    /// stream end early).
    fn poll_chunk(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Bytes, GatewayError>>>;

    /// Called once when the body ended or was dropped, before any policy's
    /// `on_complete` runs: as [`ResponseStream::settle`].
    fn settle(&mut self, _ext: &mut http::Extensions) {}
}

/// An [`AnswerBody`] in a `Flow::Respond` response's extensions (which hold only
/// `Clone + Sync` values: hence the shared slot, taken once by the gateway).
#[derive(Clone)]
pub struct StreamedAnswer(std::sync::Arc<std::sync::Mutex<Option<Box<dyn AnswerBody>>>>);

impl StreamedAnswer {
    /// `resp` answered with `body` (its own body, if any, is replaced).
    pub fn attach(resp: &mut Response<Bytes>, body: Box<dyn AnswerBody>) {
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(body)));
        resp.extensions_mut().insert(StreamedAnswer(slot));
    }

    /// The body, once (a poisoned slot still gives it: it is only ever moved out).
    pub fn take(self) -> Option<Box<dyn AnswerBody>> {
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.take()
    }
}
