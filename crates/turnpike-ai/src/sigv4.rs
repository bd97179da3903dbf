//! AWS Signature Version 4 for Bedrock's requests (`Authorization: AWS4-HMAC-SHA256 ...`),
//! the header form of AWS's "Create a signed AWS API request": the canonical request
//! (method, the path URI-encoded once more as every service but S3 wants, the sorted
//! query, the signed headers, the body's SHA-256), the string to sign, the key derived
//! from the secret by date, region and service. Checked against AWS's published test
//! suite (`get-vanilla`, `post-vanilla`, ...). HMAC and SHA-256 are ring's.
//!
//! Signed: `host`, `x-amz-date` and, for temporary credentials, `x-amz-security-token`;
//! nothing a proxy on the way may rewrite.

use std::fmt::Write as _;

use http::{HeaderMap, HeaderName, HeaderValue};
use ring::{digest, hmac};

use crate::secret::Secret;

const X_AMZ_DATE: HeaderName = HeaderName::from_static("x-amz-date");
const X_AMZ_TOKEN: HeaderName = HeaderName::from_static("x-amz-security-token");

/// What a request is signed with.
pub(crate) struct Credentials {
    pub(crate) key_id: Secret,
    pub(crate) secret: Secret,
    pub(crate) session_token: Option<Secret>,
    pub(crate) region: String,
    pub(crate) service: &'static str,
}

/// The parts of a request the signature covers.
pub(crate) struct Signed<'a> {
    pub(crate) method: &'a str,
    /// `host[:port]` as the request's `Host` header says it.
    pub(crate) host: &'a str,
    /// The path as sent (percent-encoded already).
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) body: &'a [u8],
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// RFC 3986 percent-encoding of everything but the unreserved characters (and `/` in a
/// path), upper-case hex, as SigV4 wants.
fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~');
        if unreserved || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The query's pairs, each name and value encoded, sorted by name then value.
fn canonical_query(query: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let decode =
                |s: &str| percent_decode(s).map_or_else(|| encode(s, false), |d| encode(&d, false));
            (decode(k), decode(v))
        })
        .collect();
    pairs.sort();
    let parts: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join("&")
}

/// `%XX` sequences decoded (`None` when the text is no valid UTF-8 after).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hexed = (b == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hexed {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the epoch.
pub(crate) fn amz_date(unix: u64) -> String {
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let (y, m, d) = turnpike_model::clock::civil_from_days(days);
    let s = unix % 86_400;
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn mac(key: &[u8], data: &str) -> hmac::Tag {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
}

/// The `Authorization` value for `req` at `date` (`YYYYMMDDTHHMMSSZ`).
pub(crate) fn authorization(c: &Credentials, req: &Signed<'_>, date: &str) -> String {
    let day = date.get(..8).unwrap_or(date);
    let mut headers = vec![("host", req.host.trim()), ("x-amz-date", date)];
    if let Some(t) = &c.session_token {
        headers.push(("x-amz-security-token", t.expose()));
    }
    headers.sort_unstable();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| *k).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
        req.method,
        encode(req.path, true),
        canonical_query(req.query),
        hex(digest::digest(&digest::SHA256, req.body).as_ref()),
    );
    let scope = format!("{day}/{}/{}/aws4_request", c.region, c.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let k = mac(format!("AWS4{}", c.secret.expose()).as_bytes(), day);
    let k = mac(k.as_ref(), &c.region);
    let k = mac(k.as_ref(), c.service);
    let k = mac(k.as_ref(), "aws4_request");
    let signature = hex(mac(k.as_ref(), &to_sign).as_ref());
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
        c.key_id.expose()
    )
}

/// Signs `req` now: `x-amz-date`, the token and `Authorization` set in `headers`.
pub(crate) fn sign(c: &Credentials, req: &Signed<'_>, headers: &mut HeaderMap, unix: u64) {
    let date = amz_date(unix);
    let auth = authorization(c, req, &date);
    if let Ok(v) = HeaderValue::from_str(&date) {
        headers.insert(X_AMZ_DATE, v);
    }
    if let Some(t) = c
        .session_token
        .as_ref()
        .and_then(|t| HeaderValue::from_str(t.expose()).ok())
    {
        headers.insert(X_AMZ_TOKEN, t);
    }
    if let Ok(mut v) = HeaderValue::from_str(&auth) {
        v.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's Signature Version 4 test suite (docs.aws.amazon.com, "Signature Version 4
    /// test suite"): its credentials, date, region and service.
    fn suite() -> Credentials {
        Credentials {
            key_id: Secret::new("AKIDEXAMPLE"),
            secret: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: None,
            region: "us-east-1".into(),
            service: "service",
        }
    }

    fn signature(method: &str, query: Option<&str>) -> String {
        let req = Signed {
            method,
            host: "example.amazonaws.com",
            path: "/",
            query,
            body: b"",
        };
        authorization(&suite(), &req, "20150830T123600Z")
    }

    #[test]
    fn the_published_test_vectors() {
        assert_eq!(
            signature("GET", None),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        assert!(signature("POST", None)
            .ends_with("5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"));
        // get-vanilla-query-order-key-case: the query is sorted.
        assert!(signature("GET", Some("Param2=value2&Param1=value1"))
            .ends_with("b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
        assert!(signature("POST", Some("Param1=value1"))
            .ends_with("28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"));
    }

    #[test]
    fn dates_paths_and_tokens() {
        assert_eq!(amz_date(1_440_938_160), "20150830T123600Z");
        // A Bedrock model id's `:` is sent as `%3A` and signed as `%253A`.
        assert_eq!(
            encode("/model/a.b-v1%3A0/converse", true),
            "/model/a.b-v1%253A0/converse"
        );
        let mut c = suite();
        c.session_token = Some(Secret::new("tok"));
        let mut h = HeaderMap::new();
        let req = Signed {
            method: "POST",
            host: "h",
            path: "/",
            query: None,
            body: b"{}",
        };
        sign(&c, &req, &mut h, 1_440_938_160);
        let auth = h[http::header::AUTHORIZATION].to_str().expect("ascii");
        assert!(
            auth.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"),
            "{auth}"
        );
        assert_eq!(h[X_AMZ_TOKEN], "tok");
        assert_eq!(h[X_AMZ_DATE], "20150830T123600Z");
    }
}
