//! Forwarding for an API with resilience settings, or a SANDBOX caller: picks the
//! endpoint list (production or sandbox), orders it by the API's balancing (weighted
//! round robin, least connections, round robin, failover), skips endpoints that are
//! suspended or failing their health check, reports each exchange's outcome to the
//! endpoint's long-lived state (`turnpike_config::endpoint_state`), and retries an
//! idempotent request on another endpoint within the API's retry budget. An API without
//! settings never comes here (`proxy.rs` branches on `api.resilience`), so it pays for
//! none of it. Semantics: docs/resilience.md.

use std::future::Future;
use std::pin::Pin;

use http::request;
use http_body::Body as _;
use turnpike_config::endpoint_state::EndpointState;
use turnpike_config::resilience::Resilience;
use turnpike_config::{CompiledApi, Endpoint, LoadBalancing};
use turnpike_model::clock::{Clock, SystemClock};
use turnpike_policy::UpstreamTarget;

use super::forward::{attempt, endpoint_failed, Attempt, Upstream, ROUND_ROBIN};
use crate::client_body::ClientBody;
use crate::conn::Shared;
use crate::error::{ErrorKind, GatewayError};
use crate::headers;

type Forwarded<'a> = Pin<Box<dyn Future<Output = Result<Upstream, GatewayError>> + Send + 'a>>;

/// Boxed: the plain path's future does not carry this one.
#[cold]
pub(crate) fn forward<'a>(
    shared: &'a Shared,
    api: &'a CompiledApi,
    parts: &'a mut request::Parts,
    body: ClientBody,
    target: &'a UpstreamTarget,
    fwd: &'a headers::Forwarded<'a>,
    sandbox: bool,
) -> Forwarded<'a> {
    Box::pin(async move {
        let (eps, schedule) = match (&api.resilience, sandbox) {
            (_, true) if api.sandbox_endpoints.is_empty() => {
                return Err(GatewayError::new(ErrorKind::SandboxNotConfigured))
            }
            (Some(r), true) => (&api.sandbox_endpoints, &*r.sandbox_schedule),
            (Some(r), false) => (&api.endpoints, &*r.schedule),
            (None, _) => (&api.endpoints, &[][..]),
        };
        let plan = Plan {
            r: api.resilience.as_deref(),
            order: order(api, eps, schedule),
        };
        plan.run(shared, api, eps, parts, body, target, fwd).await
    })
}

/// Endpoint indexes in the order they are tried: the balancer's choice first, then the
/// others (standbys of weight 0 last under weighted round robin).
fn order(api: &CompiledApi, eps: &[Endpoint], schedule: &[u16]) -> Vec<usize> {
    let n = eps.len();
    let turn = ROUND_ROBIN.with(|c| {
        let v = c.get();
        c.set(v.wrapping_add(1));
        v
    });
    let lb = api.resilience.as_ref().map_or(api.load_balancing, |r| r.load_balancing);
    let first = match lb {
        LoadBalancing::Failover => 0,
        LoadBalancing::WeightedRoundRobin if !schedule.is_empty() => {
            usize::from(schedule[turn % schedule.len()])
        }
        _ => turn % n.max(1),
    };
    let mut order: Vec<usize> = (0..n).map(|i| (first + i) % n).collect();
    match lb {
        LoadBalancing::LeastConnections => {
            // Stable: among equals, the round-robin rotation decides.
            order.sort_by_key(|&i| eps[i].state.as_ref().map_or(0, |s| s.in_flight()));
        }
        LoadBalancing::WeightedRoundRobin => order.sort_by_key(|&i| eps[i].weight == 0),
        _ => {}
    }
    order
}

struct Plan<'r> {
    r: Option<&'r Resilience>,
    order: Vec<usize>,
}

/// What one exchange did, as the circuit sees it.
enum Outcome {
    Answered(Upstream),
    /// Not sent at all: the next endpoint may always be tried.
    Unreached(GatewayError, ClientBody),
    /// Sent and failed.
    Failed(GatewayError),
}

