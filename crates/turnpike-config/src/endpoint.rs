//! Upstream endpoints: parsed from their URL (and settings) once, at compile time.

use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use turnpike_model::resilience::EndpointSpec;
use turnpike_policy::spec::duration::parse_duration;

use crate::endpoint_state::EndpointState;

/// Largest endpoint weight.
pub const MAX_WEIGHT: u32 = 100;

/// One upstream endpoint, pre-parsed.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub uri: Uri,
    /// "http" or "https"
    pub scheme: http::uri::Scheme,
    pub authority: http::uri::Authority,
    /// Path prefix of the endpoint URL without a trailing slash ("" for none); the
    /// request's upstream path is appended to it.
    pub base_path: String,
    /// The URL as written: what metrics and the status report name it by.
    pub url: String,
    /// Share under weighted round robin (1 unless written).
    pub weight: u32,
    /// This endpoint's timeouts (the API's unless it has its own).
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    /// Its long-lived health, for an API with resilience settings (`None` otherwise).
    pub state: Option<Arc<EndpointState>>,
    /// Speak HTTP/2 with prior knowledge (h2c) to this plain-HTTP endpoint.
    pub h2c: bool,
}

impl Endpoint {
    /// An endpoint as written in a file; problems come back as (field suffix, message),
    /// the suffix empty for the URL itself.
    pub(crate) fn from_spec(
        spec: &EndpointSpec,
        connect: Duration,
        read: Duration,
    ) -> Result<Endpoint, Vec<(&'static str, String)>> {
        let mut problems = Vec::new();
        let mut ep = Endpoint::parse(spec.url()).map_err(|e| vec![("", e)])?;
        ep.connect_timeout = connect;
        ep.read_timeout = read;
        if let EndpointSpec::Detailed(d) = spec {
            ep.weight = d.weight.unwrap_or(1);
            if ep.weight > MAX_WEIGHT {
                problems.push((".weight", "expected a weight from 0 to 100".to_owned()));
            }
            let timeouts = d.timeouts.as_ref();
            let mut time = |q: Option<&turnpike_model::Quantity>, name, default| match q {
                None => default,
                Some(q) => parse_duration(q).unwrap_or_else(|e| {
                    problems.push((name, e));
                    default
                }),
            };
            ep.connect_timeout = time(
                timeouts.and_then(|t| t.connect.as_ref()),
                ".timeouts.connect",
                connect,
            );
            ep.read_timeout = time(
                timeouts.and_then(|t| t.read.as_ref()),
                ".timeouts.read",
                read,
            );
        }
        if problems.is_empty() {
            Ok(ep)
        } else {
            Err(problems)
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Endpoint, String> {
        let hint =
            "expected a URL such as \"http://127.0.0.1:9000\" or \"https://api.example.com/base\"";
        let uri: Uri = text
            .parse()
            .map_err(|e| format!("{text:?} is not a URL ({e}); {hint}"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme().cloned(), uri.authority().cloned())
        else {
            return Err(format!("{text:?} needs a scheme and a host; {hint}"));
        };
        if scheme != http::uri::Scheme::HTTP && scheme != http::uri::Scheme::HTTPS {
            return Err(format!("{text:?}: scheme must be http or https; {hint}"));
        }
        if authority.as_str().contains('@') {
            return Err(format!(
                "{text:?}: credentials in the URL are not supported; remove the user@ part"
            ));
        }
        if authority.host().is_empty() {
            return Err(format!("{text:?} has no host; {hint}"));
        }
        // `http::Uri` accepts any digits as the port and `port_u16()` turns an out-of-range
        // one into `None`, which a client reads as "the scheme's default port".
        if let Some(port) = port_text(authority.as_str()) {
            if !matches!(port.parse::<u16>(), Ok(n) if n != 0) {
                return Err(format!(
                    "{text:?}: port {port:?} is not a port number (1-65535); {hint}"
                ));
            }
        }
        if uri.query().is_some() {
            return Err(format!(
                "{text:?}: an endpoint URL cannot have a query string"
            ));
        }
        let base_path = uri.path().trim_end_matches('/').to_owned();
        Ok(Endpoint {
            uri,
            scheme,
            authority,
            base_path,
            url: text.to_owned(),
            weight: 1,
            connect_timeout: turnpike_policy::spec::duration::DEFAULT_CONNECT_TIMEOUT,
            read_timeout: turnpike_policy::spec::duration::DEFAULT_RESPONSE_TIMEOUT,
            state: None,
            h2c: false,
        })
    }
}

/// The port as written after `host:` (an IPv6 host is bracketed), if any.
fn port_text(authority: &str) -> Option<&str> {
    let after_host = match authority.rfind(']') {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    after_host.rsplit_once(':').map(|(_, port)| port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_path_is_kept_without_trailing_slash() {
        let e = Endpoint::parse("https://api.example.com:8443/base/").ok();
        let e = e.as_ref();
        assert_eq!(e.map(|e| e.base_path.as_str()), Some("/base"));
        assert_eq!(
            e.map(|e| e.authority.as_str()),
            Some("api.example.com:8443")
        );
        let e = Endpoint::parse("http://127.0.0.1:9000").ok();
        assert_eq!(e.map(|e| e.base_path), Some(String::new()));
    }

    #[test]
    fn refuses_what_cannot_be_proxied_to() {
        let e = |t: &str| Endpoint::parse(t).err().unwrap_or_default();
        assert!(e("127.0.0.1:9000").contains("scheme"));
        assert!(e("ftp://x").contains("http or https"));
        assert!(e("http://u:p@x").contains("credentials"));
        assert!(e("http://x/?a=1").contains("query"));
        assert!(e("not a url").contains("not a URL"));
        assert!(e("/relative").contains("scheme"));
    }

    #[test]
    fn refuses_ports_out_of_range() {
        let e = |t: &str| Endpoint::parse(t).err().unwrap_or_default();
        assert!(e("http://127.0.0.1:99999").contains("not a port number"));
        assert!(e("http://127.0.0.1:65536/base").contains("not a port number"));
        assert!(e("https://x:0").contains("not a port number"));
        assert!(e("http://[::1]:70000").contains("not a port number"));
        let ok = Endpoint::parse("http://127.0.0.1:65535").ok();
        assert_eq!(ok.and_then(|e| e.authority.port_u16()), Some(65535));
    }
}
