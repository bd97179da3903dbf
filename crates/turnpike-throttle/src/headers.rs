//! What a decision looks like on the wire: the IETF `RateLimit-Policy` / `RateLimit`
//! headers (draft-ietf-httpapi-ratelimit-headers), or the widely used
//! `RateLimit-Limit` / `-Remaining` / `-Reset`, `Retry-After` on refusals, and the
//! refusal's message. (The 429's body is the gateway's error table's, built by the
//! throttle policy in `turnpike-config`.)

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::HeaderMap;
use turnpike_model::throttling::HeaderStyle;

use turnpike_policy::Decision;

use crate::throttler::Throttler;

pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
pub static RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
pub static RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
pub static RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

/// `Retry-After` of a refusal in whole seconds, at least 1 (0 when allowed).
pub fn retry_after_secs(d: &Decision) -> u64 {
    d.retry_after.map_or(0, |r| ceil_secs(r).max(1))
}

/// Whole seconds, rounded up (a client told "0" would retry at once).
pub(crate) fn ceil_secs(d: std::time::Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Formats `n` into `buf` from the end; returns the digits.
fn digits(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// `"label";r=REMAINING;t=RESET`: the quoted label is the prefix of the rule's policy
/// value.
fn ratelimit_value(rule: &crate::compile::Rule, remaining: u64, reset: u64) -> Option<HeaderValue> {
    let p = rule.policy_header.as_bytes();
    let label_end = p
        .iter()
        .skip(1)
        .position(|b| *b == b'"')
        .map_or(0, |i| i + 2);
    let mut v = Vec::with_capacity(label_end + 28);
    v.extend_from_slice(&p[..label_end]);
    let mut buf = [0u8; 20];
    v.extend_from_slice(b";r=");
    v.extend_from_slice(digits(remaining, &mut buf));
    v.extend_from_slice(b";t=");
    v.extend_from_slice(digits(reset, &mut buf));
    HeaderValue::from_maybe_shared(Bytes::from(v)).ok()
}

fn num(n: u64) -> HeaderValue {
    let mut buf = [0u8; 20];
    // Digits are always a valid header value.
    HeaderValue::from_bytes(digits(n, &mut buf)).unwrap_or(HeaderValue::from_static("0"))
}

impl Throttler {
    /// Adds the rate-limit headers of `d` (and `Retry-After` when refused) to `headers`.
    /// No limit applied (Unlimited): nothing is added.
    pub fn write_headers(&self, d: &Decision, style: HeaderStyle, headers: &mut HeaderMap) {
        if let Some(retry) = d.retry_after {
            headers.insert(RETRY_AFTER, num(ceil_secs(retry).max(1)));
        }
        let Some(rule) = d.rule.and_then(|id| self.rule(id)) else {
            return;
        };
        let reset = ceil_secs(d.reset);
        if matches!(style, HeaderStyle::Ietf | HeaderStyle::Both) {
            headers.insert(RATELIMIT_POLICY.clone(), rule.policy_header.clone());
            if let Some(hv) = ratelimit_value(rule, d.remaining, reset) {
                headers.insert(RATELIMIT.clone(), hv);
            }
        }
        if matches!(style, HeaderStyle::Legacy | HeaderStyle::Both) {
            headers.insert(RATELIMIT_LIMIT.clone(), num(d.limit));
            headers.insert(RATELIMIT_REMAINING.clone(), num(d.remaining));
            headers.insert(RATELIMIT_RESET.clone(), num(reset));
        }
    }

    /// Adds the token budget's IETF `RateLimit-Policy` / `RateLimit` to `headers`,
    /// beside the request quota's (each is a list: a second field line is a second
    /// member); `Retry-After` when refused. The legacy trio has room for one limit, the
    /// request quota's: with `headers: legacy`, only `Retry-After`.
    pub fn write_token_headers(
        &self,
        d: &crate::TokenDecision,
        style: HeaderStyle,
        headers: &mut HeaderMap,
    ) {
        if let Some(retry) = d.retry_after {
            headers.insert(RETRY_AFTER, num(ceil_secs(retry).max(1)));
        }
        let Some(rule) = d.rule.and_then(|id| self.rule(id)) else {
            return;
        };
        if matches!(style, HeaderStyle::Ietf | HeaderStyle::Both) {
            headers.append(RATELIMIT_POLICY.clone(), rule.policy_header.clone());
            if let Some(hv) = ratelimit_value(rule, d.remaining, ceil_secs(d.reset)) {
                headers.append(RATELIMIT.clone(), hv);
            }
        }
    }

    /// The client-facing message of a token budget's refusal.
    pub fn token_message(&self, d: &crate::TokenDecision) -> String {
        let Some(rule) = d.rule.and_then(|id| self.rule(id)) else {
            return "token budget exhausted".to_owned();
        };
        let what = match rule.kind {
            crate::compile::RuleKind::Tokens { part, .. } => part.name(),
            _ => "tokens",
        };
        let retry = d.retry_after.map_or(0, |r| ceil_secs(r).max(1));
        format!(
            "token budget of policy {:?} exhausted: {} {what} per {} s, {} left; retry after {retry} s",
            &*rule.policy, rule.limit, rule.window_secs, d.remaining
        )
    }

    /// The client-facing message of a refusal.
    pub fn message(&self, d: &Decision) -> String {
        let Some(rule) = d.rule.and_then(|id| self.rule(id)) else {
            return "request throttled".to_owned();
        };
        let what = match rule.kind {
            crate::compile::RuleKind::Quota { bytes: true, .. } => "bytes",
            _ => "requests",
        };
        let retry = retry_after_secs(d);
        format!(
            "throttled by policy {:?}: {} {what} per {} s; retry after {retry} s",
            &*rule.policy, rule.limit, rule.window_secs
        )
    }
}