impl Plan<'_> {
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        shared: &Shared,
        api: &CompiledApi,
        eps: &[Endpoint],
        parts: &mut request::Parts,
        body: ClientBody,
        target: &UpstreamTarget,
        fwd: &headers::Forwarded<'_>,
    ) -> Result<Upstream, GatewayError> {
        let retries = self.r.and_then(|r| r.retries.as_ref());
        if let Some(rt) = retries {
            rt.deposit();
        }
        // Retried only when the method allows it and the body can be sent again.
        let replayable = retries.is_some_and(|rt| rt.allows(&parts.method) && rt.attempts > 0);
        let replayable = replayable.then(|| body.replay()).flatten().is_some();
        let saved_headers = replayable.then(|| parts.headers.clone());
        let mut retries_left = retries.map_or(0, |rt| rt.attempts);
        let mut body = body;
        let watch = (!body.is_end_stream()).then(|| body.watch());
        let mut body = Some(body);
        let mut last: Option<GatewayError> = None;
        // A failing answer retried away is still better than an error if no other
        // endpoint answers.
        let mut last_answer: Option<Upstream> = None;
        for &i in &self.order {
            let ep = &eps[i];
            if !self.admits(ep) {
                continue;
            }
            let Some(this_body) = (if replayable { body.as_ref().and_then(ClientBody::replay) } else { body.take() }) else {
                break;
            };
            if let Some(h) = &saved_headers {
                parts.headers.clone_from(h);
            }
            let mut in_map = false;
            let _in_flight = ep.state.as_ref().map(EndpointState::start);
            let outcome = match attempt(shared, api, ep, parts, this_body, target, fwd, watch.as_ref(), &mut in_map).await {
                Ok(up) => Outcome::Answered(up),
                Err(Attempt::Connect(e, b)) => Outcome::Unreached(e, b),
                Err(Attempt::Sent(e)) => Outcome::Failed(e),
            };
            let counted = self.report(ep, &outcome);
            let retry = counted
                && replayable
                && retries_left > 0
                && retries.is_some_and(|rt| rt.withdraw(SystemClock.now_secs()));
            match outcome {
                Outcome::Answered(up) if !retry => return Ok(up),
                Outcome::Answered(up) => {
                    last_answer = Some(up);
                    retries_left -= 1;
                }
                Outcome::Unreached(e, b) => {
                    endpoint_failed(api, ep, &e);
                    if !replayable {
                        body = Some(b);
                    }
                    last = Some(e);
                }
                Outcome::Failed(e) if !retry => return Err(e),
                Outcome::Failed(e) => {
                    endpoint_failed(api, ep, &e);
                    retries_left -= 1;
                    last = Some(e);
                }
            }
        }
        match last_answer {
            Some(up) => Ok(up),
            None => Err(last.unwrap_or_else(|| GatewayError::new(ErrorKind::EndpointsSuspended))),
        }
    }

    /// Whether the endpoint takes this request (its circuit and health check).
    fn admits(&self, ep: &Endpoint) -> bool {
        match (&ep.state, self.r) {
            (Some(s), Some(r)) if r.tracks => s.admits(ep.connect_timeout + ep.read_timeout),
            _ => true,
        }
    }

    /// Tells the endpoint's state how the exchange went; true when it was a failure
    /// the API counts (`suspension.on`), which is also what a retry needs.
    fn report(&self, ep: &Endpoint, outcome: &Outcome) -> bool {
        let Some(r) = self.r else { return false };
        let on = &r.suspension.on;
        let counted = match outcome {
            Outcome::Answered(up) => on.status(up.status()),
            Outcome::Unreached(e, _) => on.connect_failure && is_upstream(e.kind),
            Outcome::Failed(e) => match e.kind {
                ErrorKind::UpstreamResponseTimeout => on.timeout,
                ErrorKind::UpstreamReset | ErrorKind::UpstreamProtocol => on.reset,
                // The client's own failures (its body) say nothing about the endpoint.
                _ => false,
            },
        };
        if let (Some(s), true) = (&ep.state, r.tracks) {
            if counted {
                s.failed(r);
            } else if !matches!(outcome, Outcome::Failed(_)) {
                s.succeeded(r);
            }
        }
        counted
    }
}

fn is_upstream(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::UpstreamConnectFailed | ErrorKind::UpstreamConnectTimeout
    )
}
