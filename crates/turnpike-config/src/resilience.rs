//! An API's upstream resilience, compiled: which failures count, how long a failing
//! endpoint is suspended (WSO2's initial duration, progression factor, maximum), when
//! the circuit opens, which requests are retried and within what budget, the active
//! health check, and the weighted round-robin schedule. Built only for an API that
//! asks for one of these (or has sandbox endpoints, weights or least connections):
//! every other API carries `None` and its requests skip all of it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use http::Method;
use turnpike_model::resilience::{
    CircuitBreakerSpec, HealthCheckSpec, ResilienceSpec, RetrySpec, SuspensionSpec,
};
use turnpike_model::{LoadBalancing, Quantity};
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::methods::MethodSet;

use crate::endpoint::Endpoint;
pub use crate::endpoint_state::{Breaker, Circuit, Counted, Statuses, Suspension};
use crate::error::Problem;

/// Most endpoints (production or sandbox) of one API.
pub const MAX_ENDPOINTS: usize = 64;
/// Most retries of one request.
const MAX_RETRIES: u32 = 5;

/// Retries on another endpoint, within a budget: `percent` of requests (deposited as
/// each request starts, in thousandths of a retry) plus `min_per_second`.
#[derive(Debug)]
pub struct Retries {
    pub attempts: u32,
    pub methods: MethodSet,
    percent: u32,
    min_per_second: u32,
    milli_tokens: AtomicU64,
    second: AtomicU64,
    used_this_second: AtomicU32,
}

impl Retries {
    /// Whether this request may be retried at all (its method).
    pub fn allows(&self, m: &Method) -> bool {
        self.methods.contains(m)
    }

    /// Called once per request of the API: adds its share to the budget.
    pub fn deposit(&self) {
        let cap = 10_000 + u64::from(self.min_per_second) * 1000;
        let v = self.milli_tokens.load(Relaxed);
        if v < cap {
            self.milli_tokens
                .fetch_add(u64::from(self.percent) * 10, Relaxed);
        }
    }

    /// Takes one retry from the budget; false when it is spent.
    pub fn withdraw(&self, now_secs: u64) -> bool {
        if self.second.swap(now_secs, Relaxed) != now_secs {
            self.used_this_second.store(0, Relaxed);
        }
        if self.used_this_second.fetch_add(1, Relaxed) < self.min_per_second {
            return true;
        }
        self.milli_tokens
            .fetch_update(Relaxed, Relaxed, |v| v.checked_sub(1000))
            .is_ok()
    }
}

#[derive(Debug, Clone)]
pub struct HealthCheck {
    pub path: String,
    pub interval: Duration,
    pub timeout: Duration,
    pub healthy_threshold: u32,
    pub unhealthy_threshold: u32,
    /// Statuses that pass.
    pub expected: Statuses,
}

/// What an API's requests consult beyond round robin.
#[derive(Debug)]
pub struct Resilience {
    pub load_balancing: LoadBalancing,
    /// Passive tracking: failures are counted and suspend (a `suspension` or
    /// `circuit_breaker` section, or a health check, which also reads real traffic).
    pub tracks: bool,
    /// When failures suspend an endpoint, and for how long.
    pub circuit: Circuit,
    pub retries: Option<Retries>,
    pub health_check: Option<HealthCheck>,
    /// Weighted round robin: endpoint indexes in smooth order (one cycle).
    pub schedule: Box<[u16]>,
    pub sandbox_schedule: Box<[u16]>,
}

/// Whether an API needs a [`Resilience`] at all.
pub(crate) fn needed(spec: &turnpike_model::ApiSpec) -> bool {
    spec.resilience.is_some()
        || !spec.sandbox_endpoints.is_empty()
        || matches!(
            spec.load_balancing,
            LoadBalancing::WeightedRoundRobin | LoadBalancing::LeastConnections
        )
}

