//! Per-operation throttling (WSO2's operation-level policies): each operation (root
//! field) of a GraphQL API may name an advanced throttling policy
//! (`operations[].throttling`). After the analysis knows which root fields a request
//! calls, [`OperationThrottle::check`] debits each called operation's counter once
//! (keyed per API and operation in the snapshot's `turnpike_throttle::Throttler`, so
//! counters outlive swaps and share the cluster's Redis leases as resource-level
//! policies do). One over its limit refuses the whole request with 429, a GraphQL
//! `errors[]` body (`extensions.code` `THROTTLED`) and the throttler's RateLimit and
//! `Retry-After` headers; the other operations' takes are given back.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::{request, Response, StatusCode};
use turnpike_model::clock::Clock;
use turnpike_model::graphql::{GraphqlSpec, OperationType};
use turnpike_model::throttling::HeaderStyle;
use turnpike_policy::http::query_param;
use turnpike_policy::RequestCtx;
use turnpike_throttle::{Lookup, RequestFacts, Throttler};

use crate::analysis::{OperationKind, RootField};
use crate::error::{errors_body, ErrorCode, GraphqlError};

/// One throttled operation: its counter key within the API and its policy.
#[derive(Debug, Clone)]
struct Throttled {
    kind: OperationKind,
    name: Box<str>,
    /// `query:hero`: stable, so a reload keeps the count.
    key: Box<str>,
    policy: Box<str>,
}

/// The operations of one API that carry a policy, and where they count.
pub struct OperationThrottle {
    throttler: Arc<Throttler>,
    /// The runtime's clock (tests drive it by hand).
    clock: Arc<dyn Clock>,
    api_id: Box<str>,
    headers: HeaderStyle,
    operations: Vec<Throttled>,
}

/// The refusal's policy name, carried in the 429's extensions for the request context.
#[derive(Debug, Clone)]
pub(crate) struct ThrottledBy(pub(crate) Arc<str>);

impl std::fmt::Debug for OperationThrottle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationThrottle")
            .field("api_id", &self.api_id)
            .field("operations", &self.operations)
            .finish_non_exhaustive()
    }
}

impl OperationThrottle {
    /// `None` when no operation of `spec` names a policy (other than `Unlimited`): such an
    /// API pays nothing. Policy names are checked by the caller (it knows the throttler).
    pub fn new(
        spec: &GraphqlSpec,
        throttler: Arc<Throttler>,
        clock: Arc<dyn Clock>,
        api_id: &str,
        headers: HeaderStyle,
    ) -> Option<Self> {
        let operations: Vec<Throttled> = spec
            .operations
            .iter()
            .filter_map(|op| {
                let policy = op.throttling.as_deref()?;
                if policy == turnpike_throttle::UNLIMITED {
                    return None;
                }
                let kind = match op.kind {
                    OperationType::Query => OperationKind::Query,
                    OperationType::Mutation => OperationKind::Mutation,
                    OperationType::Subscription => OperationKind::Subscription,
                };
                Some(Throttled {
                    kind,
                    name: op.name.as_str().into(),
                    key: format!("{}:{}", kind.as_str(), op.name).into(),
                    policy: policy.into(),
                })
            })
            .collect();
        (!operations.is_empty()).then(|| OperationThrottle {
            throttler,
            clock,
            api_id: api_id.into(),
            headers,
            operations,
        })
    }

    /// Debits the throttled operations among `roots` (each once per request); the 429
    /// when one is over its limit.
    pub(crate) fn check(
        &self,
        ctx: &RequestCtx,
        req: &request::Parts,
        roots: &[RootField],
        query: &str,
    ) -> Option<Response<Bytes>> {
        let mut called: Vec<(&str, &str)> = Vec::new();
        let mut first: Vec<&RootField> = Vec::new();
        for root in roots {
            let Some(t) = self
                .operations
                .iter()
                .find(|t| t.kind == root.kind && *t.name == *root.name)
            else {
                continue;
            };
            if !called.iter().any(|(k, _)| *k == &*t.key) {
                called.push((&t.key, &t.policy));
                first.push(root);
            }
        }
        if called.is_empty() {
            return None;
        }
        let identity = ctx.identity();
        let claim = |name: &str| identity.and_then(|i| i.claims.get(name));
        let lookup = OpLookup { req, claim: &claim };
        let facts = RequestFacts {
            lookup: &lookup,
            ..RequestFacts::new(&self.api_id, ctx.client.ip())
        };
        let (d, index) = self
            .throttler
            .check_operations(&facts, &called, self.clock.now());
        if d.allowed {
            return None;
        }
        let policy = d.rule.map_or("", |r| self.throttler.policy_name(r));
        let refused = index.and_then(|i| first.get(i)).copied();
        let name = refused.map_or("", |r| r.name.as_str());
        let e = GraphqlError::new(
            ErrorCode::Throttled,
            format!("operation `{name}` is {}", self.throttler.message(&d)),
        )
        .at(refused
            .and_then(|r| r.offset)
            .map(|o| crate::request::location(query, o)));
        let rid = ctx.request_id.to_str().ok();
        let mut resp = Response::new(Bytes::from(errors_body(&[e], rid)));
        *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        self.throttler
            .write_headers(&d, self.headers, resp.headers_mut());
        resp.extensions_mut().insert(ThrottledBy(policy.into()));
        Some(resp)
    }
}

/// Headers, query parameters and the token's kept claims, for conditional groups.
struct OpLookup<'a> {
    req: &'a request::Parts,
    claim: &'a dyn Fn(&str) -> Option<&'a str>,
}

impl Lookup for OpLookup<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.req.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn query(&self, name: &str) -> Option<Cow<'_, str>> {
        query_param(self.req.uri.query()?, name)
    }

    fn claim(&self, name: &str) -> Option<&str> {
        (self.claim)(name)
    }
}
