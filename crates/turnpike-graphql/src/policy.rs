//! The GraphQL policy of a GRAPHQL API (runs after auth and throttling, on the request
//! body): reads the GraphQL request (POST JSON, POST `application/graphql`, GET),
//! validates and analyses the query against the API's schema (cached), then holds it to
//! per-operation scopes, the caller's tier (max depth, max complexity, field access, cost
//! quota) and the caller's application's field access. Every refusal is answered with a
//! GraphQL `{"errors": [...]}` body (with locations) and never forwarded: 400 for a bad or
//! too costly query, 403 for a field, scope or introspection refusal, 405 for a mutation
//! over GET, 429 with RateLimit headers when the cost quota is spent or when a called
//! operation's throttling policy is over its limit (`throttle.rs`). A request with an
//! `x-graphql-explain` header is answered with the explain document instead of being
//! forwarded. On a secured API, a request without a credential (marked `Anonymous` by
//! the auth step) may call only the operations declared `auth: none` (401 otherwise).
//! The same checks hold each operation sent over a WebSocket of the API (subscriptions):
//! [`Policy::upgrade_guard`] gives the gateway a guard carrying the upgrade's caller.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{request, HeaderValue, Method, Response, StatusCode};
use turnpike_model::graphql::GraphqlSpec;
use turnpike_policy::{
    Anonymous, Authenticated, BuildCx, Flow, Hooks, OperationGuard, Policy, PolicyKind, Problem,
    RequestCtx, Stage, Step,
};

use crate::analysis::OperationKind;
use crate::analysis::RootField;
use crate::analyzer::AnalysisCache;
use crate::config::Limits;
use crate::error::{errors_body, ErrorCode, GraphqlError};
use crate::quota::CostQuotas;
use crate::request::GraphqlRequest;
use crate::spec::{CompiledGraphql, CostQuota};
use crate::throttle::{OperationThrottle, ThrottledBy};

/// Request header asking for the explain document instead of the upstream's answer.
pub const EXPLAIN_HEADER: &str = "x-graphql-explain";

/// The policy: one per GraphQL API per snapshot.
pub struct GraphqlPolicy {
    inner: Arc<Inner>,
}

struct Inner {
    g: CompiledGraphql,
    quotas: Arc<CostQuotas>,
    /// Prefix of this API's quota keys.
    api: Box<str>,
    /// The operations' throttling policies; `None` when no operation has one.
    throttle: Option<OperationThrottle>,
}

/// Who is calling, as the request's context (or an upgrade request's) says.
struct Caller<'a> {
    anonymous: bool,
    auth: Option<&'a Authenticated>,
    client: IpAddr,
}

/// Why an operation is not forwarded.
enum Refused {
    Errors(StatusCode, Vec<GraphqlError>),
    /// The cost quota is spent: the error, the quota and the seconds until its reset.
    Quota(GraphqlError, CostQuota, u64),
    /// A called operation's throttling policy is over its limit: the 429 (`throttle.rs`).
    Throttled(Box<Response<Bytes>>),
}

/// Debits the called operations' throttling counters: the 429 when one is over.
type OperationCheck<'a> = &'a dyn Fn(&[RootField], &str) -> Option<Response<Bytes>>;

impl GraphqlPolicy {
    /// `throttle`: the API's operations' throttling policies (`None`: no operation has
    /// one, nothing is checked).
    pub fn new(
        g: CompiledGraphql,
        quotas: Arc<CostQuotas>,
        api: &str,
        throttle: Option<OperationThrottle>,
    ) -> Self {
        GraphqlPolicy {
            inner: Arc::new(Inner {
                g,
                quotas,
                api: api.into(),
                throttle,
            }),
        }
    }

    /// The cost budgets this API's quotas debit (one set per policy runtime).
    pub fn quotas(&self) -> &Arc<CostQuotas> {
        &self.inner.quotas
    }

    /// Where this API's analyses are cached (one cache per policy runtime).
    pub fn analysis_cache(&self) -> &crate::AnalysisCache {
        self.inner.g.analyzer.cache()
    }

