//! [`AiPolicy`], the hooks of an AI API:
//!
//! - `pre_route`: names the front from the path (so even auth's 401 takes its shape)
//!   and reads an SDK's key header (`Authorization: Bearer`, Anthropic's `x-api-key`)
//!   as the API's key header;
//! - `on_request_body`: the body parsed once under caps, the caller's tier checked
//!   against its allowed models, the model routed to a target (`routing.rs`; the next
//!   ones are tried by [`AiPolicy::fall_back`], which the gateway calls when a try
//!   fails before any byte reached the client), the body translated when the provider speaks the other API, the
//!   client's credentials replaced by the provider's key, the token estimate left in
//!   `ctx.ext` (before the throttle's token check, which runs after this stage);
//! - `on_response_body`: a whole answer translated and its usage read; every error in
//!   the front's shape;
//! - `response_stream`: a streamed answer relayed or translated event by event
//!   (`stream.rs`).
//!
//! The policy's own refusals (a bad body, an unknown model) are answered in the front's
//! shape directly, since a policy's response side never sees its own refusal.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE};
use http::{request, response, HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};
use serde_json::{json, Map, Value};
use turnpike_model::ai::ProviderKind;
use turnpike_model::clock::Clock;
use turnpike_policy::ai::{ProviderChoice, TokenEstimate};
use turnpike_policy::{
    ErrorKind, Flow, GatewayError, HookResult, Hooks, Policy, RequestCtx, ResponseStream, Step,
};

use crate::errors;
use crate::flow::Proceed;
use crate::foreign::{Foreign, Sink, Source};
use crate::providers::{self, Provider, Wire};
use crate::request::{Front, Limits};
use crate::routing::{now_ms, Fallback, ProviderHealth, Route};
use crate::stream::{AiStream, Mode};
use crate::to_anthropic::StreamToOpenai;
use crate::usage;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const ANTHROPIC_VERSION: HeaderName = HeaderName::from_static("anthropic-version");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// How an SDK's own key header becomes the API's key header (see `kind.rs`).
pub(crate) struct ClientKey {
    pub(crate) header: HeaderName,
    pub(crate) bearer_jwts: bool,
    pub(crate) introspected: bool,
}

impl ClientKey {
    fn adopt(&self, headers: &mut HeaderMap) {
        if headers.contains_key(&self.header) {
            return;
        }
        if let Some(v) = headers.remove(X_API_KEY) {
            headers.insert(self.header.clone(), v);
            return;
        }
        let Some(token) = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::to_owned)
        else {
            return;
        };
        let token_like = self.introspected || token.bytes().filter(|b| *b == b'.').count() == 2;
        if self.bearer_jwts && token_like {
            return;
        }
        if let Ok(v) = HeaderValue::from_str(token.trim()) {
            headers.insert(self.header.clone(), v);
            headers.remove(AUTHORIZATION);
        }
    }
}

/// An AI API's policy, built by the `ai` kind.
pub struct AiPolicy {
    pub(crate) providers: Vec<Provider>,
    pub(crate) routes: HashMap<String, Route>,
    pub(crate) default_max_tokens: u64,
    pub(crate) limits: Limits,
    pub(crate) passthrough: bool,
    pub(crate) client_key: Option<ClientKey>,
    pub(crate) fallback: Fallback,
    pub(crate) clock: Arc<dyn Clock>,
    /// The models a subscription tier may call, for the tiers that list some.
    pub(crate) tier_models: HashMap<String, HashSet<String>>,
    /// How many endpoints the API has (its providers' URLs).
    pub(crate) endpoints: usize,
    /// Guardrails and the answer cache (`flow.rs`); none: the plain path.
    pub(crate) extras: Option<Box<crate::flow::Extras>>,
}

/// What the request side learnt, for the response side.
#[derive(Clone)]
struct Call {
    front: Front,
    /// The provider a front call went to (none: pass-through, `/models`, refused).
    provider: Option<usize>,
    model: Option<Arc<str>>,
    stream: bool,
    /// The client asked for OpenAI's usage chunk (`stream_options.include_usage`); the
    /// gateway always asks an OpenAI provider for it, reads it, and leaves it out of
    /// what the client gets unless asked.
    usage_chunk: bool,
    /// A call that may go to another target when this one fails.
    tries: Option<Box<Tries>>,
    /// A `/responses` call: the request fields its Response repeats.
    responses: Option<Arc<Map<String, Value>>>,
    /// An embeddings call asking for base64 vectors (for a provider translated).
    base64: bool,
}

