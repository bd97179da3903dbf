//! Names of the control plane's REST API that its server (`turnpike-admin`) and its
//! command-line client (`turnpike-cli`: `turnpike apply`, `turnpike login`) must agree on,
//! here so the client links neither the server nor its web framework.

use serde_json::{json, Value};

use crate::policy::CorsSpec;

/// The HTTP methods a resource may name (`resources[].methods`).
pub const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// An API's gateway settings: (REST field, the declarative file's field). `graphql`,
/// `mediation`, `requestBuffering`, `resilience` and `ai` are sections in the file's own shape, stored as
/// given and checked by compiling them.
pub const OPTION_FIELDS: [(&str, &str); 14] = [
    ("host", "host"),
    ("loadBalancing", "load_balancing"),
    ("maxBodySize", "max_body_size"),
    ("timeouts", "timeouts"),
    ("apiThrottlingPolicy", "throttling"),
    ("graphql", "graphql"),
    ("mediation", "mediation"),
    ("deprecation", "deprecation"),
    ("paths", "paths"),
    ("requestBuffering", "request_buffering"),
    ("resilience", "resilience"),
    ("upstreamProtocol", "upstream_protocol"),
    ("ai", "ai"),
    ("mcp", "mcp"),
];

/// The built-in public client for REST-API tokens (password and refresh_token grants,
/// no secret: the user's password is the credential).
pub const CLI_CLIENT_ID: &str = "turnpike-cli";

/// An API's CORS setting in the REST API, with WSO2's field names.
pub mod cors {
    use super::*;

    /// The REST field.
    pub const FIELD: &str = "corsConfiguration";

    /// The REST `corsConfiguration` of a file's `cors` policy (`turnpike apply`).
    pub fn from_spec(spec: &CorsSpec) -> Value {
        let mut v = json!({
            "corsConfigurationEnabled": true,
            "accessControlAllowOrigins": spec.allow_origins,
        });
        let lists = [
            ("accessControlAllowMethods", &spec.allow_methods),
            ("accessControlAllowHeaders", &spec.allow_headers),
            ("accessControlExposeHeaders", &spec.expose_headers),
        ];
        for (k, list) in lists {
            if !list.is_empty() {
                v[k] = json!(list);
            }
        }
        if spec.allow_credentials {
            v["accessControlAllowCredentials"] = json!(true);
        }
        if let Some(age) = &spec.max_age {
            v["accessControlMaxAge"] = json!(age);
        }
        v
    }
}

/// An API's response cache in the REST API: `cacheConfiguration`, the file's `cache`
/// policy entry as written (`crate::policy::CacheSpec`, docs/caching.md), purges included.
pub mod cache {
    use super::*;

    /// The REST field.
    pub const FIELD: &str = "cacheConfiguration";

    /// The REST `cacheConfiguration` of a file's `cache` policy (`turnpike apply`).
    pub fn from_spec(spec: &crate::policy::CacheSpec) -> Value {
        serde_json::to_value(spec).unwrap_or(Value::Null)
    }
}
