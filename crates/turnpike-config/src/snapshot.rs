//! The compiled snapshot a gateway serves from: the APIs, ready to proxy to, and the
//! router over them. Immutable once built; a reload builds a new one.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Method};
use turnpike_model::{GatewayFile, LoadBalancing};

use crate::endpoint::Endpoint;
use crate::error::{ConfigError, Problems};
use crate::router::{Lookup, Router};

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
    pub load_balancing: LoadBalancing,
    /// Largest request body accepted; `None` for no limit.
    pub max_body_bytes: Option<u64>,
    /// Read the body (up to a size) before connecting upstream; `None`: stream it.
    pub request_buffering: Option<crate::buffering::RequestBuffering>,
    pub connect_timeout: Duration,
    /// Time allowed from sending the request to the upstream's response headers.
    pub response_timeout: Duration,
    /// Authentication and authorisation; `None` for an open, published API.
    pub security: Option<Arc<crate::security::ApiSecurity>>,
    /// Throttling; `None` when the API is not throttled.
    pub throttle: Option<Arc<crate::throttling::ApiThrottle>>,
    /// Request/response transformations; `None` when the API has none.
    pub mediation: Option<Arc<crate::mediation::ApiMediation>>,
    /// What runs for every request of this API, in order (`crate::chain`): lifecycle,
    /// body limit, auth, throttle and the API's `policies:`.
    pub chain: turnpike_policy::Chain,
    /// Name, context and version, shared with observers (analytics) without copying.
    pub label: Arc<turnpike_policy::ApiLabel>,
    /// How lenient the API is about request paths (`;` parameters, letter case).
    pub paths: turnpike_model::PathsSpec,
}

/// What the router says about a request.
#[derive(Debug)]
pub enum RouteResult<'a> {
    /// `upstream_path` is the part of the request path after `/context/version`
    /// (always starting with '/'), without the query string.
    Matched {
        api: &'a Arc<CompiledApi>,
        upstream_path: &'a str,
        /// The matched resource's path template as written (`/pets/{id}`).
        resource: &'a Arc<str>,
    },
    /// The path matches a resource of `api`, the method does not: answer 405 with this
    /// `Allow` (after the API's pre-route policies, which may answer a CORS preflight).
    MethodNotAllowed {
        api: &'a Arc<CompiledApi>,
        upstream_path: &'a str,
        allow: HeaderValue,
        resource: &'a Arc<str>,
    },
    /// No resource of `api` serves the path, which lies below `api`'s prefix and is
    /// owned by it (an API that answers its own errors, e.g. a SOAP pass-through):
    /// answer 404 through the API's chain.
    NotFoundIn {
        api: &'a Arc<CompiledApi>,
        upstream_path: &'a str,
    },
    NotFound,
}

impl<'a> RouteResult<'a> {
    /// The API the request went to, if any.
    pub fn api(&self) -> Option<&'a Arc<CompiledApi>> {
        match self {
            RouteResult::Matched { api, .. }
            | RouteResult::MethodNotAllowed { api, .. }
            | RouteResult::NotFoundIn { api, .. } => Some(api),
            RouteResult::NotFound => None,
        }
    }
}

/// Immutable, versioned view that a gateway serves from.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub version: u64,
    pub apis: Vec<Arc<CompiledApi>>,
    router: Router,
    /// The compiled subscription table, when the file has a security section.
    subscriptions: Option<Arc<turnpike_auth::Subscriptions>>,
    /// Some API matches paths case-insensitively (see [`Snapshot::folds_case`]).
    folds_case: bool,
}

impl Snapshot {
    /// Reads, validates and compiles a YAML file (version 1).
    pub fn load(path: &Path) -> Result<Snapshot, ConfigError> {
        Self::load_with(path, &crate::PolicyRuntime::new())
    }

    /// [`Snapshot::load`] against a gateway's long-lived policy runtime.
    pub fn load_with(path: &Path, runtime: &crate::PolicyRuntime) -> Result<Snapshot, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml_with(&text, &path.display().to_string(), runtime)
    }

    /// Validates and compiles YAML text; `source_name` names it in errors.
    pub fn from_yaml(text: &str, source_name: &str) -> Result<Snapshot, ConfigError> {
        Self::from_yaml_with(text, source_name, &crate::PolicyRuntime::new())
    }

    /// [`Snapshot::from_yaml`] against a gateway's long-lived policy runtime.
    pub fn from_yaml_with(
        text: &str,
        source_name: &str,
        runtime: &crate::PolicyRuntime,
    ) -> Result<Snapshot, ConfigError> {
        crate::format::from_yaml(text, source_name, 1, runtime)
    }

    /// Compiles a file already in memory (e.g. shipped as JSON by the control plane).
    pub fn compile(file: GatewayFile, version: u64) -> Result<Snapshot, ConfigError> {
        crate::compile(file, version)
    }

    pub(crate) fn assemble(
        version: u64,
        apis: Vec<Arc<CompiledApi>>,
        router: Router,
        subscriptions: Option<Arc<turnpike_auth::Subscriptions>>,
    ) -> Snapshot {
        let folds_case = apis.iter().any(|a| a.paths.case_insensitive);
        Snapshot {
            version,
            apis,
            router,
            subscriptions,
            folds_case,
        }
    }

    /// Whether some API matches paths in any letter case (`paths.case_insensitive`): only
    /// then does a gateway look at a path's case before routing.
    #[inline]
    pub fn folds_case(&self) -> bool {
        self.folds_case
    }

    /// The compiled subscription table (for [`crate::compile_reusing`]).
    pub fn subscriptions(&self) -> Option<Arc<turnpike_auth::Subscriptions>> {
        self.subscriptions.clone()
    }

    /// Finds the API and upstream path for a request. `host` is the `Host` header (or
    /// `:authority`) as received, port included or not; `path` is the request path,
    /// with or without its query.
    #[inline]
    pub fn route<'a>(
        &'a self,
        host: Option<&str>,
        method: &Method,
        path: &'a str,
    ) -> RouteResult<'a> {
        match self.router.find(host, method, path) {
            Lookup::Matched {
                api,
                upstream_path,
                resource,
            } => match self.apis.get(api) {
                Some(api) => RouteResult::Matched {
                    api,
                    upstream_path,
                    resource,
                },
                None => RouteResult::NotFound,
            },
            Lookup::MethodNotAllowed {
                api,
                upstream_path,
                allow,
                resource,
            } => match self.apis.get(api) {
                Some(api) => RouteResult::MethodNotAllowed {
                    api,
                    upstream_path,
                    allow,
                    resource,
                },
                None => RouteResult::NotFound,
            },
            Lookup::NotFoundIn { api, upstream_path } => match self.apis.get(api) {
                Some(api) => RouteResult::NotFoundIn { api, upstream_path },
                None => RouteResult::NotFound,
            },
            Lookup::NotFound => RouteResult::NotFound,
        }
    }
}

impl From<Problems> for ConfigError {
    fn from(p: Problems) -> Self {
        ConfigError::Problems(p)
    }
}
