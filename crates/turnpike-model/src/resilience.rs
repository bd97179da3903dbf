//! Upstream resilience as written: an endpoint as a URL or an object (weight, its own
//! timeouts), and an API's `resilience:` section (WSO2's endpoint suspension, a circuit
//! breaker, retries, active health checks). `turnpike-config` validates and compiles
//! these; docs/resilience.md says what each field means and maps WSO2's names.

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// One upstream endpoint: `"http://host:port/base"`, or the same URL with settings.
/// A plain string serializes as a string, so files and wire hashes written before
/// endpoint objects existed stay byte-for-byte the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EndpointSpec {
    Url(String),
    Detailed(EndpointDetail),
}

/// An endpoint with its own settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointDetail {
    pub url: String,
    /// Share of requests under `weighted_round_robin` (1 when omitted, 0 to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// This endpoint's connect and read timeouts; the API's `timeouts` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<EndpointTimeouts>,
}

/// Per-endpoint timeouts (`read`: from the request sent to the response headers, the
/// API-level `timeouts.response`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointTimeouts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<Quantity>,
}

impl EndpointSpec {
    /// The endpoint's URL as written.
    pub fn url(&self) -> &str {
        match self {
            EndpointSpec::Url(u) => u,
            EndpointSpec::Detailed(d) => &d.url,
        }
    }
}

impl From<String> for EndpointSpec {
    fn from(url: String) -> Self {
        EndpointSpec::Url(url)
    }
}

impl From<&str> for EndpointSpec {
    fn from(url: &str) -> Self {
        EndpointSpec::Url(url.to_owned())
    }
}

impl PartialEq<&str> for EndpointSpec {
    fn eq(&self, other: &&str) -> bool {
        matches!(self, EndpointSpec::Url(u) if u == other)
    }
}

/// An API's `resilience:` section; every part is optional and off when omitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResilienceSpec {
    /// How long a failing endpoint is left out (WSO2 `suspendOnFailure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<SuspensionSpec>,
    /// When failures suspend an endpoint (consecutive, or a ratio of recent calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreakerSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<RetrySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckSpec>,
}

/// WSO2's suspension: which failures count, and for how long an endpoint rests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspensionSpec {
    /// Failures that count: `connect_failure`, `timeout`, `reset`, or a status code
    /// (`503`, `5xx`). `[connect_failure, timeout, reset]` when omitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<Quantity>,
    /// First suspension (WSO2 `initialDuration`; 30s when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_duration: Option<Quantity>,
    /// Each further suspension lasts this many times the last one (WSO2
    /// `progressionFactor`; 1 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progression_factor: Option<f64>,
    /// The longest suspension (WSO2 `maximumDuration`; 5m when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<Quantity>,
}

/// When an endpoint's circuit opens (it is suspended): after this many consecutive
/// counted failures, or when the failed share of the last `window` calls reaches
/// `failure_ratio`. Without this section one counted failure suspends (WSO2's
/// `retriesBeforeSuspension: 0`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_ratio: Option<f64>,
    /// Calls the ratio is computed over (20 when omitted, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
}

/// Retries on another endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Further attempts after the first (at most the other endpoints; at most 5).
    pub attempts: u32,
    /// Methods retried: the idempotent ones (`GET, HEAD, OPTIONS, PUT, DELETE`) when
    /// omitted; `POST` or `PATCH` only when listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Retries allowed, as a percentage of requests (20 when omitted), plus
    /// `min_per_second` so a quiet API can still retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_percent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_per_second: Option<u32>,
}

/// An active health check each gateway runs against each endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckSpec {
    /// Path requested with GET (after the endpoint's base path), e.g. `/health`.
    pub path: String,
    /// Time between checks (10s when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Quantity>,
    /// Time a check may take (2s when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Quantity>,
    /// Consecutive passes that bring an endpoint back (2 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_threshold: Option<u32>,
    /// Consecutive failures that take it out (3 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_threshold: Option<u32>,
    /// Statuses that pass (`[200]` when omitted; `2xx` allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected_statuses: Vec<Quantity>,
}
