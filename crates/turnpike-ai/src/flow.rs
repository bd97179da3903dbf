//! The request and answer paths of an AI API with guardrails or an answer cache (an
//! API with neither never comes here). A front call's body is parsed and checked
//! ([`Guard::request`]: size, `max_tokens`, patterns, PII masked), the external guard is
//! asked, the exact and then the semantic cache are looked up (a hit answers at once:
//! `X-Cache: HIT`, no provider call, no tokens charged), and the call goes on through
//! the policy's own routing and translation. On the way back a whole answer is checked
//! against its JSON schema, cached (`X-Cache: MISS`), and its placeholders are put back;
//! a streamed one is unmasked chunk by chunk (`unmask_stream.rs`) and never cached.

use std::sync::Arc;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{request, response, HeaderName, HeaderValue, Response};
use serde_json::{Map, Value};
use turnpike_policy::ai::TokenUsage;
use turnpike_policy::{ErrorKind, Flow, FromCache, GatewayError, HookResult, RequestCtx, Step};

use crate::cache::{self, AnswerCache, Key};
use crate::guard::{Guard, Guarded};
use crate::request::Front;

const X_CACHE: HeaderName = HeaderName::from_static("x-cache");

/// An AI API's guardrails and answer cache, compiled.
pub(crate) struct Extras {
    pub(crate) guard: Option<Guard>,
    pub(crate) cache: Option<AnswerCache>,
    pub(crate) api_id: Arc<str>,
}

/// What the policy does around this module: its own routing and translation, and its
/// refusals in the front's shape.
pub(crate) trait Proceed: Sync {
    fn proceed(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        body: &mut Bytes,
    ) -> HookResult;
    fn refuse(&self, ctx: &RequestCtx, e: GatewayError) -> Response<Bytes>;
    /// A cached answer in the shape the call's front answers in.
    fn reshape_hit(&self, ctx: &RequestCtx, body: Bytes) -> Bytes;
}

/// What the request side of a guarded or cached call leaves for its answer.
#[derive(Clone, Default)]
pub(crate) struct Pending {
    pub(crate) guarded: Guarded,
    /// The exact key the answer is stored under (a cacheable call).
    key: Option<Key>,
    /// The prompt's vector and scope, to index the answer semantically.
    vector: Option<(u64, Arc<[f32]>)>,
}

/// The checked request, before the asynchronous steps.
struct Checked {
    pending: Pending,
    texts: Vec<String>,
    consumer: String,
    model: String,
}

fn is_call(front: Front) -> bool {
    matches!(
        front,
        Front::Chat | Front::Responses | Front::Completions | Front::Messages | Front::Embeddings
    )
}

/// `on_request_body` of a guarded or cached API.
pub(crate) fn request<'a>(
    x: &'a Extras,
    p: &'a dyn Proceed,
    front: Front,
    ctx: &'a mut RequestCtx,
    req: &'a mut request::Parts,
    body: &'a mut Bytes,
) -> Step<'a> {
    if !is_call(front) {
        return Step::Done(p.proceed(ctx, req, body));
    }
    let checked = match check(x, front, ctx, body) {
        Ok(Some(c)) => c,
        // Not JSON: the policy's own parse says why.
        Ok(None) => return Step::Done(p.proceed(ctx, req, body)),
        Err(e) => return Step::Done(Ok(Flow::Respond(p.refuse(ctx, e)))),
    };
    let external = x.guard.as_ref().and_then(|g| g.external.as_ref());
    let semantic = x.cache.as_ref().and_then(|c| c.semantic.as_ref());
    if external.is_none() && (semantic.is_none() || front == Front::Embeddings) {
        return Step::Done(lookup(x, p, ctx, req, body, checked, None));
    }
    Step::Pending(Box::pin(async move {
        if let Some(guard) = external {
            if let Err(e) = guard
                .check(&x.api_id, Some(&checked.model), &checked.texts)
                .await
            {
                return Ok(Flow::Respond(p.refuse(ctx, e)));
            }
        }
        let cached = checked.pending.key.and_then(|k| x.cache.as_ref()?.get(&k));
        let mut vector = None;
        if let (None, Some(s), true) = (&cached, semantic, front != Front::Embeddings) {
            if checked.pending.key.is_some() {
                vector = s.embed(&checked.texts).await.map(|v| {
                    // The front too: a cached answer is in its front's shape.
                    let who = format!("{}\u{0}{front:?}", checked.consumer);
                    let scope = crate::semantic::scope(&who, &checked.model);
                    (scope, Arc::<[f32]>::from(v))
                });
            }
        }
        lookup(x, p, ctx, req, body, checked, vector)
    }))
}

