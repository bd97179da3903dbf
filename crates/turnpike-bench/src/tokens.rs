//! Credentials as header values, made once before any load: a header template
//! (`Authorization: Bearer {token}`, `apikey: {token}`) applied to a pool of tokens from a
//! file, a fixed value, N client-credentials grants against a token endpoint (each grant a
//! distinct token, as the seeds' 5,000 tokens), or the bench issuer's own JWTs.

use http::header::HeaderName;
use http::{HeaderValue, Uri};

use crate::BenchError;

/// The most distinct tokens a plan may ask for (the latency study used 5,000; the
/// gateway's verified-token cache is sized in bytes, and a pool is held in memory).
pub const MAX_TOKENS: usize = 100_000;

/// `Name: prefix{token}suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderTemplate {
    pub name: HeaderName,
    prefix: String,
    suffix: String,
}

impl HeaderTemplate {
    pub fn parse(template: &str) -> Result<Self, BenchError> {
        let bad = || {
            BenchError::Usage(format!(
                "token header must be `Name: …{{token}}…`: {template:?}"
            ))
        };
        let (name, value) = template.split_once(':').ok_or_else(bad)?;
        let name = HeaderName::try_from(name.trim()).map_err(|_| bad())?;
        let (prefix, suffix) = value.trim().split_once("{token}").ok_or_else(bad)?;
        Ok(HeaderTemplate {
            name,
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
        })
    }

    /// `Authorization: Bearer {token}`.
    pub fn bearer() -> Self {
        HeaderTemplate {
            name: http::header::AUTHORIZATION,
            prefix: "Bearer ".to_owned(),
            suffix: String::new(),
        }
    }

    /// The header value for one token.
    pub fn value(&self, token: &str) -> Result<HeaderValue, BenchError> {
        HeaderValue::from_str(&format!("{}{}{}", self.prefix, token.trim(), self.suffix))
            .map_err(|_| BenchError::Token("token has characters not allowed in a header".into()))
    }

    /// The header values of a pool of tokens.
    pub fn values(&self, tokens: &[String]) -> Result<Vec<HeaderValue>, BenchError> {
        tokens.iter().map(|t| self.value(t)).collect()
    }
}

/// Tokens of a file, one a line (blank lines skipped), at most [`MAX_TOKENS`].
pub fn from_file(path: &std::path::Path) -> Result<Vec<String>, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::Usage(format!("reading {}: {e}", path.display())))?;
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if tokens.is_empty() {
        return Err(BenchError::Usage(format!(
            "{} holds no tokens",
            path.display()
        )));
    }
    if tokens.len() > MAX_TOKENS {
        return Err(BenchError::Usage(format!(
            "{} holds {} tokens, at most {MAX_TOKENS} are read",
            path.display(),
            tokens.len()
        )));
    }
    Ok(tokens)
}

/// `count` tokens by `count` client-credentials grants (one connection each, in turn:
/// a token endpoint is not what is measured, and a burst could trip its lockout).
pub async fn client_credentials(
    url: &str,
    client_id: &str,
    client_secret: &str,
    count: usize,
    insecure: bool,
) -> Result<Vec<String>, BenchError> {
    if count == 0 || count > MAX_TOKENS {
        return Err(BenchError::Usage(format!(
            "tokens: between 1 and {MAX_TOKENS}, not {count}"
        )));
    }
    let uri: Uri = url
        .parse()
        .map_err(|e| BenchError::Usage(format!("bad token URL {url}: {e}")))?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let header =
            crate::client::client_credentials(&uri, client_id, client_secret, insecure).await?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or_else(|| BenchError::Token("token endpoint returned an unusable token".into()))?;
        out.push(token.to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_put_the_token_in_place_and_refuse_bad_ones() {
        let t = HeaderTemplate::parse("apikey: {token}").expect("template");
        assert_eq!(t.name.as_str(), "apikey");
        assert_eq!(t.value("k1").expect("value"), "k1");
        let b = HeaderTemplate::parse("Authorization: Bearer {token}").expect("bearer");
        assert_eq!(b, HeaderTemplate::bearer());
        assert_eq!(b.value("t").expect("value"), "Bearer t");
        let s = HeaderTemplate::parse("x-auth: key={token}; v=1").expect("suffix");
        assert_eq!(s.value("z").expect("value"), "key=z; v=1");
        assert!(HeaderTemplate::parse("apikey {token}").is_err());
        assert!(HeaderTemplate::parse("apikey: fixed").is_err());
        assert!(HeaderTemplate::parse("bad name: {token}").is_err());
        assert!(b.value("a\nb").is_err());
    }
}
