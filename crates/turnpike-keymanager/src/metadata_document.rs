//! Client ID Metadata Documents (the MCP authorization specification, 2025-11-25;
//! draft-ietf-oauth-client-id-metadata-document): an agent with no registration uses
//! an `https` URL as its `client_id`, and the document at that URL is its metadata
//! (`client_id` equal to the URL, `client_name`, `redirect_uris`,
//! `token_endpoint_auth_method: none`). Under the policy an administrator sets
//! ([`MetadataDocumentPolicy`]; off by default, and then such a `client_id` is an unknown
//! client and the server metadata does not say `client_id_metadata_document_supported`).
//!
//! The fetch is bounded: hosts the policy allows, addresses resolved once and checked
//! (no loopback, private, link-local or other special addresses unless the policy allows
//! them; the connection goes to the checked address), no redirects followed, 5 s, 5 KiB.
//! Documents are cached for 5 minutes (at most 1000). The first use of a URL registers
//! it as a public client of a new application of the policy's owner (as a dynamic
//! registration does, so subscriptions work as for any application); its redirect URIs
//! are the document's as last fetched.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::registration::redirect_uri_ok;
use crate::store::{GrantType, Registration};
use crate::{KeyManager, OAuthError};

/// What an administrator allows of client ID metadata documents.
#[derive(Debug, Clone)]
pub struct MetadataDocumentPolicy {
    /// Hosts whose documents are accepted: exact names, or `*.example.com` for its
    /// subdomains; empty: any host with a public address.
    pub allowed_hosts: Vec<String>,
    /// Also documents on loopback, private and link-local addresses, and plain `http`
    /// to loopback ones (tests and labs; never on a server agents reach from outside).
    pub allow_private_addresses: bool,
    /// The user who owns the applications these clients become.
    pub owner: String,
    /// Their application tier.
    pub application_tier: String,
    /// Scopes such a client may ask for.
    pub scopes: Vec<String>,
    /// The owner's applications at most.
    pub max_clients: u64,
}

impl Default for MetadataDocumentPolicy {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allow_private_addresses: false,
            owner: "admin".into(),
            application_tier: "Unlimited".into(),
            scopes: Vec::new(),
            max_clients: 1000,
        }
    }
}

/// Largest document read (the draft suggests 5 KB).
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a fetched document is used before it is fetched again.
const CACHE_SECS: u64 = 300;
const MAX_CACHED: usize = 1000;
const MAX_URL_LEN: usize = 2048;
const MAX_NAME_LEN: usize = 100;
const MAX_REDIRECT_URIS: usize = 10;

/// What a document says that this server uses.
#[derive(Debug, Clone)]
pub(crate) struct ClientDocument {
    pub(crate) name: String,
    pub(crate) redirect_uris: Vec<String>,
}

/// Fetched documents by URL, with when they were fetched.
#[derive(Default)]
pub(crate) struct DocumentCache {
    map: Mutex<HashMap<String, (u64, ClientDocument)>>,
}

/// Whether `client_id` is meant as a metadata document's URL (then it is never looked
/// up as a registered id alone).
pub(crate) fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// Why a document was refused: the authorization page says it.
pub(crate) type Refused = &'static str;

/// The URL checked against the policy: its host, and the port to connect to.
fn check_url(
    client_id: &str,
    policy: &MetadataDocumentPolicy,
) -> Result<(reqwest::Url, String, u16), Refused> {
    const BAD: Refused = "client_id: not a usable metadata document URL";
    if client_id.len() > MAX_URL_LEN {
        return Err(BAD);
    }
    let url = reqwest::Url::parse(client_id).map_err(|_| BAD)?;
    // The draft: https, a path, no fragment, no credentials, no dot segments (the
    // parser removes them, so the URL must come back unchanged).
    let plain = url.scheme() == "http" && policy.allow_private_addresses;
    let ok = (url.scheme() == "https" || plain)
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() != "/"
        && url.as_str() == client_id;
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    if !ok || host.is_empty() {
        return Err(BAD);
    }
    if !host_allowed(&host, &policy.allowed_hosts) {
        return Err("client_id: this host's metadata documents are not accepted here");
    }
    let port = url.port_or_known_default().ok_or(BAD)?;
    Ok((url, host, port))
}

fn host_allowed(host: &str, allowed: &[String]) -> bool {
    allowed.is_empty()
        || allowed.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            match a.strip_prefix("*.") {
                Some(parent) => host.ends_with(&format!(".{parent}")),
                None => a == host,
            }
        })
}

