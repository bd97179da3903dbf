//! Host matching: the `host` of an API (exact, or `*.example.com` for any subdomain at
//! any depth, not the apex) and the normalisation of a request's `Host` value (port
//! and trailing dot dropped, lower-cased) without allocating.

/// A validated host pattern, lower case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum HostPattern {
    Exact(String),
    /// `*.example.com` stored as `example.com`.
    AnySubdomainOf(String),
}

impl HostPattern {
    pub(crate) fn parse(text: &str) -> Result<HostPattern, String> {
        let hint = "expected a host name such as \"api.example.com\" or \"*.example.com\"";
        let lower = text.trim_end_matches('.').to_ascii_lowercase();
        let (wild, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        if name.is_empty() || name.len() > 253 {
            return Err(format!("{text:?} is not a host name; {hint}"));
        }
        if name.contains(':') {
            return Err(format!(
                "{text:?}: leave the port out, a host matches on any port"
            ));
        }
        for label in name.split('.') {
            let ok = !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(format!("{text:?} is not a host name; {hint}"));
            }
        }
        Ok(if wild {
            HostPattern::AnySubdomainOf(name.to_owned())
        } else {
            HostPattern::Exact(name.to_owned())
        })
    }
}

/// Longest host name kept for matching; longer values match no host pattern.
pub(crate) const MAX_HOST: usize = 253;

/// Writes the lower-cased host part of a `Host` value into `buf` and returns it.
/// `None` when the value cannot be a host name we serve.
pub(crate) fn normalise<'b>(host: &str, buf: &'b mut [u8; MAX_HOST]) -> Option<&'b str> {
    let name = if let Some(v6) = host.strip_prefix('[') {
        // "[::1]:8080": keep the brackets, as a pattern would never name one anyway.
        let end = v6.find(']')?;
        &host[..end + 2]
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            Some(_) => return None,
            None => host,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > MAX_HOST {
        return None;
    }
    let out = &mut buf[..name.len()];
    out.copy_from_slice(name.as_bytes());
    out.make_ascii_lowercase();
    std::str::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert_eq!(
            HostPattern::parse("API.Example.com"),
            Ok(HostPattern::Exact("api.example.com".into()))
        );
        assert_eq!(
            HostPattern::parse("*.example.com"),
            Ok(HostPattern::AnySubdomainOf("example.com".into()))
        );
        assert!(HostPattern::parse("example.com:80").is_err());
        assert!(HostPattern::parse("a.*.com").is_err());
        assert!(HostPattern::parse("").is_err());
        assert!(HostPattern::parse("a..b").is_err());
    }

    #[test]
    fn normalising_request_hosts() {
        let mut buf = [0; MAX_HOST];
        assert_eq!(
            normalise("Api.Example.COM:8280", &mut buf),
            Some("api.example.com")
        );
        assert_eq!(normalise("example.com.", &mut buf), Some("example.com"));
        assert_eq!(normalise("[::1]:8280", &mut buf), Some("[::1]"));
        assert_eq!(normalise("a:b:c", &mut buf), None);
        assert_eq!(normalise("", &mut buf), None);
        assert_eq!(normalise(&"a".repeat(300), &mut buf), None);
        assert_eq!(normalise("ünï.com", &mut buf), Some("ünï.com"));
    }
}
