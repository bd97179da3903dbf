//! One compiled API: what the router hands a request to. Its own module so validation,
//! the router and the snapshot can all name it without importing each other.

use std::sync::Arc;
use std::time::Duration;

use turnpike_model::LoadBalancing;

use crate::endpoint::Endpoint;
use crate::host::HostPattern;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::template::Template;

/// An API ready to serve.
#[derive(Debug)]
#[non_exhaustive]
pub struct CompiledApi {
    pub name: String,
    /// `/pets`: no trailing slash.
    pub context: String,
    pub version: String,
    /// Also served at `/{context}/...`.
    pub default_version: bool,
    /// The host pattern this API is limited to, lower case (`*.example.com` kept as
    /// written); `None` for any host.
    pub host: Option<String>,
    pub endpoints: Vec<Endpoint>,
    /// Where SANDBOX keys' calls go (empty: they get 403 `sandbox_not_configured`).
    pub sandbox_endpoints: Vec<Endpoint>,
    pub load_balancing: LoadBalancing,
    /// Suspension, circuit breaker, retries, health checks, weights; `None` for an API
    /// without any, whose requests take the plain round-robin path.
    pub resilience: Option<Arc<crate::resilience::Resilience>>,
    /// Largest request body accepted; `None` for no limit.
    pub max_body_bytes: Option<u64>,
    /// Read the body (up to a size) before connecting upstream; `None`: stream it.
    pub request_buffering: Option<crate::buffering::RequestBuffering>,
    pub connect_timeout: Duration,
    /// Time allowed from sending the request to the upstream's response headers.
    pub response_timeout: Duration,
    /// Longest wait between two reads of the upstream's response body; `None`: no
    /// limit (a long stream lives as long as its back end sends).
    pub read_idle_timeout: Option<Duration>,
    /// What runs for every request of this API, in order (`crate::chain`): lifecycle,
    /// body limit, auth, throttle and the API's `policies:`.
    pub chain: turnpike_policy::Chain,
    /// Name, context and version, shared with observers (analytics) without copying.
    pub label: Arc<turnpike_policy::ApiLabel>,
    /// How lenient the API is about request paths (`;` parameters, letter case).
    pub paths: turnpike_model::PathsSpec,
    /// What the router indexes it by.
    pub(crate) routes: Arc<Routes>,
}

impl CompiledApi {
    /// The id analytics, subscriptions and metrics name the API by; a host-limited API's
    /// is prefixed with its host, as the router tells such APIs apart by it.
    pub fn labelled_id(&self) -> String {
        let id = turnpike_model::api_id(&self.context, &self.version);
        match &self.host {
            Some(h) => format!("{h}{id}"),
            None => id,
        }
    }
}

/// What the router indexes an API by. Kept with the compiled API, so a snapshot that
/// reuses the API (`crate::incremental`) indexes it again without its spec.
#[derive(Debug)]
pub(crate) struct Routes {
    pub host: Option<HostPattern>,
    /// Index in the file the API was compiled from, for problem paths.
    pub index: usize,
    pub resources: Vec<CheckedResource>,
    /// The API answers its own errors (a SOAP pass-through's Faults), so the paths below
    /// its prefix that no resource serves are its 404s (see `router`).
    pub owns_unmatched: bool,
    /// The MCP endpoint of an API with an `mcp:` section (docs/mcp.md).
    pub mcp_endpoint: Option<McpEndpoint>,
}

/// Where an API's MCP server answers: `/mcp{context}/{version}`, for `POST` (JSON-RPC
/// messages) and `DELETE` (a session's end); a `GET` gets 405 (no server stream)
/// unless the endpoint proxies a remote server, whose stream it relays.
#[derive(Debug)]
pub(crate) struct McpEndpoint {
    pub route: String,
    /// What analytics names the endpoint's own requests by (a tool call is named by its
    /// tool).
    pub resource: Arc<str>,
    pub origin: String,
    /// `GET` opens the server stream too (a proxied remote server's, relayed).
    pub server_stream: bool,
}

impl Routes {
    /// Whether `self` indexes into the same routes as `other` (problem paths aside).
    pub(crate) fn same_as(&self, other: &Routes) -> bool {
        let resource = |a: &CheckedResource, b: &CheckedResource| {
            a.template == b.template && a.path == b.path && a.methods == b.methods
        };
        self.host == other.host
            && self.owns_unmatched == other.owns_unmatched
            && self.mcp_endpoint.as_ref().map(|m| &m.route)
                == other.mcp_endpoint.as_ref().map(|m| &m.route)
            && self.resources.len() == other.resources.len()
            && self
                .resources
                .iter()
                .zip(&other.resources)
                .all(|(a, b)| resource(a, b))
    }
}

#[derive(Debug)]
pub(crate) struct CheckedResource {
    pub template: Template,
    /// The path template as written (what analytics names the resource by).
    pub path: Arc<str>,
    pub methods: MethodSet,
    /// Document path of the resource's `path`, for problems found when indexing.
    pub origin: String,
}
