//! The compiled snapshot and a first, naive router (linear scan). To be replaced by
//! an indexed router whose cost stays flat from 1 to 10,000 APIs.

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Method, Uri};
use turnpike_model::GatewayFile;

/// Why a file could not become a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

/// One upstream endpoint, pre-parsed.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub uri: Uri,
    /// "http" or "https"
    pub scheme: http::uri::Scheme,
    pub authority: http::uri::Authority,
    /// Path prefix of the endpoint URL without a trailing slash ("" for none).
    pub base_path: String,
}

/// An API ready to serve.
#[derive(Debug)]
pub struct CompiledApi {
    pub name: String,
    pub context: String,
    pub version: String,
    pub endpoints: Vec<Endpoint>,
    pub max_body_bytes: Option<u64>,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    resources: Vec<(String, Vec<Method>)>,
}

/// What the router says about a request.
#[derive(Debug)]
pub enum RouteResult<'a> {
    /// `upstream_path` is the part of the request path after `/context/version`
    /// (always starting with '/'), without the query string.
    Matched {
        api: &'a Arc<CompiledApi>,
        upstream_path: &'a str,
    },
    MethodNotAllowed {
        allow: HeaderValue,
    },
    NotFound,
}

/// Immutable, versioned view that a gateway serves from.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub version: u64,
    pub apis: Vec<Arc<CompiledApi>>,
}

impl Snapshot {
    pub fn load(path: &std::path::Path) -> Result<Snapshot, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    pub fn from_yaml(text: &str, source_name: &str) -> Result<Snapshot, ConfigError> {
        let file: GatewayFile = serde_yaml::from_str(text)
            .map_err(|e| ConfigError::Invalid(format!("{source_name}: {e}")))?;
        let mut apis = Vec::new();
        for a in file.apis {
            let mut endpoints = Vec::new();
            for e in &a.endpoints {
                let uri: Uri = e
                    .parse()
                    .map_err(|_| ConfigError::Invalid(format!("bad endpoint {e}")))?;
                let (Some(scheme), Some(authority)) =
                    (uri.scheme().cloned(), uri.authority().cloned())
                else {
                    return Err(ConfigError::Invalid(format!("bad endpoint {e}")));
                };
                let base_path = uri.path().trim_end_matches('/').to_string();
                endpoints.push(Endpoint {
                    uri,
                    scheme,
                    authority,
                    base_path,
                });
            }
            let resources = a
                .resources
                .iter()
                .map(|r| {
                    let methods = r
                        .methods
                        .iter()
                        .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
                        .collect();
                    (r.path.clone(), methods)
                })
                .collect();
            apis.push(Arc::new(CompiledApi {
                name: a.name,
                context: a.context.trim_end_matches('/').to_string(),
                version: a.version,
                endpoints,
                max_body_bytes: None,
                connect_timeout: Duration::from_secs(5),
                response_timeout: Duration::from_secs(60),
                resources,
            }));
        }
        Ok(Snapshot { version: 1, apis })
    }

    /// Naive: linear scan, only `/*` resources and exact paths.
    pub fn route<'a>(
        &'a self,
        _host: Option<&str>,
        method: &Method,
        path: &'a str,
    ) -> RouteResult<'a> {
        for api in &self.apis {
            let prefix = format!("{}/{}", api.context, api.version);
            let Some(rest) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            if !(rest.is_empty() || rest.starts_with('/')) {
                continue;
            }
            let rest = if rest.is_empty() { "/" } else { rest };
            let mut allow = Vec::new();
            for (p, methods) in &api.resources {
                if p == "/*" || p == rest {
                    if methods.contains(method) {
                        return RouteResult::Matched {
                            api,
                            upstream_path: rest,
                        };
                    }
                    allow.extend(methods.iter().map(|m| m.as_str().to_string()));
                }
            }
            if !allow.is_empty() {
                let allow = HeaderValue::from_str(&allow.join(", "))
                    .unwrap_or(HeaderValue::from_static(""));
                return RouteResult::MethodNotAllowed { allow };
            }
        }
        RouteResult::NotFound
    }
}