/// Where a call that may fall back is in its route.
#[derive(Clone)]
struct Tries {
    /// The model the client asked for (its route).
    asked: Box<str>,
    /// The client's body, translated again for each target.
    original: Bytes,
    /// The target tried first, and how far past it the call is.
    first: usize,
    k: usize,
    /// Further tries of the current target.
    same_left: u32,
    /// Tries that failed.
    failed: u32,
}

/// The target a call goes to first.
struct Picked {
    provider: usize,
    model: Arc<str>,
    /// Where it is in its route, when the call may fall back.
    first: usize,
    k: usize,
    may_fall_back: bool,
}

impl AiPolicy {
    /// The target a call of the model a client asked for goes to first: the weighted
    /// choice, or the next one in order while that one's provider is suspended.
    fn route(&self, asked: &str) -> Result<Picked, GatewayError> {
        let retries = self.fallback.retries > 0;
        let Some(r) = self.routes.get(asked) else {
            if self.routes.is_empty() {
                return Ok(Picked::only(0, asked.into(), retries));
            }
            let mut e = GatewayError::new(ErrorKind::NotFound);
            e.detail = Some(format!("the model {asked:?} is not served by this API").into());
            return Err(e);
        };
        if let [t] = &*r.targets {
            return Ok(Picked::only(t.provider, t.model.clone(), retries));
        }
        let (first, now) = (r.first(), now_ms(&*self.clock));
        let admitted = (0..r.targets.len())
            .filter_map(|k| r.nth(first, k).map(|i| (k, &r.targets[i])))
            .find(|(_, t)| {
                self.provider(t.provider)
                    .is_some_and(|p| p.health.admits(now))
            });
        let Some((k, t)) = admitted else {
            let mut e = GatewayError::new(ErrorKind::EndpointsSuspended);
            e.detail = Some(format!("every provider of the model {asked:?} is suspended").into());
            return Err(e);
        };
        Ok(Picked {
            provider: t.provider,
            model: t.model.clone(),
            first,
            k,
            may_fall_back: true,
        })
    }

    fn provider(&self, i: usize) -> Option<&Provider> {
        self.providers.get(i)
    }

    /// A caller whose tier lists models may call those only.
    fn allowed(&self, ctx: &RequestCtx, asked: &str) -> Result<(), GatewayError> {
        if self.tier_models.is_empty() {
            return Ok(());
        }
        let listed = ctx
            .subscription_tier()
            .and_then(|t| self.tier_models.get(t));
        match listed {
            Some(models) if !models.contains(asked) => {
                let mut e = GatewayError::new(ErrorKind::ModelNotAllowed);
                e.detail = Some(
                    format!("your subscription's tier does not allow the model {asked:?}").into(),
                );
                Err(e)
            }
            _ => Ok(()),
        }
    }

    /// `GET /models`: the model names clients may ask for, in OpenAI's list shape.
    fn models(&self) -> Response<Bytes> {
        let mut names: Vec<(&String, &Route)> = self.routes.iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        let data: Vec<Value> = names
            .into_iter()
            .map(|(name, r)| {
                let first = r.targets.first().and_then(|t| self.provider(t.provider));
                let owner = first.map_or("", |p| &*p.name);
                json!({"id": name, "object": "model", "created": 0, "owned_by": owner})
            })
            .collect();
        let body = serde_json::to_vec(&json!({"object": "list", "data": data})).unwrap_or_default();
        let mut resp = Response::new(Bytes::from(body));
        resp.headers_mut().insert(CONTENT_TYPE, JSON);
        resp
    }

    /// The client's credentials out, the provider's key in; an identity encoding, so
    /// the answer can be read.
    fn provider_headers(&self, p: &Provider, headers: &mut HeaderMap) {
        headers.remove(AUTHORIZATION);
        for h in providers::KEY_HEADERS {
            headers.remove(h);
        }
        if let Some(k) = &self.client_key {
            headers.remove(&k.header);
        }
        headers.remove(ACCEPT_ENCODING);
        if let Some(a) = &p.auth {
            headers.insert(providers::key_header(p.kind).0, a.clone());
        }
        if p.kind == ProviderKind::Anthropic && !headers.contains_key(ANTHROPIC_VERSION) {
            headers.insert(ANTHROPIC_VERSION, HeaderValue::from_static("2023-06-01"));
        }
        if p.kind != ProviderKind::Anthropic {
            headers.remove(ANTHROPIC_VERSION);
        }
    }

