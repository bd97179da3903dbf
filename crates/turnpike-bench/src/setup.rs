//! How a plan's secured scenarios are called and where the load goes (issue 32): the
//! credential (`auth`: a JWT pool by default, as the seeds' "Passthrough" was a JWT-secured
//! API; or an API key), the transport (`protocol`: plain HTTP/1.1, HTTPS with HTTP/1.1, or
//! HTTPS with HTTP/2 by ALPN), the core sets (`pin`) and, with `target`, any running
//! gateway by URL with its own token source. Plain data, parsed with the plan and checked
//! with it; `tokens.rs` turns a token source into header values, `pin.rs` the core sets
//! into `taskset` lists.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::BenchError;

pub use crate::tokens::MAX_TOKENS;

/// The credential the secured scenarios send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// `Authorization: Bearer` ES256 JWTs, verified locally by the gateway (JWKS) with a
    /// subscription check: what WSO2's performance tests send.
    #[default]
    Jwt,
    /// The `apikey` header.
    ApiKey,
}

/// How the generator reaches the gateway (direct baselines stay plain HTTP: the seeds'
/// back end was a plain Netty echo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Plain HTTP/1.1.
    #[default]
    Http,
    /// HTTPS, HTTP/1.1 by ALPN (the seeds: JMeter over HTTPS).
    Https,
    /// HTTPS, HTTP/2 by ALPN; one connection per user.
    H2,
}

impl Protocol {
    pub fn tls(self) -> bool {
        self != Protocol::Http
    }
    pub fn http2(self) -> bool {
        self == Protocol::H2
    }
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http => "HTTP/1.1",
            Protocol::Https => "HTTPS (HTTP/1.1)",
            Protocol::H2 => "HTTPS (HTTP/2)",
        }
    }
}

/// Which cores the gateway, the back end and the generator run on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Pin {
    /// `auto` (the default: the gateway on the upper half of the allowed cores, back end
    /// and generator on the lower half, when there are at least two) or `off`.
    Word(PinWord),
    /// Explicit `taskset` lists, e.g. `{ gateway: "2-3", backend: "1", generator: "0" }`.
    Sets(CoreSets),
}

impl Default for Pin {
    fn default() -> Self {
        Pin::Word(PinWord::Auto)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PinWord {
    Auto,
    Off,
}

/// CPU lists in `taskset -c` syntax (`0`, `0,2`, `1-3`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSets {
    pub gateway: Option<String>,
    pub backend: Option<String>,
    pub generator: Option<String>,
}

/// A running gateway the plan drives instead of starting one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The gateway's base URL (`http://host:port` or `https://…`).
    pub url: String,
    /// Path of each scenario's API under `url`, by scenario name; left out: the matrix's
    /// own layout (`/echo/v1`, `/secured/v1`, `/secured/v1/mediation`, `/soap/v1`,
    /// `/soaprest/v1/echo`: `Scenario::default_path`).
    #[serde(default)]
    pub paths: BTreeMap<String, String>,
    /// The back end the gateway proxies to, for the direct baselines (delays then go as
    /// `?delay_ms=`); left out: the matrix starts its own echo for them.
    #[serde(default)]
    pub backend: Option<String>,
    /// Accept the gateway's certificate whatever it is (self-signed gateways).
    #[serde(default)]
    pub insecure: bool,
    /// The gateway's pid on this machine, to sample its CPU and RSS.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The credential of the secured scenarios; left out: they are sent without one.
    #[serde(default)]
    pub token: Option<TokenSource>,
}

/// Where a target's tokens come from, and how they are sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSource {
    /// OAuth2 client credentials: the plan's `tokens` grants, each a distinct token.
    #[serde(default)]
    pub client_credentials: Option<ClientCredentials>,
    /// A file of tokens, one a line (relative to the working directory).
    #[serde(default)]
    pub file: Option<String>,
    /// One fixed token (an API key).
    #[serde(default)]
    pub value: Option<String>,
    /// The header, `{token}` standing for each token (default `Authorization: Bearer {token}`).
    #[serde(default = "default_header")]
    pub header: String,
}

pub fn default_header() -> String {
    "Authorization: Bearer {token}".to_owned()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientCredentials {
    /// The token endpoint (e.g. `http://cp:9400/oauth2/token`).
    pub url: String,
    pub client_id: String,
    pub client_secret: String,
}

impl Target {
    /// The URL of the API at `path` (a scenario's own from `paths`, else `default`).
    pub fn scenario_url(&self, scenario: &str, default: &str) -> String {
        let path = self.paths.get(scenario).map_or(default, String::as_str);
        format!("{}{path}", self.url.trim_end_matches('/'))
    }

    /// Problems with the target, all at once (scenario names in `paths` are the plan's
    /// to check).
    pub fn check(&self, errors: &mut Vec<String>) {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            errors.push(format!(
                "target.url: must be http:// or https://, not {:?}",
                self.url
            ));
        }
        for (s, p) in &self.paths {
            if !p.starts_with('/') {
                errors.push(format!("target.paths.{s}: must start with /"));
            }
        }
        if let Some(t) = &self.token {
            t.check(errors);
        }
    }
}

impl TokenSource {
    /// The tokens: `count` of them for client credentials, else the file's or the value.
    pub async fn resolve(&self, count: usize, insecure: bool) -> Result<Vec<String>, BenchError> {
        if let Some(cc) = &self.client_credentials {
            return crate::tokens::client_credentials(
                &cc.url,
                &cc.client_id,
                &cc.client_secret,
                count,
                insecure,
            )
            .await;
        }
        if let Some(file) = &self.file {
            return crate::tokens::from_file(std::path::Path::new(file));
        }
        match &self.value {
            Some(v) => Ok(vec![v.clone()]),
            None => Err(BenchError::Usage(
                "target.token: no client_credentials, file or value".into(),
            )),
        }
    }

    fn check(&self, errors: &mut Vec<String>) {
        let sources = [
            self.client_credentials.is_some(),
            self.file.is_some(),
            self.value.is_some(),
        ];
        if sources.iter().filter(|s| **s).count() != 1 {
            errors.push(
                "target.token: give exactly one of client_credentials, file, value".to_owned(),
            );
        }
        if crate::tokens::HeaderTemplate::parse(&self.header).is_err() {
            errors.push(format!(
                "target.token.header: must be `Name: …{{token}}…`, not {:?}",
                self.header
            ));
        }
    }
}
