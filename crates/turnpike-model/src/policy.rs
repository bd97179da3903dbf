//! An API's `policies:` list: each entry is one policy kind with its settings, written
//! as `- kind: { ... }` (e.g. `- cors: { allow_origins: ["https://app.example"] }`).
//! `turnpike-config` validates each entry and builds it into the API's chain; a new kind
//! is one field here, one build function there and one `Policy` implementation (see
//! docs/ARCHITECTURE.md, "Adding a policy kind").

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// One entry of an API's `policies:` list: exactly one kind's settings (a struct of
/// optional kinds rather than an enum, so YAML and JSON write it the same way:
/// `- cors: {...}` / `{"cors": {...}}`). A new kind is one more field here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Cross-origin resource sharing: preflights answered at the gateway (before
    /// authentication), `Access-Control-*` headers on every response, errors included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<CorsSpec>,
}

impl PolicySpec {
    /// The kinds this entry names, as written in the file (valid entries name one).
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        if self.cors.is_some() {
            k.push("cors");
        }
        k
    }
}

/// CORS settings (the Fetch standard's names; WSO2's `corsConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorsSpec {
    /// Origins allowed (`https://app.example`), or `"*"` for any.
    pub allow_origins: Vec<String>,
    /// Methods a preflight may ask for; GET, HEAD, POST, PUT, PATCH, DELETE when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_methods: Vec<String>,
    /// Request headers a preflight may ask for (case-insensitive), or `"*"`;
    /// `authorization`, `content-type`, `apikey` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_headers: Vec<String>,
    /// Response headers the browser lets the page read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// Send `Access-Control-Allow-Credentials: true` (needs explicit origins).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_credentials: bool,
    /// How long a browser may cache a preflight answer (`"10m"`, or seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<Quantity>,
}

/// The dates of a deprecated API (`deprecation:`), each an RFC 3339 date or date-time in
/// UTC (`2026-06-30` or `2026-06-30T12:00:00Z`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeprecationSpec {
    /// When the API was (or will be) deprecated: the `Deprecation` header. When absent,
    /// the time the gateway loaded the API as deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// When the API stops answering: the `Sunset` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sunset: Option<String>,
    /// A page about the deprecation: `Link: <url>; rel="deprecation"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}
