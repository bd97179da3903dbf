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
use crate::client_body::{BodyWatch, ClientBody};
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
        let (eps, schedule) = pool(api, sandbox)?;
        let plan = Plan {
            r: api.resilience.as_deref(),
            order: order(api, eps, schedule),
        };
        plan.run(shared, api, eps, parts, body, target, fwd).await
    })
}

/// The caller's endpoint list (sandbox or production) and its weighted schedule.
fn pool(api: &CompiledApi, sandbox: bool) -> Result<(&[Endpoint], &[u16]), GatewayError> {
    Ok(match (&api.resilience, sandbox) {
        (_, true) if api.sandbox_endpoints.is_empty() => {
            return Err(GatewayError::new(ErrorKind::SandboxNotConfigured))
        }
        (Some(r), true) => (&api.sandbox_endpoints, &*r.sandbox_schedule),
        (Some(r), false) => (&api.endpoints, &*r.schedule),
        (None, true) => (&api.sandbox_endpoints, &[][..]),
        (None, false) => (&api.endpoints, &[][..]),
    })
}

/// The endpoints a connection that is not an HTTP exchange (a WebSocket upgrade) tries,
/// in order: the caller's list, balanced as requests are, without suspended or
/// unhealthy endpoints; an API without settings keeps its endpoints' written order.
pub(crate) fn connection_order(
    api: &CompiledApi,
    sandbox: bool,
) -> Result<Vec<&Endpoint>, GatewayError> {
    let (eps, schedule) = pool(api, sandbox)?;
    let Some(r) = api.resilience.as_deref() else {
        return Ok(eps.iter().collect());
    };
    let plan = Plan {
        r: Some(r),
        order: order(api, eps, schedule),
    };
    let out: Vec<&Endpoint> = plan
        .order
        .iter()
        .map(|&i| &eps[i])
        .filter(|ep| plan.admits(ep))
        .collect();
    if out.is_empty() {
        return Err(GatewayError::new(ErrorKind::EndpointsSuspended));
    }
    Ok(out)
}

/// Tells an endpoint's state whether a connection to it could be opened (a refused or
/// timed-out connect counts when the API's `suspension.on` lists `connect_failure`).
pub(crate) fn report_connection(api: &CompiledApi, ep: &Endpoint, opened: bool) {
    let (Some(r), Some(s)) = (api.resilience.as_deref(), &ep.state) else {
        return;
    };
    if !r.tracks {
        return;
    }
    if opened {
        s.succeeded(&r.circuit);
    } else if r.circuit.suspension.on.connect_failure {
        s.failed(&r.circuit);
    }
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
    let lb = api
        .resilience
        .as_ref()
        .map_or(api.load_balancing, |r| r.load_balancing);
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

/// One request's way through the endpoints.
struct Call<'a, 'h> {
    shared: &'a Shared,
    api: &'a CompiledApi,
    parts: &'a mut request::Parts,
    target: &'a UpstreamTarget,
    fwd: &'a headers::Forwarded<'h>,
    watch: Option<BodyWatch>,
    /// The request's headers as they were before the first try (retries only: a try
    /// through hyper's client takes them).
    saved_headers: Option<http::HeaderMap>,
}

impl Call<'_, '_> {
    async fn exchange(&mut self, ep: &Endpoint, mut body: ClientBody) -> Outcome {
        if let Some(h) = &self.saved_headers {
            self.parts.headers.clone_from(h);
        }
        let mut in_map = false;
        let _in_flight = ep.state.as_ref().map(EndpointState::start);
        let (shared, api, target, fwd) = (self.shared, self.api, self.target, self.fwd);
        let watch = self.watch.as_ref();
        match attempt(
            shared,
            api,
            ep,
            self.parts,
            &mut body,
            target,
            fwd,
            watch,
            &mut in_map,
        )
        .await
        {
            Ok(up) => Outcome::Answered(up),
            Err(Attempt::Connect(e)) => Outcome::Unreached(e, body),
            Err(Attempt::Sent(e)) => Outcome::Failed(e),
        }
    }
}

impl Plan<'_> {
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        shared: &Shared,
        api: &CompiledApi,
        eps: &[Endpoint],
        parts: &mut request::Parts,
        mut body: ClientBody,
        target: &UpstreamTarget,
        fwd: &headers::Forwarded<'_>,
    ) -> Result<Upstream, GatewayError> {
        let retries = self.r.and_then(|r| r.retries.as_ref());
        let replayable = self.replayable(&parts.method, &body);
        let mut retries_left = retries.map_or(0, |rt| rt.attempts);
        let watch = (!body.is_end_stream()).then(|| body.watch());
        let saved_headers = replayable.then(|| parts.headers.clone());
        let mut call = Call {
            shared,
            api,
            parts,
            target,
            fwd,
            watch,
            saved_headers,
        };
        let mut body = Some(body);
        let mut last: Option<GatewayError> = None;
        // A failing answer retried away is still better than an error if no other
        // endpoint answers.
        let mut last_answer: Option<Upstream> = None;
        for ep in self
            .order
            .iter()
            .map(|&i| &eps[i])
            .filter(|ep| self.admits(ep))
        {
            let next = if replayable {
                body.as_ref().and_then(ClientBody::replay)
            } else {
                body.take()
            };
            let Some(next) = next else { break };
            let outcome = call.exchange(ep, next).await;
            // A connection never made sent nothing: the next endpoint is tried anyway,
            // without spending a retry.
            let sent = !matches!(outcome, Outcome::Unreached(..));
            let retry = self.report(ep, &outcome)
                && sent
                && replayable
                && retries_left > 0
                && retries.is_some_and(|rt| rt.withdraw(SystemClock.now_secs()));
            retries_left -= u32::from(retry);
            match outcome {
                Outcome::Answered(up) if !retry => return Ok(up),
                Outcome::Answered(up) => last_answer = Some(up),
                Outcome::Failed(e) if !retry => return Err(e),
                Outcome::Failed(e) => last = Some(failed(api, ep, e)),
                Outcome::Unreached(e, b) => {
                    body = body.or((!replayable).then_some(b));
                    last = Some(failed(api, ep, e));
                }
            }
        }
        match last_answer {
            Some(up) => Ok(up),
            None => Err(last.unwrap_or_else(|| GatewayError::new(ErrorKind::EndpointsSuspended))),
        }
    }

    /// Whether this request may be retried: the API retries its method, and its body
    /// is wholly in memory (or absent). Counts the request into the retry budget.
    fn replayable(&self, method: &http::Method, body: &ClientBody) -> bool {
        let Some(rt) = self.r.and_then(|r| r.retries.as_ref()) else {
            return false;
        };
        rt.deposit();
        rt.attempts > 0 && rt.allows(method) && body.replay().is_some()
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
        let on = &r.circuit.suspension.on;
        let counted = match outcome {
            Outcome::Answered(up) => on.statuses.contains(up.status()),
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
                s.failed(&r.circuit);
            } else if !matches!(outcome, Outcome::Failed(_)) {
                s.succeeded(&r.circuit);
            }
        }
        counted
    }
}

/// Logs the endpoint's failure (rate limited) and keeps the error as the last one.
fn failed(api: &CompiledApi, ep: &Endpoint, e: GatewayError) -> GatewayError {
    endpoint_failed(api, ep, &e);
    e
}

fn is_upstream(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::UpstreamConnectFailed | ErrorKind::UpstreamConnectTimeout
    )
}
