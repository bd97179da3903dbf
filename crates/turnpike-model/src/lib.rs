//! Turnpike's domain data: the declarative file format (`apis.yaml`) as plain serde
//! types. No IO, no validation beyond what serde's shape gives; `turnpike-config`
//! validates and compiles these into a gateway snapshot. Values whose meaning needs
//! checking (URLs, sizes, durations, methods, path templates) stay as written here, so
//! that validation can report every bad value at once instead of the first one.
//!
//! The same types travel as JSON from the control plane to a gateway.

use serde::{Deserialize, Serialize};

pub mod ai;
pub mod ai_guard;
pub mod applications;
pub mod clock;
pub mod fnv;
pub mod graphql;
pub mod mcp;
pub mod mediation;
pub mod policy;
mod quantity;
pub mod resilience;
pub mod rest;
pub mod security;
pub mod soap;
pub mod throttling;

pub use quantity::Quantity;
pub use security::SubscriptionState;

/// The id an API version is known by (`{context}/{version}`, e.g. `/pizza/v1`): what
/// subscriptions, sync deltas and throttle counters name it by.
pub fn api_id(context: &str, version: &str) -> String {
    format!("{context}/{version}")
}

/// The only file format version this crate reads.
pub const FORMAT_VERSION: u32 = 1;

/// The whole declarative file: what a DB-less gateway serves.
///
/// Later sections (applications, policies, ...) are added as new optional fields, so a
/// file written today stays valid; a key this version does not know is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    /// Format version of the file; `1` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u32>,
    #[serde(default)]
    pub apis: Vec<ApiSpec>,
    /// Trusted issuers, API keys, basic users, subscriptions (see [`security`]).
    #[serde(default, skip_serializing_if = "security::SecuritySpec::is_empty")]
    pub security: security::SecuritySpec,
    /// Subscription, application and advanced throttling policies (see [`throttling`]);
    /// WSO2's default tiers are available by name without declaring them.
    #[serde(default, skip_serializing_if = "throttling::ThrottleSpec::is_empty")]
    pub throttling: throttling::ThrottleSpec,
    /// A control plane's applications, subscriptions and keys by reference (see
    /// [`applications`]); a DB-less gateway ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<applications::ApplicationSpec>,
}

/// One API version as a publisher declares it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSpec {
    pub name: String,
    /// Path prefix, e.g. `/pets`; starts with '/'.
    pub context: String,
    /// Version segment after the context, e.g. `v1`.
    pub version: String,
    /// Also serve this version at `/{context}/...`.
    #[serde(default)]
    pub default: bool,
    /// Serve this API only for this `Host` (exact, or `*.example.com`); any host when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Upstream base URLs (`http://` or `https://`); a path in the URL prefixes the
    /// upstream path.
    /// Each a URL or `{url, weight, timeouts}` (see [`resilience::EndpointSpec`]).
    /// An AI API (`ai:`) may leave them out: its providers' URLs are its endpoints.
    #[serde(default)]
    pub endpoints: Vec<resilience::EndpointSpec>,
    /// Where calls with SANDBOX keys go; such calls get 403 `sandbox_not_configured`
    /// when this is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_endpoints: Vec<resilience::EndpointSpec>,
    /// How requests are spread over `endpoints`.
    #[serde(default)]
    pub load_balancing: LoadBalancing,
    /// The protocol spoken to `http://` endpoints: HTTP/1.1 when omitted, `h2c` for
    /// HTTP/2 with prior knowledge (gRPC back ends). `https://` endpoints negotiate
    /// HTTP/2 or HTTP/1.1 by ALPN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_protocol: Option<UpstreamProtocol>,
    /// Largest request body accepted: a byte count or a size such as `"10MiB"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<Quantity>,
    /// Read the request body at the gateway before connecting upstream (nginx's
    /// `proxy_request_buffering`), so a slow client holds no upstream connection. On
    /// when omitted (see [`RequestBufferingSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_buffering: Option<RequestBufferingSpec>,
    #[serde(default)]
    pub timeouts: TimeoutSpec,
    /// Endpoint suspension, circuit breaker, retries, health checks (docs/resilience.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resilience: Option<resilience::ResilienceSpec>,
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Which credentials the API accepts; open when omitted (or `auth: none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<security::ApiAuthSpec>,
    /// Lifecycle state (`PUBLISHED` when omitted); `BLOCKED`, `CREATED` and `RETIRED`
    /// refuse every call with 403.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<String>,
    /// When a `DEPRECATED` API was deprecated and when it goes away: its responses carry
    /// `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `Link` to the notice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<policy::DeprecationSpec>,
    /// API-level advanced throttling policy (e.g. `10KPerMin`), shared by every caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling: Option<String>,
    /// A GraphQL API (type GRAPHQL): its schema, cost model, limits and operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphql: Option<graphql::GraphqlSpec>,
    /// Request and response transformations (see [`mediation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mediation: Option<mediation::MediationSpec>,
    /// More policies, each `- kind: {settings}` (see [`policy::PolicySpec`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<policy::PolicySpec>,
    /// A SOAP service (pass-through or published as REST) and its WSDL (see [`soap`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soap: Option<soap::SoapSpec>,
    /// An LLM API: its providers, model routes and request caps (see [`ai`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<ai::AiSpec>,
    /// How lenient this API is about request paths (`;` parameters, letter case); the
    /// strict default refuses `;` and matches templates case-sensitively.
    #[serde(default, skip_serializing_if = "PathsSpec::is_default")]
    pub paths: PathsSpec,
    /// The subscription tiers a control plane offers this API at (`Unlimited` when
    /// omitted); gateways read each subscription's own tier, not this list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscription_tiers: Vec<String>,
    /// Also an MCP server at `/mcp{context}/{version}`: its operations as tools (see
    /// [`mcp`], docs/mcp.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<mcp::McpSpec>,
}