    /// `None`: forward the request.
    fn check(
        &self,
        ctx: &RequestCtx,
        req: &request::Parts,
        body: &Bytes,
    ) -> Option<Response<Bytes>> {
        let rid = ctx.request_id.to_str().ok();
        let refuse = |status: StatusCode, errors: &[GraphqlError]| {
            Some(answer(status, errors_body(errors, rid)))
        };
        let ct = req.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let gql = match GraphqlRequest::from_http(req.method.as_str(), ct, req.uri.query(), body) {
            Ok(r) => r,
            Err(e) => return refuse(StatusCode::BAD_REQUEST, &[e]),
        };
        let caller = Caller {
            anonymous: ctx.ext.get::<Anonymous>().is_some(),
            auth: ctx.auth.as_ref(),
            client: ctx.client.ip(),
        };
        let explain = req.headers.contains_key(EXPLAIN_HEADER);
        let get = req.method == Method::GET;
        let op_check;
        let throttle: Option<OperationCheck<'_>> = match &self.inner.throttle {
            Some(t) => {
                op_check = move |roots: &[RootField], q: &str| t.check(ctx, req, roots, q);
                Some(&op_check)
            }
            None => None,
        };
        match self.inner.hold(&caller, &gql, get, explain, throttle) {
            Ok(None) => None,
            Err(Refused::Throttled(resp)) => Some(*resp),
            Ok(Some(doc)) => Some(answer(StatusCode::OK, doc)),
            Err(Refused::Errors(status, errors)) => refuse(status, &errors),
            Err(Refused::Quota(e, q, reset)) => {
                let mut resp = answer(StatusCode::TOO_MANY_REQUESTS, errors_body(&[e], rid));
                let h = resp.headers_mut();
                h.insert(RETRY_AFTER, HeaderValue::from(reset));
                h.insert("ratelimit-limit", HeaderValue::from(q.cost));
                h.insert("ratelimit-remaining", HeaderValue::from(0u64));
                h.insert("ratelimit-reset", HeaderValue::from(reset));
                Some(resp)
            }
        }
    }
}

impl Inner {
    /// Analyses `gql` and holds it to the caller's scopes, tier and access. `Ok(None)`:
    /// forward it; `Ok(Some(doc))`: the explain document (`explain`) to answer instead.
    fn hold(
        &self,
        caller: &Caller<'_>,
        gql: &GraphqlRequest,
        get: bool,
        explain: bool,
        throttle: Option<OperationCheck<'_>>,
    ) -> Result<Option<String>, Refused> {
        let refuse = |status: StatusCode, e: GraphqlError| Err(Refused::Errors(status, vec![e]));
        let query = gql.query();
        let analysis = match self.g.analyzer.analyze(
            query,
            gql.operation_name.as_deref(),
            gql.variables.as_ref(),
        ) {
            Ok(a) => a,
            Err(errors) => return Err(Refused::Errors(status_of(&errors), errors)),
        };
        if get && analysis.kind != OperationKind::Query {
            let e = GraphqlError::new(
                ErrorCode::BadRequest,
                format!("a {} cannot be sent with GET", analysis.kind.as_str()),
            );
            return refuse(StatusCode::METHOD_NOT_ALLOWED, e);
        }
        if caller.anonymous {
            let closed = analysis.root_fields.iter().find(|r| {
                !self
                    .g
                    .open_operations
                    .iter()
                    .any(|(k, n)| *k == r.kind && *n == r.name)
            });
            if let Some(root) = closed {
                let e = GraphqlError::new(
                    ErrorCode::Unauthenticated,
                    format!("operation `{}` needs a credential", root.name),
                )
                .at(root.offset.map(|o| crate::request::location(query, o)));
                return refuse(StatusCode::UNAUTHORIZED, e);
            }
        }
        let identity = caller.auth.map(|a| &a.identity);
        let scopes: &[String] = identity.map_or(&[], |i| &i.scopes[..]);
        for root in &analysis.root_fields {
            let need = self
                .g
                .operations
                .iter()
                .find(|((k, n), _)| *k == root.kind && *n == root.name)
                .map(|(_, s)| s);
            if let Some(need) = need.filter(|s| !s.is_empty()) {
                if !need.iter().any(|s| scopes.contains(s)) {
                    let e = GraphqlError::new(
                        ErrorCode::FieldNotAllowed,
                        format!(
                            "operation `{}` needs one of the scopes {}",
                            root.name,
                            need.join(", ")
                        ),
                    )
                    .at(root.offset.map(|o| crate::request::location(query, o)));
                    return refuse(StatusCode::FORBIDDEN, e);
                }
            }
        }
        let tier = self
            .g
            .tier(caller.auth.and_then(|a| a.subscription_tier.as_deref()));
        if explain {
            return match self.g.analyzer.explain(
                query,
                gql.operation_name.as_deref(),
                gql.variables.as_ref(),
                &tier.limits,
            ) {
                Ok(e) => Ok(Some(serde_json::to_string(&e).unwrap_or_default())),
                Err(errors) => Err(Refused::Errors(status_of(&errors), errors)),
            };
        }
        if let Err(e) = self
            .g
            .analyzer
            .check(&analysis, query, &tier.limits, tier.access.as_ref())
        {
            return refuse(status_of(std::slice::from_ref(&e)), e);
        }
        let app = identity.and_then(|i| i.application_name.as_deref());
        if let Some(access) = app.and_then(|a| self.g.applications.get(a)) {
            if let Err(e) =
                self.g
                    .analyzer
                    .check(&analysis, query, &Limits::default(), Some(access))
            {
                return refuse(StatusCode::FORBIDDEN, e);
            }
        }
        // Operations' counters before the cost quota: a request refused here spends none
        // of its cost budget.
        if let Some(resp) = throttle.and_then(|t| t(&analysis.root_fields, query)) {
            return Err(Refused::Throttled(Box::new(resp)));
        }
        if let Some(q) = tier.quota {
            let who = identity
                .and_then(|i| i.application_id.as_deref())
                .map_or_else(|| caller.client.to_string(), str::to_owned);
            let key = format!("{}\u{0}{who}", self.api);
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            if let Err(over) = self.quotas.debit(&key, analysis.complexity, q, now) {
                let e = GraphqlError::new(
                    ErrorCode::QuotaExceeded,
                    format!("query complexity {} is over the tier's remaining cost quota of {} per {} s", analysis.complexity, q.cost, q.window_secs),
                );
                return Err(Refused::Quota(e, q, over.reset_secs));
            }
        }
        Ok(None)
    }
}