    /// A front call: parse, route, translate, re-key, estimate.
    fn front_call(
        &self,
        front: Front,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        if req.method != Method::POST {
            let mut e = GatewayError::new(ErrorKind::MethodNotAllowed)
                .with_header(http::header::ALLOW, HeaderValue::from_static("POST"));
            e.detail = Some("this front takes POST".into());
            return Err(e);
        }
        let parsed = crate::request::parse(body, &self.limits).map_err(providers::bad_request)?;
        let asked = crate::request::model(&parsed).map_err(providers::bad_request)?;
        self.allowed(ctx, asked)?;
        let picked = self.route(asked)?;
        let (index, model) = (picked.provider, picked.model.clone());
        let provider = self
            .providers
            .get(index)
            .ok_or_else(|| GatewayError::new(ErrorKind::Internal))?;
        let tries = picked.may_fall_back.then(|| {
            Box::new(Tries {
                asked: asked.into(),
                original: body.clone(),
                first: picked.first,
                k: picked.k,
                same_left: self.fallback.retries,
                failed: 0,
            })
        });
        if self.endpoints > 1 || tries.is_some() {
            ctx.ext.insert(ProviderChoice {
                endpoint: provider.endpoint,
                may_fall_back: tries.is_some(),
            });
        }
        let stream = parsed.get("stream").and_then(Value::as_bool) == Some(true);
        let asked_usage = parsed
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true);
        let sent = front.sent_as();
        let estimate = estimate(sent, &parsed, body.len(), self.default_max_tokens);
        *body = self.to_provider(provider, sent, (&parsed, &*body), &model, stream, ctx, req)?;
        ctx.ext.insert(estimate);
        ctx.ext.insert(Call {
            front,
            provider: Some(index),
            model: Some(model),
            stream,
            usage_chunk: asked_usage,
            tries,
            responses: ctx.ext.get::<Call>().and_then(|c| c.responses.clone()),
            base64: crate::embed::wants_base64(&parsed),
        });
        Ok(())
    }

    /// The request for `p`: the body in its API's shape (`original`, the client's
    /// bytes, when it already is), its path and query, its key (and signature); the
    /// first try's and each fallback's.
    #[allow(clippy::too_many_arguments)]
    fn to_provider(
        &self,
        p: &Provider,
        front: Front,
        (parsed, original): (&Map<String, Value>, &Bytes),
        model: &str,
        stream: bool,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
    ) -> Result<Bytes, GatewayError> {
        let internal = |e| GatewayError::with_source(ErrorKind::Internal, e);
        let (out, path, query) =
            providers::call(p, front, parsed, model, stream, self.default_max_tokens)?;
        ctx.upstream.set_path(&path).map_err(internal)?;
        if query.is_some() {
            ctx.upstream.set_query(query.as_deref()).map_err(internal)?;
        }
        let body = match out {
            Some(out) => Bytes::from(
                serde_json::to_vec(&out)
                    .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?,
            ),
            None => original.clone(),
        };
        self.provider_headers(p, &mut req.headers);
        req.headers.insert(CONTENT_TYPE, JSON);
        providers::sign(p, "POST", &path, query.as_deref(), &body, &mut req.headers);
        Ok(body)
    }

    fn request_body(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> HookResult {
        let front = ctx.ext.get::<Call>().map_or(Front::Other, |c| c.front);
        match front {
            Front::Models => Ok(Flow::Respond(self.models())),
            Front::Other if self.passthrough => {
                if let Some(p) = self.providers.first() {
                    self.provider_headers(p, &mut req.headers);
                    // Bedrock's own API (InvokeModel, ...) signed as it goes.
                    let (path, query) = (ctx.upstream.path(), ctx.upstream.query());
                    providers::sign(p, req.method.as_str(), path, query, body, &mut req.headers);
                    if self.endpoints > 1 {
                        ctx.ext.insert(ProviderChoice {
                            endpoint: p.endpoint,
                            may_fall_back: false,
                        });
                    }
                }
                Ok(Flow::Continue)
            }
            Front::Other => {
                let mut e = GatewayError::new(ErrorKind::NotFound);
                e.detail = Some("not an AI front: /chat/completions, /completions, /embeddings, /models, /responses or /messages".into());
                Err(e)
            }
            _ => self
                .front_call(front, ctx, req, body)
                .map(|()| Flow::Continue),
        }
    }

    /// The next try of a call whose try failed before any byte reached the client (a
    /// 429 or 5xx answer, a refused connection, a timeout: the gateway's judgement,
    /// [`crate::falls_back_on`]): counts the failure against the provider, picks the
    /// same target again while retries are left, else the route's next target whose
    /// provider is not suspended, and prepares the request for it (translated for its
    /// provider's API, its key). The endpoint and body to send, or None when the call
    /// has no try left: the failure is the answer.
    pub fn fall_back(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
    ) -> Option<(usize, Bytes)> {
        let call = ctx.ext.get_mut::<Call>()?;
        let (index, model) = self.next_target(call)?;
        let (original, front) = (call.tries.as_ref()?.original.clone(), call.front.sent_as());
        let stream = call.stream;
        let p = self.provider(index)?;
        let parsed = crate::request::parse(&original, &self.limits).ok()?;
        let body = self
            .to_provider(p, front, (&parsed, &original), &model, stream, ctx, req)
            .ok()?;
        if let Some(call) = ctx.ext.get_mut::<Call>() {
            call.provider = Some(index);
            call.model = Some(model);
        }
        ctx.ext.insert(ProviderChoice {
            endpoint: p.endpoint,
            may_fall_back: true,
        });
        Some((p.endpoint, body))
    }

    /// Counts the failed try against its provider and moves the call to its next
    /// target: the same one while retries are left, else the route's next one whose
    /// provider is not suspended. None when the call has no try left.
    fn next_target(&self, call: &mut Call) -> Option<(usize, Arc<str>)> {
        let now = now_ms(&*self.clock);
        let tries = call.tries.as_deref_mut()?;
        self.provider(call.provider?)?
            .health
            .failed(&self.fallback, now);
        tries.failed += 1;
        let route = self.routes.get(&*tries.asked);
        let targets = route.map_or(1, |r| r.targets.len());
        if tries.failed >= self.fallback.attempts(targets) {
            return None;
        }
        if tries.same_left > 0 {
            tries.same_left -= 1;
            return Some((call.provider?, call.model.clone()?));
        }
        let r = route?;
        let t = loop {
            tries.k += 1;
            let t = &r.targets[r.nth(tries.first, tries.k)?];
            if self.provider(t.provider)?.health.admits(now) {
                break t;
            }
        };
        tries.same_left = self.fallback.retries;
        Some((t.provider, t.model.clone()))
    }

    /// The call's try was answered (not a failure [`AiPolicy::fall_back`] takes): its
    /// provider's failures in a row start again from 0.
    pub fn answered(&self, ctx: &RequestCtx) {
        let provider = ctx.ext.get::<Call>().and_then(|c| c.provider);
        if let Some(p) = provider.and_then(|i| self.provider(i)) {
            p.health.succeeded();
        }
    }

    /// Each provider's name and health (for `/metrics`).
    pub fn provider_health(&self) -> impl Iterator<Item = (&str, &ProviderHealth)> {
        self.providers.iter().map(|p| (&*p.name, &*p.health))
    }

    /// The current time as the providers' suspensions read it.
    pub fn now_ms(&self) -> u64 {
        now_ms(&*self.clock)
    }

    /// A whole answer: usage read, translated when the provider spoke the other API.
    fn answer(&self, ctx: &mut RequestCtx, call: &Call, body: &mut Bytes) {
        let Some(p) = call.provider.and_then(|i| self.providers.get(i)) else {
            return;
        };
        let asked = crate::answer::Asked {
            front: call.front,
            kind: p.kind,
            model: call.model.as_deref().unwrap_or(""),
            base64: call.base64,
            estimate: ctx.ext.get::<TokenEstimate>().map_or(0, |e| e.prompt),
        };
        let (counts, translated) = crate::answer::read(&asked, body);
        if let Some(out) = translated.and_then(|o| serde_json::to_vec(&o).ok()) {
            *body = Bytes::from(out);
        }
        if let Some(c) = counts {
            ctx.ext.insert(usage::token_usage(
                c,
                call.model.clone(),
                p.name.clone(),
                false,
            ));
        }
    }
}

