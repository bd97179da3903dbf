//! Per-tool governance, checked once the caller is admitted (after auth and the API's
//! throttling): a tool's own `scopes` (the caller needs one, on top of what its
//! operation's resource asks) and its own `throttling` policy, counted per API, tool and
//! application in the snapshot's `turnpike_throttle::Throttler` (the counter store that
//! outlives reloads and shares the cluster's Redis leases), as a GraphQL API's
//! operations are. The MCP proxy's tools count the same way: a key per tool.
//!
//! A missing scope is the REST call's answer (403 `insufficient_scope` with its
//! `WWW-Authenticate` challenge, which the SDKs' OAuth clients step up on); a tool over
//! its limit is a tool error (`isError`, HTTP 200) the agent can read and wait on, with
//! the throttler's RateLimit headers and `Retry-After` on the HTTP answer.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderValue, Response};
use rmcp::model::{CallToolResult, ContentBlock, RequestId};
use turnpike_model::clock::Clock;
use turnpike_model::throttling::HeaderStyle;
use turnpike_policy::{BuildCx, ErrorKind, GatewayError, RequestCtx};
use turnpike_throttle::{RequestFacts, Throttler, UNLIMITED};

use crate::rpc;

/// What one tool asks beyond its API's chain: the section's `scopes` (the caller needs
/// one) and `throttling` (an advanced policy, per API, tool and application).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolRules<'a> {
    /// The tool's name as agents call it (what the count is keyed by).
    pub name: &'a str,
    pub scopes: &'a [String],
    pub throttling: Option<&'a str>,
}

/// Where the tools' own policies count; `None` for an API none of whose tools has one.
pub(crate) struct ToolThrottle {
    throttler: Arc<Throttler>,
    clock: Arc<dyn Clock>,
    api_id: Box<str>,
    headers: HeaderStyle,
}

impl ToolThrottle {
    /// The throttler the file's `throttling:` section compiled (policy names were
    /// checked there, at `apis[i].mcp.tools[j].throttling`).
    pub(crate) fn new<'p>(
        mut policies: impl Iterator<Item = Option<&'p str>>,
        api_id: &str,
        cx: &BuildCx<'_>,
    ) -> Option<Self> {
        if !policies.any(|p| p.is_some_and(|p| p != UNLIMITED)) {
            return None;
        }
        let throttled = cx.scratch.get::<turnpike_throttle::policy::Throttled>()?;
        Some(ToolThrottle {
            throttler: throttled.throttler.clone()?,
            clock: cx.runtime.clock().clone(),
            api_id: api_id.into(),
            headers: throttled.headers,
        })
    }

    /// Counts one call of `tool`: the tool error answering `id` when it is over its limit.
    fn check(&self, ctx: &RequestCtx, tool: ToolRules, id: &RequestId) -> Option<Response<Bytes>> {
        let policy = tool.throttling?;
        let application = ctx
            .identity()
            .and_then(|i| i.principal.application_id.as_deref());
        // Per application: each one's agents have their own allowance of the tool; an
        // open API's callers share the tool's.
        let key = format!("tool:{}\0{}", tool.name, application.unwrap_or(""));
        let facts = RequestFacts {
            application_id: application,
            ..RequestFacts::new(&self.api_id, ctx.client.ip())
        };
        let (d, _) = self
            .throttler
            .check_operations(&facts, &[(&key, policy)], self.clock.now());
        if d.allowed {
            return None;
        }
        let message = format!("tool `{}` is {}", tool.name, self.throttler.message(&d));
        let policy = d.rule.map_or("", |r| self.throttler.policy_name(r));
        let retry_after = d.retry_after.map_or(0, |r| r.as_secs_f64().ceil() as u64);
        let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
        result.result_type = None;
        result.structured_content = Some(serde_json::json!({
            "code": "throttled",
            "message": message,
            "policy": policy,
            "retry_after": retry_after,
        }));
        let mut resp = Response::new(rpc::result(id.clone(), result));
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.throttler
            .write_headers(&d, self.headers, resp.headers_mut());
        Some(resp)
    }
}

/// Whether the caller may call `tool`, and whether the tool's limit lets the call
/// through: `Ok(None)` to go upstream, `Ok(Some(answer))` for a tool over its limit.
pub(crate) fn admit(
    ctx: &RequestCtx,
    tool: ToolRules,
    id: &RequestId,
    throttle: Option<&ToolThrottle>,
) -> Result<Option<Response<Bytes>>, GatewayError> {
    if !tool.scopes.is_empty() {
        let held = ctx
            .identity()
            .map(|i| &i.principal.scopes[..])
            .unwrap_or(&[]);
        if !tool.scopes.iter().any(|s| held.contains(s)) {
            return Err(insufficient_scope(tool.name, tool.scopes));
        }
    }
    Ok(throttle.and_then(|t| t.check(ctx, tool, id)))
}

/// The error table's 403 `insufficient_scope`, with the RFC 6750 challenge naming the
/// scopes the tool asks for (as the auth kind answers for a resource's scopes).
fn insufficient_scope(tool: &str, scopes: &[String]) -> GatewayError {
    let wanted = scopes.join(" ").replace(['"', '\\'], "");
    let mut e = GatewayError::new(ErrorKind::InsufficientScope);
    e.detail = Some(format!("tool `{tool}` needs one of the scopes: {wanted}").into());
    let challenge =
        format!("Bearer realm=\"turnpike\", error=\"insufficient_scope\", scope=\"{wanted}\"");
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        e = e.with_header(WWW_AUTHENTICATE, v);
    }
    e
}
