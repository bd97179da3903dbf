//! An API's ordered policies and the order they run in: request hooks front to back
//! until one answers ([`Stop`]), response hooks back to front over the policies whose
//! request side ran, `on_complete` once over all. A chain with no policy for a phase
//! costs one bit test there.

use std::sync::Arc;

use bytes::Bytes;
use http::{request, response, Response};

use crate::ctx::{Completion, RequestCtx};
use crate::error::GatewayError;
use crate::hook::{Flow, Hooks, Policy, ResponseStream, Step};

/// A hook's [`Step`], waited for in place: a `Done` answer is taken without going
/// through [`Step::resolve`]'s future (which copied the answer, a few hundred bytes,
/// into its state and out again: ~0.2k instructions per request, bench/RESULTS.md,
/// session 21).
macro_rules! step {
    ($step:expr) => {
        match $step {
            Step::Done(r) => r,
            Step::Pending(f) => f.await,
        }
    };
}

/// Why the request side stopped early: policy `at` answered.
pub struct Stop {
    /// The index of the policy that answered; response hooks run for those before it.
    pub at: usize,
    pub answer: Answer,
}

/// A policy's early answer.
pub enum Answer {
    /// Boxed: a refusal path, and it keeps `Stop` small.
    Respond(Box<Response<Bytes>>),
    Error(GatewayError),
}

/// An ordered list of policies, shared by every request of a snapshot.
#[derive(Clone, Default)]
pub struct Chain {
    policies: Arc<[Arc<dyn Policy>]>,
    hooks: Hooks,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.policies.iter().map(|p| p.name()))
            .finish()
    }
}

impl Chain {
    pub fn new(policies: Vec<Arc<dyn Policy>>) -> Self {
        let hooks = policies.iter().fold(Hooks::NONE, |h, p| h.union(p.hooks()));
        Chain {
            policies: policies.into(),
            hooks,
        }
    }

    /// This chain with `p` added at the end (for embedders and tests that add a policy
    /// kind of their own to a compiled API; files and control planes use `policies:`).
    pub fn appended(&self, p: Arc<dyn Policy>) -> Chain {
        let mut v: Vec<Arc<dyn Policy>> = self.policies.to_vec();
        v.push(p);
        Chain::new(v)
    }

    /// This chain with `p` added at the front (a test's stand-in for a kind whose
    /// request-body hook must run before the compiled ones', e.g. the AI kind's token
    /// estimate before the token budget).
    pub fn prepended(&self, p: Arc<dyn Policy>) -> Chain {
        let mut v: Vec<Arc<dyn Policy>> = Vec::with_capacity(self.policies.len() + 1);
        v.push(p);
        v.extend(self.policies.iter().cloned());
        Chain::new(v)
    }

    /// How many policies the chain has.
    #[inline]
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// The union of the policies' hooks.
    #[inline]
    pub fn hooks(&self) -> Hooks {
        self.hooks
    }

    /// The first guard a policy gives for a WebSocket upgraded after `ctx`'s request
    /// side ran (see [`Policy::upgrade_guard`]); asked only on the upgrade path.
    pub fn upgrade_guard(&self, ctx: &RequestCtx) -> Option<Box<dyn crate::OperationGuard>> {
        self.policies.iter().find_map(|p| p.upgrade_guard(ctx))
    }

