//! Compact JWS (RFC 7515) as the gateway verifies it, on the path every never-seen token
//! takes: the token is split once, its header and payload are base64url-decoded once
//! (the header into a stack buffer), the claims are parsed once into a JSON value that
//! the identity is then built from, and the signature is decoded into a stack buffer and
//! checked with `ring` against a key decoded when its key set was loaded (never per
//! token). `ring` is the fastest maintained constant-time verifier measured on our
//! machine for the three algorithms that matter (ES256, RS256, EdDSA): see the
//! `backends` bench and docs/security.md.

use std::borrow::Cow;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::Algorithm;
use ring::signature::{self, RsaParameters, VerificationAlgorithm};
use serde::Deserialize;
use serde_json::Value;

use crate::error::AuthError;

/// A public key decoded once, pinned to one algorithm.
#[derive(Clone)]
pub(crate) enum Verifier {
    /// ECDSA (fixed-size `r || s`) and Ed25519: the raw public key `ring` takes.
    Raw(&'static dyn VerificationAlgorithm, Box<[u8]>),
    /// RSA PKCS#1 v1.5 and PSS: modulus and exponent, big-endian.
    Rsa(&'static RsaParameters, Box<[u8]>, Box<[u8]>),
}

fn b64(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

impl Verifier {
    /// From a JWK's EC coordinates (base64url): P-256 or P-384.
    pub(crate) fn ec(alg: Algorithm, x: &str, y: &str) -> Option<Self> {
        let (ring_alg, len): (&'static dyn VerificationAlgorithm, usize) = match alg {
            Algorithm::ES256 => (&signature::ECDSA_P256_SHA256_FIXED, 32),
            Algorithm::ES384 => (&signature::ECDSA_P384_SHA384_FIXED, 48),
            _ => return None,
        };
        let (x, y) = (b64(x)?, b64(y)?);
        if x.len() != len || y.len() != len {
            return None;
        }
        let mut point = Vec::with_capacity(1 + 2 * len);
        point.push(4); // uncompressed
        point.extend_from_slice(&x);
        point.extend_from_slice(&y);
        Some(Verifier::Raw(ring_alg, point.into()))
    }

    /// From a JWK's Ed25519 `x`.
    pub(crate) fn ed25519(x: &str) -> Option<Self> {
        let x = b64(x)?;
        (x.len() == 32).then(|| Verifier::Raw(&signature::ED25519, x.into()))
    }

    /// From a JWK's RSA `n` and `e`.
    pub(crate) fn rsa(alg: Algorithm, n: &str, e: &str) -> Option<Self> {
        let params: &'static RsaParameters = match alg {
            Algorithm::RS256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            Algorithm::RS384 => &signature::RSA_PKCS1_2048_8192_SHA384,
            Algorithm::RS512 => &signature::RSA_PKCS1_2048_8192_SHA512,
            Algorithm::PS256 => &signature::RSA_PSS_2048_8192_SHA256,
            Algorithm::PS384 => &signature::RSA_PSS_2048_8192_SHA384,
            Algorithm::PS512 => &signature::RSA_PSS_2048_8192_SHA512,
            _ => return None,
        };
        let (n, e) = (b64(n)?, b64(e)?);
        if n.is_empty() || e.is_empty() {
            return None;
        }
        Some(Verifier::Rsa(params, n.into(), e.into()))
    }

    /// Checks `sig` (raw bytes) over `message`.
    pub(crate) fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        match self {
            Verifier::Raw(alg, key) => signature::UnparsedPublicKey::new(*alg, &key[..])
                .verify(message, sig)
                .is_ok(),
            Verifier::Rsa(params, n, e) => signature::RsaPublicKeyComponents {
                n: &n[..],
                e: &e[..],
            }
            .verify(params, message, sig)
            .is_ok(),
        }
    }
}

/// The JOSE header fields verification reads.
#[derive(Deserialize)]
pub(crate) struct Header<'a> {
    #[serde(borrow)]
    pub alg: Cow<'a, str>,
    #[serde(borrow, default)]
    pub kid: Option<Cow<'a, str>>,
    /// RFC 7515 §4.1.11: extensions the verifier must understand. We implement none,
    /// so a token that names any is refused.
    #[serde(default)]
    pub crit: Option<serde::de::IgnoredAny>,
}

