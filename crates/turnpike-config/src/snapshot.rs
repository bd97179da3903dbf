//! The compiled snapshot a gateway serves from: the APIs, ready to proxy to, and the
//! router over them. Immutable once built; a reload builds a new one.

use std::sync::Arc;

use http::{HeaderValue, Method};
use turnpike_model::GatewayFile;

use crate::api::CompiledApi;
use crate::error::{ConfigError, Problems};
use crate::router::{Lookup, Router};

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
    /// Shared with the next snapshot when no API's routes changed (`crate::incremental`).
    router: Arc<Router>,
    /// The compiled subscription table, when the file has a security section.
    subscriptions: Option<Arc<turnpike_auth::Subscriptions>>,
    /// Some API matches paths case-insensitively (see [`Snapshot::folds_case`]).
    folds_case: bool,
    /// Each API's reuse key, when compiled by [`crate::compile_changes`].
    reuse: Option<crate::incremental::ReuseKeys>,
    /// The file-wide sections as compiled, for the next [`crate::compile_changes`].
    shared: crate::incremental::Shared,
}

impl Snapshot {
    /// Compiles a file already in memory (e.g. shipped as JSON by the control plane).
    pub fn compile(file: GatewayFile, version: u64) -> Result<Snapshot, ConfigError> {
        crate::compile(file, version)
    }

    pub(crate) fn assemble(
        version: u64,
        apis: Vec<Arc<CompiledApi>>,
        router: Arc<Router>,
        subscriptions: Option<Arc<turnpike_auth::Subscriptions>>,
    ) -> Snapshot {
        let folds_case = apis.iter().any(|a| a.paths.case_insensitive);
        Snapshot {
            version,
            apis,
            router,
            subscriptions,
            folds_case,
            reuse: None,
            shared: Default::default(),
        }
    }

    pub(crate) fn with_shared(mut self, shared: crate::incremental::Shared) -> Snapshot {
        self.shared = shared;
        self
    }

    pub(crate) fn router(&self) -> &Arc<Router> {
        &self.router
    }

    pub(crate) fn shared(&self) -> &crate::incremental::Shared {
        &self.shared
    }

    pub(crate) fn with_reuse_keys(mut self, keys: crate::incremental::ReuseKeys) -> Snapshot {
        self.reuse = Some(keys);
        self
    }

    pub(crate) fn reuse_keys(&self) -> Option<&crate::incremental::ReuseKeys> {
        self.reuse.as_ref()
    }

    /// How many APIs this snapshot's compile built; the others were reused from the
    /// snapshot it replaced ([`crate::compile_changes`]). All of them for a snapshot
    /// compiled otherwise.
    pub fn compiled_apis(&self) -> usize {
        self.reuse.as_ref().map_or(self.apis.len(), |k| k.built)
    }

    pub(crate) fn subscriptions_ref(&self) -> Option<&turnpike_auth::Subscriptions> {
        self.subscriptions.as_deref()
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