impl Picked {
    /// A route's one target (or no route): falls back only to itself, when the API
    /// retries.
    fn only(provider: usize, model: Arc<str>, retries: bool) -> Picked {
        Picked {
            provider,
            model,
            first: 0,
            k: 0,
            may_fall_back: retries,
        }
    }
}

impl crate::flow::Proceed for AiPolicy {
    /// The request body hook's outcome, the policy's own refusals in the front's shape.
    fn proceed(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> HookResult {
        self.request_body(ctx, req, body)
            .or_else(|e| Ok(Flow::Respond(self.refuse(ctx, e))))
    }

    /// Our own refusal: the chain would show it to the policies before this one only,
    /// so it leaves in the front's shape from here (its kind in the response's
    /// extensions, for the analytics reason).
    fn refuse(&self, ctx: &RequestCtx, e: GatewayError) -> Response<Bytes> {
        let anthropic = ctx
            .ext
            .get::<Call>()
            .is_some_and(|c| c.front.is_anthropic());
        let kind = e.kind;
        let resp = e.into_response(&ctx.request_id);
        let (mut parts, b) = resp.into_parts();
        let b = errors::reshape(anthropic, parts.status, &b).map_or(b, Bytes::from);
        parts.headers.insert(CONTENT_TYPE, JSON);
        parts.headers.remove(http::header::CONTENT_LENGTH);
        parts.extensions.insert(kind);
        Response::from_parts(parts, b)
    }

    /// A cached answer (stored in the chat shape) in a `/responses` call's shape.
    fn reshape_hit(&self, ctx: &RequestCtx, body: Bytes) -> Bytes {
        match ctx.ext.get::<Call>().and_then(|c| c.responses.as_ref()) {
            Some(echoed) => crate::responses::answer(&body, echoed),
            None => body,
        }
    }
}

/// A `/responses` call's body put in the chat shape (`responses.rs`), the fields its
/// Response repeats kept in its [`Call`].
fn responses_in(
    ctx: &mut RequestCtx,
    body: &mut Bytes,
    limits: &Limits,
) -> Result<(), GatewayError> {
    let parsed = crate::request::parse(body, limits).map_err(providers::bad_request)?;
    let chat = crate::responses::request(&parsed).map_err(providers::bad_request)?;
    let bytes =
        serde_json::to_vec(&chat).map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?;
    *body = Bytes::from(bytes);
    if let Some(call) = ctx.ext.get_mut::<Call>() {
        call.responses = Some(Arc::new(crate::responses::echoed(&parsed)));
    }
    Ok(())
}

/// What a call may cost before it is sent: the prompt at 4 bytes a token of the
/// request's JSON (cheap, and a little over; the provider's usage replaces it once the
/// answer says it) and the completion cap it asked for (none for embeddings).
fn estimate(
    front: Front,
    parsed: &Map<String, Value>,
    bytes: usize,
    default_max: u64,
) -> TokenEstimate {
    // The completion the client asked to be capped at; without a cap nothing is held
    // for it (holding the API's default cap would refuse every uncapped call under a
    // budget smaller than that cap): the real usage is charged when the answer ends.
    let max_completion = match front {
        Front::Embeddings => 0,
        _ => ["max_completion_tokens", "max_tokens"]
            .iter()
            .find_map(|k| parsed.get(*k).and_then(Value::as_u64))
            .unwrap_or(0)
            .min(default_max),
    };
    TokenEstimate {
        prompt: bytes as u64 / 4,
        max_completion,
    }
}

impl Policy for AiPolicy {
    fn name(&self) -> &'static str {
        "ai"
    }

