//! What HTTP itself forbids, refused before routing (hyper accepts these): an HTTP/1.1
//! request without exactly one `Host` (RFC 9112 §3.2: "a server MUST respond with a 400
//! to any HTTP/1.1 request message that lacks a Host header field and to any request
//! message that contains more than one Host header field"), more than one `Host` on any
//! version, and `CONNECT` (a gateway is not a tunnel; an origin-form `CONNECT /path` is
//! malformed besides). Answers come from the one error table; nothing reaches an upstream.
//!
//! Also refused here (docs/security.md, "HTTP conformance"): an HTTP/2 `host` header that
//! names another host than `:authority` (RFC 9113 §8.3.1: malformed, 400); a transfer
//! coding other than plain `chunked` (RFC 9112 §6.1: 501 `unsupported_transfer_coding`,
//! since hyper decodes the chunked framing and the gateway would forward the rest as
//! plain bytes the back end is not told about); `chunked` applied twice (400, RFC 9112
//! §6.1 forbids it). Requests without these headers pay one header lookup each.

use http::header::{HOST, TRANSFER_ENCODING};
use http::uri::{Authority, Scheme};
use http::{HeaderMap, Method, Request, Version};

use crate::error::{ErrorKind, GatewayError};

/// `Ok` for a request the gateway may route.
pub(crate) fn check<B>(req: &Request<B>) -> Result<(), GatewayError> {
    let hosts = req.headers().get_all(HOST).iter().count();
    if hosts > 1 || (hosts == 0 && req.version() == Version::HTTP_11) {
        let mut e = GatewayError::new(ErrorKind::BadRequest);
        e.detail = Some(
            if hosts > 1 {
                "the request has more than one Host header"
            } else {
                "an HTTP/1.1 request needs a Host header"
            }
            .into(),
        );
        return Err(e);
    }
    if req.method() == Method::CONNECT {
        let mut e = GatewayError::new(ErrorKind::BadRequest);
        e.detail = Some("CONNECT is not supported: this gateway is not a tunnel".into());
        return Err(e);
    }
    if req.version() == Version::HTTP_2 && hosts == 1 && host_differs(req) {
        let mut e = GatewayError::new(ErrorKind::BadRequest);
        e.detail = Some("the Host header names another host than :authority".into());
        return Err(e);
    }
    if req.headers().contains_key(TRANSFER_ENCODING) {
        return transfer_codings(req.headers());
    }
    Ok(())
}

/// Whether an HTTP/2 request's `host` header and `:authority` name different hosts,
/// compared as RFC 9113 §8.3.1 asks: normalised per RFC 3986 §6.2 (host case-insensitive,
/// a missing port is the scheme's). A `host` that is not an authority differs.
#[cold]
fn host_differs<B>(req: &Request<B>) -> bool {
    let Some(authority) = req.uri().authority() else {
        return false; // no :authority: the Host header is the only name
    };
    let Some(host) = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<Authority>().ok())
    else {
        return true;
    };
    let default = if req.uri().scheme() == Some(&Scheme::HTTP) {
        80
    } else {
        443
    };
    !authority.host().eq_ignore_ascii_case(host.host())
        || authority.port_u16().unwrap_or(default) != host.port_u16().unwrap_or(default)
}

/// The request's transfer codings: plain `chunked` once, or a refusal. hyper has already
/// refused a list whose last coding is not `chunked`; what is left is `chunked` applied
/// twice (400) or another coding before it, such as `gzip, chunked` (501). The lists
/// are bounded by the head's size limit.
#[cold]
fn transfer_codings(headers: &HeaderMap) -> Result<(), GatewayError> {
    let (mut chunked, mut other) = (0usize, false);
    for value in headers.get_all(TRANSFER_ENCODING) {
        for coding in value.as_bytes().split(|b| *b == b',') {
            let coding = coding.trim_ascii();
            if coding.eq_ignore_ascii_case(b"chunked") {
                chunked += 1;
            } else if !coding.is_empty() {
                other = true;
            }
        }
    }
    if chunked > 1 {
        let mut e = GatewayError::new(ErrorKind::BadRequest);
        e.detail = Some("the chunked transfer coding is applied more than once".into());
        return Err(e);
    }
    if other {
        return Err(GatewayError::new(ErrorKind::UnsupportedTransferCoding));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(version: Version, method: Method, hosts: &[&str]) -> Request<()> {
        let mut b = Request::builder().method(method).uri("/x").version(version);
        for h in hosts {
            b = b.header(HOST, *h);
        }
        b.body(()).unwrap_or_default()
    }

    #[test]
    fn host_rules_by_version_and_connect() {
        let detail = |r: Request<()>| check(&r).err().and_then(|e| e.detail);
        assert!(check(&req(Version::HTTP_11, Method::GET, &["a"])).is_ok());
        assert!(check(&req(Version::HTTP_10, Method::GET, &[])).is_ok());
        assert!(check(&req(Version::HTTP_2, Method::GET, &[])).is_ok());
        assert!(detail(req(Version::HTTP_11, Method::GET, &[]))
            .is_some_and(|d| d.contains("needs a Host")));
        assert!(detail(req(Version::HTTP_10, Method::GET, &["a", "b"]))
            .is_some_and(|d| d.contains("more than one")));
        assert!(detail(req(Version::HTTP_11, Method::CONNECT, &["a"]))
            .is_some_and(|d| d.contains("CONNECT")));
    }

    fn h2(uri: &str, host: &str) -> Result<(), ErrorKind> {
        let r = Request::builder()
            .uri(uri)
            .version(Version::HTTP_2)
            .header(HOST, host)
            .body(())
            .unwrap_or_default();
        check(&r).map_err(|e| e.kind)
    }

    #[test]
    fn an_h2_host_must_name_the_authority() {
        assert_eq!(h2("https://a.example/x", "a.example"), Ok(()));
        assert_eq!(h2("https://a.example/x", "A.Example:443"), Ok(()));
        assert_eq!(h2("http://a.example:80/x", "a.example"), Ok(()));
        assert_eq!(h2("/x", "b.example"), Ok(()));
        for host in [
            "b.example",
            "a.example:8443",
            "a.example.evil",
            "not a host",
        ] {
            assert_eq!(
                h2("https://a.example/x", host),
                Err(ErrorKind::BadRequest),
                "{host}"
            );
        }
    }

    fn te(values: &[&str]) -> Result<(), ErrorKind> {
        let mut b = Request::builder().uri("/x").header(HOST, "a");
        for v in values {
            b = b.header(TRANSFER_ENCODING, *v);
        }
        check(&b.body(()).unwrap_or_default()).map_err(|e| e.kind)
    }

    #[test]
    fn only_plain_chunked_is_a_transfer_coding() {
        assert_eq!(te(&["chunked"]), Ok(()));
        assert_eq!(te(&["Chunked "]), Ok(()));
        assert_eq!(te(&["chunked, chunked"]), Err(ErrorKind::BadRequest));
        assert_eq!(te(&["chunked", "chunked"]), Err(ErrorKind::BadRequest));
        for v in [
            &["gzip, chunked"][..],
            &["gzip", "chunked"],
            &["identity, chunked"],
        ] {
            assert_eq!(te(v), Err(ErrorKind::UnsupportedTransferCoding), "{v:?}");
        }
    }
}
