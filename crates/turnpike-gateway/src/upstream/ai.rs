//! Forwarding for an AI API's call whose provider the AI policy chose
//! (`turnpike_policy::ai::ProviderChoice` in the context: the API has several provider
//! URLs, or the call may fall back). The call goes to the chosen provider's endpoint;
//! when that try fails before any byte reached the client (a 429 or 5xx answer, a
//! refused connection, a timeout, a broken connection: `turnpike_ai::falls_back_on`),
//! the AI policy counts it against the provider and prepares the next try (another
//! target, translated for its provider), until it has none left and the failure is the
//! answer. A streamed answer is judged by its head, so a stream falls back only before
//! its first byte. Semantics: docs/ai-gateway.md "Routing and fallback". Only AI calls
//! come here (`proxy.rs` branches on the choice being in the context).

use std::future::Future;
use std::pin::Pin;

use http::request;
use turnpike_ai::AiPolicy;
use turnpike_config::CompiledApi;
use turnpike_policy::ai::ProviderChoice;
use turnpike_policy::RequestCtx;

use super::forward::{attempt, endpoint_failed, Attempt, Upstream};
use crate::client_body::ClientBody;
use crate::conn::Shared;
use crate::error::{ErrorKind, GatewayError};
use crate::headers;
use crate::response_body::set_length;

type Forwarded<'a> = Pin<Box<dyn Future<Output = Result<Upstream, GatewayError>> + Send + 'a>>;

/// Boxed: the plain path's future does not carry this one.
#[cold]
pub(crate) fn forward<'a>(
    shared: &'a Shared,
    api: &'a CompiledApi,
    ctx: &'a mut RequestCtx,
    parts: &'a mut request::Parts,
    body: ClientBody,
    fwd: &'a headers::Forwarded<'a>,
    choice: ProviderChoice,
) -> Forwarded<'a> {
    Box::pin(async move {
        let policy = choice
            .may_fall_back
            .then(|| api.chain.find::<AiPolicy>())
            .flatten();
        // A try through hyper's client takes the headers: kept for the next one.
        let saved = policy.is_some().then(|| parts.headers.clone());
        let (mut endpoint, mut body) = (choice.endpoint, body);
        loop {
            let ep = api
                .endpoints
                .get(endpoint)
                .ok_or_else(|| GatewayError::new(ErrorKind::NoEndpoint))?;
            let target = ctx.upstream.clone();
            let mut in_map = false;
            let out = attempt(
                shared,
                api,
                ep,
                parts,
                &mut body,
                &target,
                fwd,
                None,
                &mut in_map,
            )
            .await;
            let Some(policy) = policy else {
                return answer(out);
            };
            if !failed(&out) {
                policy.answered(ctx);
                return answer(out);
            }
            if let Err(Attempt::Connect(e) | Attempt::Sent(e)) = &out {
                endpoint_failed(api, ep, e);
            }
            if let Some(h) = &saved {
                parts.headers.clone_from(h);
            }
            let Some((next, bytes)) = policy.fall_back(ctx, parts) else {
                return answer(out);
            };
            set_length(&mut parts.headers, bytes.len());
            (endpoint, body) = (next, ClientBody::full(bytes));
        }
    })
}

/// Whether a try failed in a way a call falls back on.
fn failed(out: &Result<Upstream, Attempt>) -> bool {
    match out {
        Ok(up) => turnpike_ai::falls_back_on(up.status().as_u16()),
        Err(Attempt::Connect(..)) => true,
        Err(Attempt::Sent(e)) => matches!(
            e.kind,
            ErrorKind::UpstreamResponseTimeout
                | ErrorKind::UpstreamReset
                | ErrorKind::UpstreamProtocol
        ),
    }
}

fn answer(out: Result<Upstream, Attempt>) -> Result<Upstream, GatewayError> {
    out.map_err(|a| match a {
        Attempt::Connect(e) | Attempt::Sent(e) => e,
    })
}