/// Compiles the section; every problem is pushed under `at` (`apis[1].resilience`).
pub(crate) fn check(
    at: &str,
    spec: &turnpike_model::ApiSpec,
    endpoints: &[Endpoint],
    sandbox: &[Endpoint],
    problems: &mut Vec<Problem>,
) -> Resilience {
    let empty = ResilienceSpec::default();
    let r = spec.resilience.as_ref().unwrap_or(&empty);
    let at = format!("{at}.resilience");
    let tracks = r.suspension.is_some() || r.circuit_breaker.is_some() || r.health_check.is_some();
    Resilience {
        load_balancing: spec.load_balancing,
        tracks,
        circuit: Circuit {
            suspension: suspension(&at, r.suspension.as_ref(), problems),
            breaker: breaker(&at, r.circuit_breaker.as_ref(), problems),
        },
        retries: r.retries.as_ref().map(|s| retries(&at, s, problems)),
        health_check: r.health_check.as_ref().map(|s| health(&at, s, problems)),
        schedule: schedule(endpoints),
        sandbox_schedule: schedule(sandbox),
    }
}

fn duration(at: &str, q: Option<&Quantity>, default: Duration, p: &mut Vec<Problem>) -> Duration {
    match q.map(parse_duration) {
        None => default,
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            p.push(Problem::new(at, e));
            default
        }
    }
}

fn suspension(at: &str, s: Option<&SuspensionSpec>, p: &mut Vec<Problem>) -> Suspension {
    let default = SuspensionSpec::default();
    let s = s.unwrap_or(&default);
    let at = format!("{at}.suspension");
    let mut on = Counted::default();
    if s.on.is_empty() {
        (on.connect_failure, on.timeout, on.reset) = (true, true, true);
    }
    for (i, q) in s.on.iter().enumerate() {
        match q.to_string().as_str() {
            "connect_failure" => on.connect_failure = true,
            "timeout" => on.timeout = true,
            "reset" => on.reset = true,
            other => match status_range(other) {
                Some(r) => on.statuses.push(r),
                None => p.push(Problem::new(
                    format!("{at}.on[{i}]"),
                    format!("{other:?} is not a failure: expected connect_failure, timeout, reset, a status such as 503 or a class such as 5xx"),
                )),
            },
        }
    }
    let initial = duration(
        &format!("{at}.initial_duration"),
        s.initial_duration.as_ref(),
        Duration::from_secs(30),
        p,
    );
    let max = duration(
        &format!("{at}.max_duration"),
        s.max_duration.as_ref(),
        Duration::from_secs(300),
        p,
    );
    let factor = s.progression_factor.unwrap_or(1.0);
    if !(1.0..=100.0).contains(&factor) {
        p.push(Problem::new(
            format!("{at}.progression_factor"),
            "expected a number from 1 to 100",
        ));
    }
    if initial.is_zero() || max < initial {
        p.push(Problem::new(
            format!("{at}.max_duration"),
            "expected 0 < initial_duration <= max_duration",
        ));
    }
    Suspension {
        on,
        initial,
        factor,
        max,
    }
}

fn breaker(at: &str, b: Option<&CircuitBreakerSpec>, p: &mut Vec<Problem>) -> Breaker {
    let default = CircuitBreakerSpec::default();
    let b = b.unwrap_or(&default);
    let at = format!("{at}.circuit_breaker");
    let consecutive_failures = b.consecutive_failures.unwrap_or(1);
    if !(1..=1000).contains(&consecutive_failures) {
        p.push(Problem::new(
            format!("{at}.consecutive_failures"),
            "expected 1 to 1000",
        ));
    }
    if b.failure_ratio.is_some_and(|r| !(r > 0.0 && r <= 1.0)) {
        p.push(Problem::new(
            format!("{at}.failure_ratio"),
            "expected a share above 0 and at most 1, e.g. 0.5",
        ));
    }
    let window = b.window.unwrap_or(20);
    if !(2..=1000).contains(&window) {
        p.push(Problem::new(
            format!("{at}.window"),
            "expected 2 to 1000 calls",
        ));
    }
    Breaker {
        consecutive_failures,
        failure_ratio: b.failure_ratio,
        window,
    }
}

