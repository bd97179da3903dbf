//! Resource indicators (RFC 8707): the `resource` parameter of the authorization and
//! token requests names the API a token is for. It must be an absolute `http(s)` URI
//! without a fragment whose path names an API the store knows (`/{context}/{version}`,
//! [`crate::ClientStore::api_exists`]); anything else is `invalid_target`. The access
//! token's `aud` is then that URI alone, so a gateway admits it only at that API. One
//! `resource` per request (a repeated parameter is already `invalid_request`).

use crate::error::OAuthError;
use crate::store::{ClientRecord, TokenFormat};
use crate::KeyManager;

/// Longest `resource` accepted.
const MAX_RESOURCE_LEN: usize = 2048;

/// The path of a well-formed resource URI; `None` when it is not one (RFC 8707 §2:
/// absolute, no fragment; a query is allowed by the RFC but names no API here).
pub(crate) fn resource_path(resource: &str) -> Option<&str> {
    if resource.len() > MAX_RESOURCE_LEN || resource.contains(['#', '?', ' ', '"', '\\']) {
        return None;
    }
    let rest = resource
        .strip_prefix("https://")
        .or_else(|| resource.strip_prefix("http://"))?;
    let slash = rest.find('/')?;
    let (authority, path) = rest.split_at(slash);
    (!authority.is_empty() && path.len() > 1).then_some(path)
}

impl KeyManager {
    /// The `resource` of a request, checked: `Ok(None)` without one.
    pub(crate) async fn target(
        &self,
        resource: Option<&str>,
        client: Option<&ClientRecord>,
    ) -> Result<Option<String>, OAuthError> {
        let Some(resource) = resource else {
            return Ok(None);
        };
        let path = resource_path(resource).ok_or(OAuthError::InvalidTarget(
            "resource must be an absolute http(s) URI of an API, without query or fragment",
        ))?;
        if client.is_some_and(|c| c.token_format == TokenFormat::Opaque) {
            return Err(OAuthError::InvalidTarget(
                "resource indicators need JWT access tokens; this application issues opaque ones",
            ));
        }
        let path = path.trim_end_matches('/');
        match self.inner.stores.clients.api_exists(path).await? {
            true => Ok(Some(resource.trim_end_matches('/').to_owned())),
            false => Err(OAuthError::InvalidTarget("resource names no API")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_an_absolute_http_uri_with_a_path() {
        assert_eq!(
            resource_path("http://127.0.0.1:8280/pizza/v1"),
            Some("/pizza/v1")
        );
        assert_eq!(
            resource_path("https://api.example/mcp/pizza/v1"),
            Some("/mcp/pizza/v1")
        );
        for bad in [
            "pizza/v1",
            "ftp://x/pizza/v1",
            "https://x",
            "https://x/",
            "https:///pizza/v1",
            "https://x/pizza/v1#frag",
            "https://x/pizza/v1?q=1",
        ] {
            assert_eq!(resource_path(bad), None, "{bad}");
        }
    }
}
