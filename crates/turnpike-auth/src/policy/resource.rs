//! An API as an OAuth 2.0 protected resource: its resource URI (the gateway's public URL
//! and `/{context}/{version}`), RFC 9728 Protected Resource Metadata (the document the
//! gateway serves at `/.well-known/oauth-protected-resource/{context}/{version}` and
//! the `resource_metadata=` of a 401's challenge), and RFC 8707 audience binding: a token
//! bound to resources (`Principal::resources`) passes only the API it names, and an API
//! with `audience_check` takes no other token. Everything here but the binding check
//! runs on refusals or on the metadata request only.

use http::header::{HOST, WWW_AUTHENTICATE};
use http::request::Parts;
use http::HeaderValue;
use turnpike_policy::{ErrorKind, GatewayError, Identity};

use crate::authz::ScopeRequirement;
use crate::error::AuthError;

/// The well-known prefix of RFC 9728 §3.1; the resource's path follows it.
pub const WELL_KNOWN_PRM: &str = "/.well-known/oauth-protected-resource";

/// The prefix of an API's MCP endpoint (`/mcp/{context}/{version}`, docs/mcp.md): the
/// same API, and the resource URI its agents know it by.
pub const MCP_PREFIX: &str = turnpike_model::mcp::ENDPOINT_PREFIX;

/// Whether `path` is the MCP endpoint of the API at `api_path` (or below it).
pub fn is_mcp_path(path: &str, api_path: &str) -> bool {
    path.strip_prefix(MCP_PREFIX)
        .and_then(|p| p.strip_prefix(api_path))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// One API's view as a protected resource, compiled with its security.
#[derive(Debug, Clone, Default)]
pub struct ResourceMeta {
    /// `/{context}/{version}`: the resource URI's path.
    pub path: String,
    /// The gateway's `--public-url` (no trailing `/`); `None`: the scheme and `Host` the
    /// request came with.
    pub base: Option<String>,
    /// `auth.resource_metadata`: the document is served and 401s name it.
    pub publish: bool,
    /// `auth.audience_check`: only tokens bound to this resource.
    pub audience_check: bool,
    /// The trusted issuers of the file's `security:` (the key manager's public URL).
    pub authorization_servers: Vec<String>,
    /// Every scope some resource of the API asks for.
    pub scopes_supported: Vec<String>,
    /// The API's name, for `resource_name`.
    pub name: String,
}

/// The scheme and authority the client reached: `--public-url` when set, else the
/// request's own (`:authority` or `Host`, quotes dropped: it goes into a header).
fn request_base(https: bool, req: &Parts) -> String {
    let host = req
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers.get(HOST).and_then(|h| h.to_str().ok()))
        .unwrap_or("localhost");
    let scheme = if https { "https" } else { "http" };
    format!("{scheme}://{}", host.replace(['"', '\\'], ""))
}

impl ResourceMeta {
    fn base(&self, https: bool, req: &Parts) -> String {
        match &self.base {
            Some(b) => b.clone(),
            None => request_base(https, req),
        }
    }

    /// The resource's path as the client addresses the API: its MCP endpoint's
    /// (`mcp`) or its own.
    fn resource_path(&self, mcp: bool) -> String {
        match mcp {
            true => format!("{MCP_PREFIX}{}", self.path),
            false => self.path.clone(),
        }
    }

    /// The resource URI (RFC 8707) of this API (its MCP endpoint's with `mcp`) for this
    /// request's gateway address.
    pub fn resource_uri(&self, https: bool, req: &Parts, mcp: bool) -> String {
        format!("{}{}", self.base(https, req), self.resource_path(mcp))
    }

    /// Where the metadata document of this API (of its MCP endpoint) is.
    pub fn metadata_url(&self, https: bool, req: &Parts, mcp: bool) -> String {
        let path = self.resource_path(mcp);
        format!("{}{WELL_KNOWN_PRM}{path}", self.base(https, req))
    }

    /// The RFC 9728 document, when the API publishes one; `mcp`: for its MCP endpoint
    /// (what MCP clients check the `resource` against).
    pub fn document(&self, https: bool, req: &Parts, mcp: bool) -> Option<String> {
        self.publish.then(|| {
            serde_json::json!({
                "resource": self.resource_uri(https, req, mcp),
                "authorization_servers": self.authorization_servers,
                "scopes_supported": self.scopes_supported,
                "bearer_methods_supported": ["header"],
                "resource_name": self.name,
            })
            .to_string()
        })
    }

    /// Whether `uri` is this API's resource URI or its MCP endpoint's, compared without
    /// allocating (the check of every request that carries a resource-bound token).
    fn is_own(&self, uri: &str, https: bool, req: &Parts) -> bool {
        let Some(base) = uri.strip_suffix(self.path.as_str()) else {
            return false;
        };
        let base = base.strip_suffix(MCP_PREFIX).unwrap_or(base);
        if let Some(b) = &self.base {
            return base == b;
        }
        let scheme = if https { "https://" } else { "http://" };
        let Some(authority) = base.strip_prefix(scheme) else {
            return false;
        };
        let host = req
            .uri
            .authority()
            .map(|a| a.as_str())
            .or_else(|| req.headers.get(HOST).and_then(|h| h.to_str().ok()));
        host.is_some_and(|h| h.eq_ignore_ascii_case(authority))
    }