    fn hooks(&self) -> Hooks {
        Hooks::PRE_ROUTE
            | Hooks::REQUEST_BODY
            | Hooks::RESPONSE_HEADERS
            | Hooks::RESPONSE_BODY
            | Hooks::RESPONSE_STREAM
    }

    fn pre_route<'a>(&'a self, ctx: &'a mut RequestCtx, req: &'a mut request::Parts) -> Step<'a> {
        let front = Front::of(ctx.upstream.path());
        ctx.ext.insert(Call {
            front,
            provider: None,
            model: None,
            stream: false,
            usage_chunk: false,
            tries: None,
            responses: None,
            base64: false,
        });
        if let Some(k) = &self.client_key {
            k.adopt(&mut req.headers);
        }
        Step::CONTINUE
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let front = ctx.ext.get::<Call>().map_or(Front::Other, |c| c.front);
        if front == Front::Responses {
            if let Err(e) = responses_in(ctx, body, &self.limits) {
                return Step::Done(Ok(Flow::Respond(self.refuse(ctx, e))));
            }
        }
        if let Some(x) = &self.extras {
            return crate::flow::request(x, self, front, ctx, req, body);
        }
        Step::Done(self.proceed(ctx, req, body))
    }

    /// Bedrock streams AWS event-stream frames: the client gets Server-Sent Events, so
    /// the head says so before the gateway decides to stream the body.
    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        let Some(call) = ctx.ext.get::<Call>() else {
            return Ok(());
        };
        let bedrock = call
            .provider
            .and_then(|i| self.providers.get(i))
            .is_some_and(|p| p.kind == ProviderKind::Bedrock);
        if bedrock && call.stream && resp.status.is_success() {
            resp.headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            );
        }
        Ok(())
    }

    fn wants_response_body(&self, ctx: &RequestCtx, resp: &response::Parts) -> bool {
        let Some(call) = ctx.ext.get::<Call>() else {
            return false;
        };
        resp.status.as_u16() >= 400 || (call.provider.is_some() && !call.stream)
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        let Some(call) = ctx.ext.get::<Call>().cloned() else {
            return Ok(());
        };
        if resp.status.as_u16() >= 400 {
            if let Some(b) = errors::reshape(call.front.is_anthropic(), resp.status, body) {
                *body = Bytes::from(b);
                resp.headers.insert(CONTENT_TYPE, JSON);
            }
            return Ok(());
        }
        if resp.status == StatusCode::OK {
            self.answer(ctx, &call, body);
            if let Some(x) = &self.extras {
                let provider = call.provider.and_then(|i| self.providers.get(i));
                let provider = provider.map_or_else(|| Arc::from(""), |p| p.name.clone());
                let by = (call.model.clone(), provider);
                crate::flow::answer(x, self, ctx, by, resp, body);
            }
            if let Some(echoed) = &call.responses {
                *body = crate::responses::answer(body, echoed);
            }
        }
        Ok(())
    }

    fn response_stream(
        &self,
        ctx: &mut RequestCtx,
        resp: &response::Parts,
    ) -> Option<Box<dyn ResponseStream>> {
        let call = ctx.ext.get::<Call>()?;
        if !call.stream
            || !resp.status.is_success()
            || !turnpike_policy::http::is_stream(&resp.headers)
        {
            return None;
        }
        let p = self.providers.get(call.provider?)?;
        let mode = match (call.front.is_anthropic(), providers::wire(p.kind)) {
            (false, Wire::Openai) => Mode::ObserveOpenai {
                strip_usage: !call.usage_chunk,
            },
            (true, Wire::Anthropic) => Mode::ObserveAnthropic,
            (false, Wire::Anthropic) => {
                Mode::ToOpenai(Box::new(StreamToOpenai::new(call.usage_chunk)))
            }
            (true, Wire::Openai) => Mode::ToAnthropic(Box::default()),
            (anthropic, wire) => Mode::Foreign(Box::new(foreign_stream(call, anthropic, wire))),
        };
        let estimate = ctx.ext.get::<TokenEstimate>().copied().unwrap_or_default();
        let anthropic = call.front.is_anthropic();
        let stream = Box::new(AiStream::new(
            mode,
            estimate,
            call.model.clone(),
            p.name.clone(),
        ));
        let echoed = call.responses.clone();
        let masks = ctx.ext.get::<crate::flow::Pending>();
        let stream: Box<dyn ResponseStream> = match masks.and_then(|m| m.guarded.masks.clone()) {
            Some(m) => Box::new(crate::unmask_stream::UnmaskStream::new(
                stream, m, anthropic,
            )),
            None => stream,
        };
        Some(match echoed {
            Some(e) => Box::new(crate::responses_stream::ResponsesStream::new(stream, e)),
            None => stream,
        })
    }
}

/// The stream of a provider that speaks neither front's API.
fn foreign_stream(call: &Call, anthropic: bool, wire: Wire) -> Foreign {
    let model = call.model.as_deref().unwrap_or("");
    let source = match wire {
        Wire::Gemini => Source::Gemini(
            crate::sse::Events::default(),
            Box::new(crate::gemini::Stream::new(model)),
        ),
        _ => Source::Bedrock(
            crate::eventstream::Frames::default(),
            Box::new(crate::bedrock::Stream::new(model)),
        ),
    };
    let sink = if anthropic {
        Sink::Anthropic(Box::default())
    } else {
        Sink::Openai {
            usage_chunk: call.usage_chunk,
        }
    };
    Foreign::new(source, sink)
}
