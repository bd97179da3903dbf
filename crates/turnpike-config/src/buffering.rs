//! An API's request buffering (`request_buffering:`, nginx's `proxy_request_buffering`):
//! the gateway reads up to `size` bytes of a request body before it connects upstream,
//! so a client that sends its body slowly (a byte every few seconds, as slowloris's
//! POST variant does) holds a gateway task and that much memory, but no upstream
//! connection: back ends with a bounded connection or thread pool (servlet containers,
//! a pool capped by `--max-upstream-connections`) stay free for everyone else. A body
//! larger than `size` streams its rest as it arrives; one not fully sent within
//! `timeout` is answered 408 without the back end ever seeing a connection.
//!
//! On by default for every API, secured or not: a valid credential only narrows who can
//! hold the back end's connections this way, and the memory bound is the same as the
//! body policies' (per request, at most `size`, which is at most the API's body limit).

use std::time::Duration;

use turnpike_model::RequestBufferingSpec;

use crate::error::Problem;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::size::parse_size;

/// Bytes buffered when the API does not say (and its body limit is larger).
pub const DEFAULT_REQUEST_BUFFER_BYTES: u64 = 1 << 20;
/// Time to send the buffered part of a body when the API does not say.
pub const DEFAULT_REQUEST_BUFFER_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `size` accepted: what one request may hold in gateway memory.
pub const MAX_REQUEST_BUFFER_BYTES: u64 = 64 << 20;

/// Compiled request buffering of one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestBuffering {
    /// At most this many bytes are read before connecting upstream.
    pub size: u64,
    /// The client's time to send them (or its whole body, when smaller).
    pub timeout: Duration,
}

/// Validates `request_buffering` of `apis[index]`; `None` when buffering is off (or the
/// spec is bad: the problem is pushed).
pub(crate) fn check(
    index: usize,
    spec: Option<&RequestBufferingSpec>,
    max_body_bytes: Option<u64>,
    problems: &mut Vec<Problem>,
) -> Option<RequestBuffering> {
    let at = |f: &str| format!("apis[{index}].request_buffering.{f}");
    let spec = spec.cloned().unwrap_or_default();
    if spec.enabled == Some(false) {
        return None;
    }
    let size = match &spec.size {
        None => DEFAULT_REQUEST_BUFFER_BYTES,
        Some(q) => match parse_size(q) {
            Ok(Some(n)) if (1..=MAX_REQUEST_BUFFER_BYTES).contains(&n) => n,
            Ok(_) => {
                problems.push(Problem::new(
                    at("size"),
                    "use 1 byte to 64MiB (each request may hold this much gateway memory)",
                ));
                return None;
            }
            Err(e) => {
                problems.push(Problem::new(at("size"), e));
                return None;
            }
        },
    };
    let timeout = match &spec.timeout {
        None => DEFAULT_REQUEST_BUFFER_TIMEOUT,
        Some(q) => match parse_duration(q) {
            Ok(d) if !d.is_zero() => d,
            Ok(_) => {
                problems.push(Problem::new(at("timeout"), "use more than 0ms"));
                return None;
            }
            Err(e) => {
                problems.push(Problem::new(at("timeout"), e));
                return None;
            }
        },
    };
    Some(RequestBuffering {
        // Reading past the body limit would only end in a 413.
        size: size.min(max_body_bytes.unwrap_or(u64::MAX)),
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        enabled: Option<bool>,
        size: Option<&str>,
        timeout: Option<&str>,
    ) -> RequestBufferingSpec {
        RequestBufferingSpec {
            enabled,
            size: size.map(Into::into),
            timeout: timeout.map(Into::into),
        }
    }

    #[test]
    fn on_by_default_capped_by_the_body_limit() {
        let mut p = Vec::new();
        let d = check(0, None, Some(10 << 20), &mut p).expect("on");
        assert_eq!((d.size, d.timeout), (1 << 20, Duration::from_secs(30)));
        let small = check(0, None, Some(1000), &mut p).expect("on");
        assert_eq!(small.size, 1000);
        let s = spec(None, Some("256KiB"), Some("5s"));
        let c = check(0, Some(&s), None, &mut p).expect("on");
        assert_eq!((c.size, c.timeout), (256 << 10, Duration::from_secs(5)));
        assert_eq!(
            check(0, Some(&spec(Some(false), None, None)), None, &mut p),
            None
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn bad_sizes_and_timeouts_are_problems() {
        for s in [
            spec(None, Some("0"), None),
            spec(None, Some("unlimited"), None),
            spec(None, Some("65MiB"), None),
            spec(None, Some("lots"), None),
            spec(None, None, Some("0s")),
            spec(None, None, Some("5")),
        ] {
            let mut p = Vec::new();
            assert_eq!(check(3, Some(&s), None, &mut p), None, "{s:?}");
            assert_eq!(p.len(), 1, "{s:?}");
            assert!(
                p[0].path.starts_with("apis[3].request_buffering."),
                "{:?}",
                p[0]
            );
        }
    }
}
