//! What HTTP itself forbids, refused before routing (hyper accepts these): an HTTP/1.1
//! request without exactly one `Host` (RFC 9112 §3.2: "a server MUST respond with a 400
//! to any HTTP/1.1 request message that lacks a Host header field and to any request
//! message that contains more than one Host header field"), more than one `Host` on any
//! version, and `CONNECT` (a gateway is not a tunnel; an origin-form `CONNECT /path` is
//! malformed besides). Answers come from the one error table; nothing reaches an upstream.

use http::header::HOST;
use http::{Method, Request, Version};

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
}