/// An address any agent's document may live on: not loopback, private, link-local,
/// shared, documentation, multicast or unspecified.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80)
            }
        },
    }
}

/// The one address the fetch connects to: every address the name has must be allowed.
async fn resolve(
    host: &str,
    port: u16,
    policy: &MetadataDocumentPolicy,
) -> Result<SocketAddr, Refused> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|_| "client_id: its host does not resolve")?
        .take(16)
        .collect();
    let first = *addrs
        .first()
        .ok_or("client_id: its host does not resolve")?;
    if !policy.allow_private_addresses && addrs.iter().any(|a| !is_public(a.ip())) {
        return Err("client_id: its host has a private or special address");
    }
    Ok(first)
}

/// GETs the document: no redirects, the size and time bounded, the connection to `addr`.
async fn fetch(url: &reqwest::Url, host: &str, addr: SocketAddr) -> Result<Vec<u8>, Refused> {
    const UNREACHABLE: Refused = "client_id: its metadata document could not be fetched";
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .resolve(host, addr)
        .no_proxy()
        .build()
        .map_err(|_| UNREACHABLE)?;
    let mut resp = client
        .get(url.clone())
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|_| UNREACHABLE)?;
    if resp.status() != reqwest::StatusCode::OK {
        return Err(
            "client_id: its metadata document did not answer 200 (redirects are not followed)",
        );
    }
    let too_large = "client_id: its metadata document is larger than 5 KiB";
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
    {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|_| UNREACHABLE)? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The document's metadata, checked: it names itself, is a public client, and its
/// redirect URIs are ones this server accepts of any client.
fn read(client_id: &str, body: &[u8]) -> Result<ClientDocument, Refused> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "client_id: its metadata document is not JSON")?;
    if v["client_id"].as_str() != Some(client_id) {
        return Err("client_id: the metadata document names another client_id");
    }
    if v.get("client_secret").is_some() || v.get("client_secret_expires_at").is_some() {
        return Err("client_id: a metadata document may not hold a secret");
    }
    match v["token_endpoint_auth_method"].as_str() {
        None | Some("none") => {}
        Some(_) => return Err("client_id: only public clients (token_endpoint_auth_method none)"),
    }
    let grants_ok = v["grant_types"].as_array().is_none_or(|g| {
        g.iter()
            .all(|g| matches!(g.as_str(), Some("authorization_code" | "refresh_token")))
    });
    if !grants_ok {
        return Err("client_id: grant_types may be authorization_code and refresh_token only");
    }
    let uris: Vec<String> = v["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if uris.is_empty() || uris.len() > MAX_REDIRECT_URIS || !uris.iter().all(|u| redirect_uri_ok(u))
    {
        return Err("client_id: redirect_uris must be 1 to 10 https or loopback http URIs");
    }
    let name: String = v["client_name"]
        .as_str()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_LEN)
        .collect();
    Ok(ClientDocument {
        name,
        redirect_uris: uris,
    })
}

impl KeyManager {
    /// The policy in force: the configuration's, else the store's; `None`: off.
    pub(crate) async fn metadata_document_policy(
        &self,
    ) -> Result<Option<MetadataDocumentPolicy>, OAuthError> {
        if let Some(p) = &self.inner.config.metadata_documents {
            return Ok(Some(p.clone()));
        }
        Ok(self.inner.stores.clients.metadata_document_policy().await?)
    }

    /// The document of `client_id` (cached, else fetched and checked), its client
    /// registered on first use. `Ok(None)`: documents are off.
    pub(crate) async fn client_document(
        &self,
        client_id: &str,
    ) -> Result<Option<Result<ClientDocument, Refused>>, OAuthError> {
        let Some(policy) = self.metadata_document_policy().await? else {
            return Ok(None);
        };
        let now = self.inner.clock.now_secs();
        if let Some(doc) = self.cached(client_id, now) {
            return Ok(Some(Ok(doc)));
        }
        let doc = match self.fetch_document(client_id, &policy).await {
            Ok(d) => d,
            Err(why) => {
                tracing::info!(client_id, why, "client ID metadata document refused");
                return Ok(Some(Err(why)));
            }
        };
        if self.inner.stores.clients.client(client_id).await?.is_none() {
            if let Err(why) = self.register_document(client_id, &doc, &policy).await? {
                return Ok(Some(Err(why)));
            }
        }
        self.remember(client_id, &doc, now);
        Ok(Some(Ok(doc)))
    }