/// The guard of one WebSocket of a GraphQL API (subscriptions, and queries or mutations
/// sent over the socket): each operation is analysed and held to the upgrade request's
/// caller exactly as an HTTP POST would be.
struct SocketGuard {
    inner: Arc<Inner>,
    anonymous: bool,
    auth: Option<Authenticated>,
    client: IpAddr,
}

impl OperationGuard for SocketGuard {
    fn check_operation(&self, payload: &[u8]) -> Result<(), serde_json::Value> {
        let refused = |errors: &[GraphqlError]| {
            serde_json::from_str::<serde_json::Value>(&errors_body(errors, None))
                .map(|mut v| v["errors"].take())
                .unwrap_or_default()
        };
        let gql = GraphqlRequest::from_json(payload).map_err(|e| refused(&[e]))?;
        let caller = Caller {
            anonymous: self.anonymous,
            auth: self.auth.as_ref(),
            client: self.client,
        };
        // Operations' throttling policies count HTTP requests; a socket's operations
        // were admitted with its upgrade request.
        match self.inner.hold(&caller, &gql, false, false, None) {
            Ok(_) => Ok(()),
            Err(Refused::Errors(_, errors)) => Err(refused(&errors)),
            Err(Refused::Quota(e, _, _)) => Err(refused(&[e])),
            Err(Refused::Throttled(_)) => Err(refused(&[GraphqlError::new(
                ErrorCode::Throttled,
                "operation throttled".to_owned(),
            )])),
        }
    }
}

fn status_of(errors: &[GraphqlError]) -> StatusCode {
    match errors.first().map(|e| e.code) {
        Some(ErrorCode::FieldNotAllowed | ErrorCode::IntrospectionDisabled) => {
            StatusCode::FORBIDDEN
        }
        Some(ErrorCode::QuotaExceeded | ErrorCode::Throttled) => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::BAD_REQUEST,
    }
}

fn answer(status: StatusCode, body: String) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

impl Policy for GraphqlPolicy {
    fn name(&self) -> &'static str {
        "graphql"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        Step::Done(Ok(match self.check(ctx, req, body) {
            None => Flow::Continue,
            Some(mut resp) => {
                if let Some(by) = resp.extensions_mut().remove::<ThrottledBy>() {
                    ctx.throttled_by = Some(by.0);
                }
                Flow::Respond(resp)
            }
        }))
    }

    fn upgrade_guard(&self, ctx: &RequestCtx) -> Option<Box<dyn OperationGuard>> {
        Some(Box::new(SocketGuard {
            inner: self.inner.clone(),
            anonymous: ctx.ext.get::<Anonymous>().is_some(),
            auth: ctx.auth.clone(),
            client: ctx.client.ip(),
        }))
    }
}

/// The GraphQL kind: a `graphql:` API's analysis (depth, complexity, cost, field
/// access, operation scopes and throttling) on the admitted caller's body. Its analysis
/// cache and cost quotas are runtime state, so a swap keeps them and two gateways in
/// one process share neither.
pub struct Graphql;

impl PolicyKind for Graphql {
    const NAME: &'static str = "graphql";
    type Spec = GraphqlSpec;

    fn stage(_: &GraphqlSpec) -> Stage {
        Stage::Late
    }

    fn build(spec: &GraphqlSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let api = cx.file.apis.get(cx.api)?;
        let id = turnpike_model::api_id(&api.context, &api.version);
        let throttle = operation_throttle(spec, &id, cx);
        let cache = cx.runtime.get_or_init(AnalysisCache::default);
        let compiled = match crate::spec::compile(spec, (*cache).clone()) {
            Ok(c) => c,
            Err(found) => {
                for p in found {
                    let at = format!("{}.{}", cx.at, p.path);
                    cx.problems.push(Problem::new(at, p.message));
                }
                return None;
            }
        };
        Some(Arc::new(GraphqlPolicy::new(
            compiled,
            cx.runtime.get_or_init(CostQuotas::default),
            &id,
            throttle,
        )))
    }
}

/// The API's operations' throttling, counted in the throttler the file's `throttling:`
/// section compiled into the scratch (none when the section asks for nothing or has
/// problems).
fn operation_throttle(spec: &GraphqlSpec, id: &str, cx: &BuildCx<'_>) -> Option<OperationThrottle> {
    let throttled = cx.scratch.get::<turnpike_throttle::policy::Throttled>()?;
    OperationThrottle::new(
        spec,
        throttled.throttler.clone()?,
        cx.runtime.clock().clone(),
        id,
        throttled.headers,
    )
}