    /// The policies' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.policies.iter().map(|p| p.name())
    }

    /// The first policy of type `T` (tests and tools that read a compiled kind's data;
    /// never called per request).
    pub fn find<T: Policy>(&self) -> Option<&T> {
        self.policies
            .iter()
            .find_map(|p| (&**p as &dyn std::any::Any).downcast_ref::<T>())
    }

    /// Runs `pre_route` front to back.
    pub async fn pre_route(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
    ) -> Result<(), Stop> {
        if !self.hooks.contains(Hooks::PRE_ROUTE) {
            return Ok(());
        }
        for (at, p) in self.policies.iter().enumerate() {
            if p.hooks().contains(Hooks::PRE_ROUTE) {
                stop_at(at, p.pre_route(ctx, req).resolve().await)?;
            }
        }
        Ok(())
    }

    /// Whether some policy reads this request's body before the request-headers hooks
    /// (see [`Policy::wants_early_body`]).
    #[inline]
    pub fn wants_early_body(&self, ctx: &RequestCtx, req: &request::Parts) -> bool {
        self.hooks.contains(Hooks::EARLY_BODY)
            && self
                .policies
                .iter()
                .any(|p| p.hooks().contains(Hooks::EARLY_BODY) && p.wants_early_body(ctx, req))
    }

    /// Runs `on_early_body` front to back over the body read before the request-headers
    /// hooks (asked only when the chain's hooks contain [`Hooks::EARLY_BODY`]).
    pub async fn early_body(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> Result<(), Stop> {
        for (at, p) in self.policies.iter().enumerate() {
            if p.hooks().contains(Hooks::EARLY_BODY) {
                stop_at(at, step!(p.on_early_body(ctx, req, body)))?;
            }
        }
        Ok(())
    }

    /// Runs `on_request_headers` front to back.
    pub async fn request_headers(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
    ) -> Result<(), Stop> {
        if !self.hooks.contains(Hooks::REQUEST_HEADERS) {
            return Ok(());
        }
        for (at, p) in self.policies.iter().enumerate() {
            if p.hooks().contains(Hooks::REQUEST_HEADERS) {
                stop_at(at, step!(p.on_request_headers(ctx, req)))?;
            }
        }
        Ok(())
    }

    /// Runs `on_request_body` front to back over the buffered body.
    pub async fn request_body(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> Result<(), Stop> {
        for (at, p) in self.policies.iter().enumerate() {
            if p.hooks().contains(Hooks::REQUEST_BODY) {
                stop_at(at, step!(p.on_request_body(ctx, req, body)))?;
            }
        }
        Ok(())
    }

    /// Runs `on_response_headers` back to front over the policies before `upto` (the
    /// chain's length when every request hook ran). On an error, returns it with the
    /// index of the policy that raised it: the caller turns it into the response and
    /// calls again with that index, so the outer policies still see the response.
    pub fn response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        upto: usize,
    ) -> Result<(), (usize, GatewayError)> {
        if !self.hooks.contains(Hooks::RESPONSE_HEADERS) {
            return Ok(());
        }
        let ran = self.policies.get(..upto).unwrap_or(&self.policies);
        for (at, p) in ran.iter().enumerate().rev() {
            if p.hooks().contains(Hooks::RESPONSE_HEADERS) {
                p.on_response_headers(ctx, resp).map_err(|e| (at, e))?;
            }
        }
        Ok(())
    }

    /// Whether some policy before `upto` wants this response's body buffered (see
    /// [`Policy::wants_response_body`]). Never a stream ([`crate::http::is_stream`]:
    /// Server-Sent Events, gRPC): its events pass one by one, whatever the policies.
    #[inline]
    pub fn wants_response_body(
        &self,
        ctx: &RequestCtx,
        resp: &response::Parts,
        upto: usize,
    ) -> bool {
        if !self.hooks.contains(Hooks::RESPONSE_BODY) {
            return false;
        }
        // The policies first: most answers are wanted by none (a cache's unstorable
        // miss), and then the media type is never looked up.
        let ran = self.policies.get(..upto).unwrap_or(&self.policies);
        ran.iter()
            .any(|p| p.hooks().contains(Hooks::RESPONSE_BODY) && p.wants_response_body(ctx, resp))
            && !crate::http::is_stream(&resp.headers)
    }

    /// Runs `on_response_body` back to front over the policies before `upto`; errors
    /// as [`Chain::response_headers`].
    pub fn response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
        upto: usize,
    ) -> Result<(), (usize, GatewayError)> {
        let ran = self.policies.get(..upto).unwrap_or(&self.policies);
        for (at, p) in ran.iter().enumerate().rev() {
            if p.hooks().contains(Hooks::RESPONSE_BODY) {
                p.on_response_body(ctx, resp, body).map_err(|e| (at, e))?;
            }
        }
        Ok(())
    }

    /// The body transformers of the policies before `upto` that want this response
    /// streamed through them (see [`Policy::response_stream`]), back to front: the order
    /// each chunk passes them. Empty (no allocation) when no policy declares the hook.
    pub fn response_streams(
        &self,
        ctx: &mut RequestCtx,
        resp: &response::Parts,
        upto: usize,
    ) -> Vec<Box<dyn ResponseStream>> {
        if !self.hooks.contains(Hooks::RESPONSE_STREAM) {
            return Vec::new();
        }
        let ran = self.policies.get(..upto).unwrap_or(&self.policies);
        ran.iter()
            .rev()
            .filter(|p| p.hooks().contains(Hooks::RESPONSE_STREAM))
            .filter_map(|p| p.response_stream(ctx, resp))
            .collect()
    }

    /// Runs `on_complete` back to front over every policy that has it.
    pub fn complete(&self, ctx: &RequestCtx, done: &Completion) {
        if !self.hooks.contains(Hooks::COMPLETE) {
            return;
        }
        for p in self.policies.iter().rev() {
            if p.hooks().contains(Hooks::COMPLETE) {
                p.on_complete(ctx, done);
            }
        }
    }
}

#[inline]
fn stop_at(at: usize, r: Result<Flow, GatewayError>) -> Result<(), Stop> {
    match r {
        Ok(Flow::Continue) => Ok(()),
        Ok(Flow::Respond(resp)) => Err(Stop {
            at,
            answer: Answer::Respond(Box::new(resp)),
        }),
        Err(e) => Err(Stop {
            at,
            answer: Answer::Error(e),
        }),
    }
}