/// A compact JWS split at its two dots.
pub(crate) struct Compact<'a> {
    header_b64: &'a str,
    /// `header.payload`: what the signature covers.
    signing_input: &'a str,
    payload_b64: &'a str,
    signature_b64: &'a str,
}

/// Largest header decoded on the stack (real headers are under 200 bytes).
pub(crate) const HEADER_MAX: usize = 1024;
/// Largest signature: RSA 8192.
const SIG_MAX: usize = 1024;

const MALFORMED: AuthError = AuthError::InvalidToken("malformed token");

impl<'a> Compact<'a> {
    pub(crate) fn split(token: &'a str) -> Result<Self, AuthError> {
        let (signing_input, signature_b64) = token.rsplit_once('.').ok_or(MALFORMED)?;
        let (header_b64, payload_b64) = signing_input.split_once('.').ok_or(MALFORMED)?;
        if payload_b64.contains('.') {
            return Err(MALFORMED);
        }
        Ok(Compact {
            header_b64,
            signing_input,
            payload_b64,
            signature_b64,
        })
    }

    /// The header, decoded into `buf`.
    pub(crate) fn header<'b>(
        &self,
        buf: &'b mut [u8; HEADER_MAX],
    ) -> Result<Header<'b>, AuthError> {
        const BAD: AuthError = AuthError::InvalidToken("malformed token or unsupported algorithm");
        let n = URL_SAFE_NO_PAD
            .decode_slice(self.header_b64, buf)
            .map_err(|_| BAD)?;
        let header: Header<'b> = serde_json::from_slice(&buf[..n]).map_err(|_| BAD)?;
        if header.crit.is_some() {
            return Err(AuthError::InvalidToken("unsupported critical header"));
        }
        Ok(header)
    }

    /// The claims, parsed once.
    pub(crate) fn claims(&self) -> Result<Value, AuthError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(self.payload_b64)
            .map_err(|_| MALFORMED)?;
        match serde_json::from_slice(&bytes) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err(MALFORMED),
        }
    }

    /// Whether `key` signed this token.
    pub(crate) fn verify(&self, key: &Verifier) -> Result<(), AuthError> {
        let mut sig = [0u8; SIG_MAX];
        let n = URL_SAFE_NO_PAD
            .decode_slice(self.signature_b64, &mut sig)
            .map_err(|_| MALFORMED)?;
        if key.verify(self.signing_input.as_bytes(), &sig[..n]) {
            Ok(())
        } else {
            Err(AuthError::InvalidToken("bad signature"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    #[test]
    fn splits_at_exactly_two_dots() {
        assert!(Compact::split("a.b.c").is_ok());
        for bad in ["", "a", "a.b", "a.b.c.d", "..."] {
            assert!(Compact::split(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_with_crit_or_no_alg_are_refused() {
        let mut buf = [0u8; HEADER_MAX];
        let ok = format!(
            "{}.{}.",
            enc(r#"{"alg":"ES256","kid":"k\u0031"}"#),
            enc("{}")
        );
        let c = Compact::split(&ok).unwrap();
        let h = c.header(&mut buf).unwrap();
        assert_eq!((&*h.alg, h.kid.as_deref()), ("ES256", Some("k1")));
        let crit = format!(
            "{}.{}.",
            enc(r#"{"alg":"ES256","crit":["exp"],"exp":1}"#),
            enc("{}")
        );
        assert_eq!(
            Compact::split(&crit).unwrap().header(&mut buf).err(),
            Some(AuthError::InvalidToken("unsupported critical header"))
        );
        let no_alg = format!("{}.{}.", enc(r#"{"kid":"k"}"#), enc("{}"));
        assert!(Compact::split(&no_alg).unwrap().header(&mut buf).is_err());
        let huge = format!(
            "{}.{}.",
            enc(&format!(r#"{{"alg":"{}"}}"#, "A".repeat(2000))),
            enc("{}")
        );
        assert!(Compact::split(&huge).unwrap().header(&mut buf).is_err());
    }

    #[test]
    fn claims_must_be_an_object() {
        for (payload, ok) in [("{}", true), ("[]", false), ("1", false), ("{", false)] {
            let t = format!("{}.{}.", enc(r#"{"alg":"ES256"}"#), enc(payload));
            assert_eq!(
                Compact::split(&t).unwrap().claims().is_ok(),
                ok,
                "{payload}"
            );
        }
    }
}