    /// RFC 8707: a token bound to resources must name this one; with `audience_check`
    /// a token bound to none is refused too.
    pub fn check_audience(
        &self,
        identity: &Identity,
        https: bool,
        req: &Parts,
    ) -> Result<(), AuthError> {
        if identity.resources.is_empty() {
            return match self.audience_check {
                true => Err(AuthError::InvalidToken(
                    "the token is not bound to this API (ask for it with resource=)",
                )),
                false => Ok(()),
            };
        }
        match identity
            .resources
            .iter()
            .any(|r| self.is_own(r, https, req))
        {
            true => Ok(()),
            false => Err(AuthError::InvalidToken(
                "the token was issued for another resource",
            )),
        }
    }

    /// Adds `resource_metadata=` (and a `scope=` hint, unless the challenge has one) to
    /// a refusal's `Bearer` challenge (RFC 9728 §5.1), for APIs that publish metadata.
    pub fn challenge(
        &self,
        mut g: GatewayError,
        scopes: Option<&ScopeRequirement>,
        https: bool,
        req: &Parts,
    ) -> GatewayError {
        if !self.publish || g.kind == ErrorKind::Internal {
            return g;
        }
        let Some(old) = g.header(&WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()) else {
            return g;
        };
        let Some(rest) = old.strip_prefix("Bearer realm=\"turnpike\"") else {
            return g;
        };
        let mcp = is_mcp_path(req.uri.path(), &self.path);
        let url = self.metadata_url(https, req, mcp);
        let mut extra = format!(", resource_metadata=\"{url}\"");
        let wanted = match scopes {
            Some(ScopeRequirement::AnyOf(s) | ScopeRequirement::AllOf(s)) => s.join(" "),
            _ => String::new(),
        };
        if !wanted.is_empty() && !rest.contains("scope=") {
            extra.push_str(&format!(", scope=\"{}\"", wanted.replace(['"', '\\'], "")));
        }
        let value = format!("Bearer realm=\"turnpike\"{extra}{rest}");
        if let Ok(v) = HeaderValue::from_str(&value) {
            g = g.with_header(WWW_AUTHENTICATE, v);
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use turnpike_policy::{CredentialKind, Principal};

    use super::*;

    fn meta(base: Option<&str>) -> ResourceMeta {
        ResourceMeta {
            path: "/pizza/v1".into(),
            base: base.map(str::to_owned),
            publish: true,
            authorization_servers: vec!["http://km".into()],
            ..ResourceMeta::default()
        }
    }

    fn parts(host: &str) -> Parts {
        let (p, ()) = http::Request::get("/pizza/v1/menu")
            .header(HOST, host)
            .body(())
            .unwrap()
            .into_parts();
        p
    }

    fn bound(resources: &[&str]) -> Identity {
        Identity {
            kind: CredentialKind::Jwt,
            subject: "s".into(),
            expires_at: None,
            token_id: None,
            principal: Arc::new(Principal {
                resources: resources.iter().map(|r| r.to_string()).collect(),
                ..Principal::default()
            }),
        }
    }

    #[test]
    fn resource_uri_is_the_public_url_or_the_request_host() {
        let req = parts("gw.example:8280");
        assert_eq!(
            meta(None).resource_uri(false, &req, false),
            "http://gw.example:8280/pizza/v1"
        );
        assert_eq!(
            meta(Some("https://api.example")).metadata_url(false, &req, false),
            "https://api.example/.well-known/oauth-protected-resource/pizza/v1"
        );
        assert_eq!(
            meta(None).resource_uri(false, &req, true),
            "http://gw.example:8280/mcp/pizza/v1"
        );
        assert!(is_mcp_path("/mcp/pizza/v1", "/pizza/v1"));
        assert!(!is_mcp_path("/mcp/pizza/v10", "/pizza/v1"));
        assert!(!is_mcp_path("/pizza/v1", "/pizza/v1"));
    }

    #[test]
    fn a_bound_token_passes_only_its_own_api() {
        let req = parts("gw:1");
        let m = meta(None);
        assert!(m
            .check_audience(&bound(&["http://gw:1/pizza/v1"]), false, &req)
            .is_ok());
        assert!(m
            .check_audience(&bound(&["http://gw:1/mcp/pizza/v1"]), false, &req)
            .is_ok());
        assert!(m
            .check_audience(&bound(&["http://gw:1/other/v1"]), false, &req)
            .is_err());
        assert!(m
            .check_audience(&bound(&["https://gw:1/pizza/v1"]), false, &req)
            .is_err());
        assert!(m.check_audience(&bound(&[]), false, &req).is_ok());
        let strict = ResourceMeta {
            audience_check: true,
            ..m
        };
        assert!(strict.check_audience(&bound(&[]), false, &req).is_err());
    }

    #[test]
    fn the_bearer_challenge_names_the_metadata_and_scopes() {
        let req = parts("gw:1");
        let g = crate::policy::refuse(AuthError::Missing);
        let scopes = ScopeRequirement::AnyOf(vec!["read".into(), "write".into()]);
        let g = meta(None).challenge(g, Some(&scopes), false, &req);
        let v = g.header(&WWW_AUTHENTICATE).unwrap().to_str().unwrap();
        assert_eq!(
            v,
            "Bearer realm=\"turnpike\", resource_metadata=\"http://gw:1/.well-known/oauth-protected-resource/pizza/v1\", scope=\"read write\""
        );
        let g = crate::policy::refuse(AuthError::Expired);
        let g = meta(None).challenge(g, None, false, &req);
        let v = g.header(&WWW_AUTHENTICATE).unwrap().to_str().unwrap();
        assert!(v.contains("resource_metadata=") && v.contains("error=\"invalid_token\""));
    }
}