fn retries(at: &str, r: &RetrySpec, p: &mut Vec<Problem>) -> Retries {
    let at = format!("{at}.retries");
    if r.attempts > MAX_RETRIES {
        p.push(Problem::new(
            format!("{at}.attempts"),
            format!("at most {MAX_RETRIES}"),
        ));
    }
    let idempotent = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"];
    let names: Vec<&str> = if r.methods.is_empty() {
        idempotent.to_vec()
    } else {
        r.methods.iter().map(String::as_str).collect()
    };
    let mut methods = MethodSet::default();
    for (i, m) in names.iter().enumerate() {
        match MethodSet::parse(m).and_then(|s| {
            if *m == "*" {
                Err("list the methods; \"*\" would retry POST".into())
            } else {
                Ok(s)
            }
        }) {
            Ok(s) => methods = methods.union(s),
            Err(e) => p.push(Problem::new(format!("{at}.methods[{i}]"), e)),
        }
    }
    let percent = r.budget_percent.unwrap_or(20);
    if percent > 100 {
        p.push(Problem::new(
            format!("{at}.budget_percent"),
            "expected 0 to 100",
        ));
    }
    Retries {
        attempts: r.attempts.min(MAX_RETRIES),
        methods,
        percent,
        min_per_second: r.min_per_second.unwrap_or(10).min(10_000),
        milli_tokens: AtomicU64::new(0),
        second: AtomicU64::new(0),
        used_this_second: AtomicU32::new(0),
    }
}

fn health(at: &str, h: &HealthCheckSpec, p: &mut Vec<Problem>) -> HealthCheck {
    let at = format!("{at}.health_check");
    if !h.path.starts_with('/') || h.path.contains(['?', '#', ' ']) {
        p.push(Problem::new(
            format!("{at}.path"),
            "expected a path such as /health",
        ));
    }
    let interval = duration(
        &format!("{at}.interval"),
        h.interval.as_ref(),
        Duration::from_secs(10),
        p,
    );
    let timeout = duration(
        &format!("{at}.timeout"),
        h.timeout.as_ref(),
        Duration::from_secs(2),
        p,
    );
    if interval < Duration::from_millis(50) || timeout.is_zero() {
        p.push(Problem::new(
            format!("{at}.interval"),
            "expected an interval of at least 50ms and a timeout above 0",
        ));
    }
    let mut expected = Vec::new();
    for (i, q) in h.expected_statuses.iter().enumerate() {
        match status_range(&q.to_string()) {
            Some(r) => expected.push(r),
            None => p.push(Problem::new(
                format!("{at}.expected_statuses[{i}]"),
                "expected a status such as 200 or a class such as 2xx",
            )),
        }
    }
    if expected.is_empty() {
        expected.push((200, 200));
    }
    let threshold = |v: Option<u32>, d: u32, name: &str, p: &mut Vec<Problem>| {
        let v = v.unwrap_or(d);
        if !(1..=100).contains(&v) {
            p.push(Problem::new(format!("{at}.{name}"), "expected 1 to 100"));
        }
        v
    };
    HealthCheck {
        path: h.path.clone(),
        interval,
        timeout,
        healthy_threshold: threshold(h.healthy_threshold, 2, "healthy_threshold", p),
        unhealthy_threshold: threshold(h.unhealthy_threshold, 3, "unhealthy_threshold", p),
        expected: Statuses::new(expected),
    }
}

/// `503` or `5xx`, within 100..=599.
fn status_range(text: &str) -> Option<(u16, u16)> {
    if let Some(class) = text.strip_suffix("xx").or_else(|| text.strip_suffix("XX")) {
        let c: u16 = class.parse().ok().filter(|c| (1..=5).contains(c))?;
        return Some((c * 100, c * 100 + 99));
    }
    let s: u16 = text.parse().ok().filter(|s| (100..=599).contains(s))?;
    Some((s, s))
}

/// One cycle of smooth weighted round robin (nginx's): each endpoint appears `weight`
/// times (weights divided by their common divisor), spread out rather than in runs.
fn schedule(endpoints: &[Endpoint]) -> Box<[u16]> {
    let g = endpoints
        .iter()
        .map(|e| e.weight)
        .filter(|&w| w > 0)
        .fold(0, gcd);
    if g == 0 {
        return Box::new([]);
    }
    let weights: Vec<i64> = endpoints.iter().map(|e| i64::from(e.weight / g)).collect();
    let total: i64 = weights.iter().sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, w) in current.iter_mut().zip(&weights) {
            *c += w;
        }
        let best = (0..current.len()).max_by_key(|&i| (current[i], std::cmp::Reverse(i)));
        if let Some(b) = best {
            current[b] -= total;
            out.push(b as u16);
        }
    }
    out.into_boxed_slice()
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
#[path = "resilience_tests.rs"]
mod tests;