/// Parses and checks a front call; `None` when the body is not a JSON object.
fn check(
    x: &Extras,
    front: Front,
    ctx: &RequestCtx,
    body: &mut Bytes,
) -> Result<Option<Checked>, GatewayError> {
    let Ok(Value::Object(mut parsed)) = serde_json::from_slice::<Value>(body) else {
        return Ok(None);
    };
    let (guarded, mut texts, masked) = match &x.guard {
        Some(g) => g.request(front, &mut parsed, body.len())?,
        None => Default::default(),
    };
    if masked {
        *body = Bytes::from(
            serde_json::to_vec(&parsed)
                .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?,
        );
    }
    let consumer = cache::consumer(ctx);
    let key = x
        .cache
        .as_ref()
        .filter(|_| cache::cacheable(front, &parsed))
        .map(|_| cache::key(&consumer, front, &parsed));
    if texts.is_empty() && x.cache.as_ref().is_some_and(|c| c.semantic.is_some()) {
        texts = crate::guard::texts(&parsed);
    }
    let model = parsed
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Some(Checked {
        pending: Pending {
            guarded,
            key,
            vector: None,
        },
        texts,
        consumer,
        model,
    }))
}

/// The exact (then semantic) lookup; a miss goes on to the provider.
fn lookup(
    x: &Extras,
    p: &dyn Proceed,
    ctx: &mut RequestCtx,
    req: &mut request::Parts,
    body: &mut Bytes,
    checked: Checked,
    vector: Option<(u64, Arc<[f32]>)>,
) -> HookResult {
    let mut pending = checked.pending;
    if let (Some(c), Some(k)) = (&x.cache, pending.key) {
        let similar = || {
            let (scope, v) = vector.as_ref()?;
            let (near, _) = c.semantic.as_ref()?.nearest(*scope, v)?;
            c.get(&near)
        };
        if let Some(entry) = c.get(&k).or_else(similar) {
            return Ok(Flow::Respond(hit(p, ctx, &pending.guarded, &entry)));
        }
    }
    pending.vector = vector;
    let r = p.proceed(ctx, req, body);
    if matches!(r, Ok(Flow::Continue)) && (pending.key.is_some() || !pending.guarded.is_empty()) {
        ctx.ext.insert(pending);
    }
    r
}

/// A cached answer, its placeholders put back with this request's values.
fn hit(
    p: &dyn Proceed,
    ctx: &mut RequestCtx,
    guarded: &Guarded,
    entry: &cache::Entry,
) -> Response<Bytes> {
    let body = match &guarded.masks {
        Some(m) => Bytes::from(m.unmask(&String::from_utf8_lossy(&entry.body))),
        None => entry.body.clone(),
    };
    let body = p.reshape_hit(ctx, body);
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(X_CACHE, HeaderValue::from_static("HIT"));
    ctx.ext.insert(FromCache);
    // No provider tokens: the budget's check never ran, and this usage charges nothing.
    ctx.ext.insert(TokenUsage {
        model: entry.model.clone(),
        provider: Some(entry.provider.clone()),
        ..TokenUsage::default()
    });
    resp
}

/// A whole 200 answer (already in the front's shape): schema, cache, unmask.
pub(crate) fn answer(
    x: &Extras,
    p: &dyn Proceed,
    ctx: &mut RequestCtx,
    answered_by: (Option<Arc<str>>, Arc<str>),
    resp: &mut response::Parts,
    body: &mut Bytes,
) {
    let Some(pending) = ctx.ext.get::<Pending>().cloned() else {
        return;
    };
    if pending.guarded.schema.is_some() {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Object(Map::new()));
        if let Err(e) = pending.guarded.check_answer(&v) {
            let refused = p.refuse(ctx, e);
            let (parts, b) = refused.into_parts();
            resp.status = parts.status;
            resp.headers = parts.headers;
            resp.extensions = parts.extensions;
            *body = b;
            return;
        }
    }
    if let (Some(c), Some(k)) = (&x.cache, pending.key) {
        let (model, provider) = answered_by;
        c.put(k, body.clone(), model, provider);
        if let (Some(s), Some((scope, v))) = (&c.semantic, pending.vector) {
            s.remember(scope, v, k);
        }
        resp.headers
            .insert(X_CACHE, HeaderValue::from_static("MISS"));
    }
    if let Some(m) = &pending.guarded.masks {
        *body = Bytes::from(m.unmask(&String::from_utf8_lossy(body)));
        resp.headers.remove(http::header::CONTENT_LENGTH);
    }
}