    async fn fetch_document(
        &self,
        client_id: &str,
        policy: &MetadataDocumentPolicy,
    ) -> Result<ClientDocument, Refused> {
        let (url, host, port) = check_url(client_id, policy)?;
        let addr = resolve(&host, port, policy).await?;
        if url.scheme() == "http" && !addr.ip().is_loopback() {
            return Err("client_id: plain http only to a loopback address");
        }
        let body = fetch(&url, &host, addr).await?;
        read(client_id, &body)
    }

    fn cached(&self, client_id: &str, now: u64) -> Option<ClientDocument> {
        let map = self.inner.documents.map.lock().ok()?;
        map.get(client_id)
            .filter(|(at, _)| now < at + CACHE_SECS)
            .map(|(_, d)| d.clone())
    }

    fn remember(&self, client_id: &str, doc: &ClientDocument, now: u64) {
        let Ok(mut map) = self.inner.documents.map.lock() else {
            return;
        };
        if map.len() >= MAX_CACHED {
            map.retain(|_, (at, _)| now < *at + CACHE_SECS);
        }
        if map.len() < MAX_CACHED {
            map.insert(client_id.to_owned(), (now, doc.clone()));
        }
    }

    /// The URL as a public client of a new application of the policy's owner.
    async fn register_document(
        &self,
        client_id: &str,
        doc: &ClientDocument,
        policy: &MetadataDocumentPolicy,
    ) -> Result<Result<(), Refused>, OAuthError> {
        // Application names are unique per owner: a hash of the URL tells them apart.
        let tag: String = Sha256::digest(client_id.as_bytes())
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect();
        let shown = if doc.name.is_empty() {
            "agent"
        } else {
            doc.name.as_str()
        };
        let reg = Registration {
            client_id: client_id.to_owned(),
            secret_hash: String::new(),
            name: format!("{shown} ({tag})"),
            owner: policy.owner.clone(),
            tier: policy.application_tier.clone(),
            // The authorization code grant comes with the redirect URIs.
            grant_types: vec![GrantType::RefreshToken],
            scopes: policy.scopes.clone(),
            redirect_uris: doc.redirect_uris.clone(),
        };
        match self
            .inner
            .stores
            .clients
            .register_client(&reg, policy.max_clients)
            .await?
        {
            Some(_) => {
                tracing::info!(client_id, owner = %policy.owner, "client ID metadata document registered");
                Ok(Ok(()))
            }
            None => Ok(Err("the limit of registered clients is reached")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_with_a_path_on_allowed_hosts() {
        let p = MetadataDocumentPolicy {
            allowed_hosts: vec!["agent.example".into(), "*.tools.example".into()],
            ..MetadataDocumentPolicy::default()
        };
        for ok in [
            "https://agent.example/client.json",
            "https://a.tools.example/oauth/client",
        ] {
            assert!(check_url(ok, &p).is_ok(), "{ok}");
        }
        for bad in [
            "http://agent.example/client.json",
            "https://agent.example/",
            "https://agent.example/c#x",
            "https://u:p@agent.example/c",
            "https://agent.example/a/../c",
            "https://evil.example/client.json",
            "https://tools.example.evil/c",
        ] {
            assert!(check_url(bad, &p).is_err(), "{bad}");
        }
    }

    #[test]
    fn special_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn documents_name_themselves_and_are_public_clients() {
        let id = "https://agent.example/client.json";
        let good = serde_json::json!({"client_id": id, "client_name": "Agent", "redirect_uris": ["http://127.0.0.1:3000/cb"]});
        let doc = read(id, good.to_string().as_bytes()).unwrap();
        assert_eq!((doc.name.as_str(), doc.redirect_uris.len()), ("Agent", 1));
        for bad in [
            serde_json::json!({"client_id": "https://other.example/c", "redirect_uris": ["https://a.example/cb"]}),
            serde_json::json!({"client_id": id, "redirect_uris": []}),
            serde_json::json!({"client_id": id, "redirect_uris": ["http://evil.example/cb"]}),
            serde_json::json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}),
            serde_json::json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "client_secret": "s"}),
            serde_json::json!({"client_id": id, "redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}),
        ] {
            assert!(read(id, bad.to_string().as_bytes()).is_err(), "{bad}");
        }
    }
}