/// Per-API request-path options (docs/security.md, "Request paths").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathsSpec {
    /// What a `;` in a path segment (`/admin;jsessionid=x/users`) does.
    #[serde(default)]
    pub matrix_parameters: MatrixParameters,
    /// Templates match in any ASCII letter case (`/Admin/x` is `/admin/x`), for back
    /// ends that ignore case (IIS); the path is forwarded in lower case.
    #[serde(default)]
    pub case_insensitive: bool,
}

impl PathsSpec {
    pub fn is_default(&self) -> bool {
        *self == PathsSpec::default()
    }
}

/// What the gateway does with `;` parameters in path segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixParameters {
    /// 400 `invalid_path` (servlet containers strip them, so `/admin;x` would reach a
    /// servlet that the gateway's rules never judged).
    #[default]
    Refuse,
    /// Removed from every segment before routing; the upstream gets the path without
    /// them, the same path routing and authorisation judged.
    Strip,
}

/// A resource: a path template and the methods it accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// `/pets`, `/pets/{id}`, `/pets/*`, `/*`.
    pub path: String,
    /// HTTP methods, or `"*"` for any.
    pub methods: Vec<String>,
    /// Scopes of which the caller needs any one (secured APIs only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// `auth: none` opens this resource of a secured API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<security::ResourceAuth>,
    /// Resource-level advanced throttling policy, counted per API and resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling: Option<String>,
    /// This resource's transformations; each direction given replaces the API's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mediation: Option<mediation::MediationSpec>,
    /// This resource's response cache: its own settings over the API's `cache`, or
    /// `false` to switch it off (docs/caching.md, "Per resource").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<policy::ResourceCacheSpec>,
}

/// Upstream timeouts as written: durations such as `"5s"`, `"250ms"`, `"2m"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Quantity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Quantity>,
    /// Longest wait for the next bytes of the upstream's response body once its headers
    /// came; no limit when omitted. The guard for long responses (Server-Sent Events),
    /// which no total-time limit may cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_idle: Option<Quantity>,
}

/// The protocol spoken to plain-HTTP endpoints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamProtocol {
    /// HTTP/1.1 (`https://` endpoints: HTTP/2 when ALPN picks it).
    #[default]
    Http1,
    /// HTTP/2 over cleartext with prior knowledge (RFC 9113 section 3.3): one
    /// multiplexed connection per endpoint.
    H2c,
}

/// Request buffering as written (`request_buffering: { size: 256KiB, timeout: 20s }`,
/// or `{ enabled: false }` for an API whose clients stream a body the back end answers
/// while it still arrives).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestBufferingSpec {
    /// `false` streams every body straight through, as it arrives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Bytes read before connecting (1 MiB, and never more than `max_body_size`, when
    /// omitted); the rest of a larger body then streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Time the client gets to send those bytes (30 s when omitted); later: 408.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Quantity>,
}

/// How a request picks one of several endpoints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancing {
    /// Each request goes to the next endpoint in turn; on connect failure, the next one.
    #[default]
    RoundRobin,
    /// Always the first endpoint that accepts a connection, in the order written.
    Failover,
    /// Round robin in proportion to each endpoint's `weight` (smooth, as nginx).
    WeightedRoundRobin,
    /// The endpoint with the fewest requests in flight from this gateway.
    LeastConnections,
}
