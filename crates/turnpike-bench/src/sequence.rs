//! `{seq}` in a load test's URL: every request carries a value no other request of the
//! run (nor of an earlier run) carried, e.g. `?n={seq}` for a stream of cache misses, or
//! a new key per request for any store a test wants to fill.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::BenchError;

/// The placeholder as users write it.
pub const PLACEHOLDER: &str = "{seq}";

/// A URL without its placeholder, and where in its path and query the value goes.
#[derive(Debug, PartialEq, Eq)]
pub struct SplitUrl {
    pub url: String,
    /// Byte offset in the URL's path-and-query; `None`: no placeholder.
    pub at: Option<usize>,
}

/// Takes `{seq}` out of `url`. Refused: more than one, or one outside the path and query
/// (in the scheme or the host, where a new value per request would be a new server).
pub fn split(url: &str) -> Result<SplitUrl, BenchError> {
    let Some((before, after)) = url.split_once(PLACEHOLDER) else {
        return Ok(SplitUrl {
            url: url.to_owned(),
            at: None,
        });
    };
    if after.contains(PLACEHOLDER) {
        return Err(BenchError::Usage(format!(
            "--url has {PLACEHOLDER} more than once: {url}"
        )));
    }
    let in_path = before
        .split_once("://")
        .is_some_and(|(_, rest)| rest.contains('/'));
    if !in_path || after.contains('#') {
        return Err(BenchError::Usage(format!(
            "{PLACEHOLDER} belongs in the URL's path or query: {url}"
        )));
    }
    let joined = format!("{before}{after}");
    let pq_len = joined
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.path_and_query().map(|p| p.as_str().len()))
        .unwrap_or(0);
    Ok(SplitUrl {
        at: Some(pq_len.saturating_sub(after.len())),
        url: joined,
    })
}

/// The run's values: its start (milliseconds since the epoch), a dash, a counter shared
/// by every connection and thread of the run.
#[derive(Debug, Clone)]
pub struct Sequence {
    run: Arc<str>,
    next: Arc<AtomicU64>,
}

impl Default for Sequence {
    fn default() -> Self {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        Sequence {
            run: format!("{ms}-").into(),
            next: Arc::default(),
        }
    }
}

impl Sequence {
    /// Appends the next value to `out`.
    pub fn write_next(&self, out: &mut Vec<u8>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        out.extend_from_slice(self.run.as_bytes());
        // Writing a number into a Vec cannot fail.
        let _ = write!(out, "{n}");
    }

    /// Bytes a value takes on the wire, about (for the sent-bytes estimate).
    pub fn typical_len(&self) -> u64 {
        self.run.len() as u64 + 7
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_is_found_in_the_path_or_query() {
        let s = split("http://127.0.0.1:8080/api/v1/x?size=50&n={seq}").expect("split");
        assert_eq!(s.url, "http://127.0.0.1:8080/api/v1/x?size=50&n=");
        assert_eq!(s.at, Some("/api/v1/x?size=50&n=".len()));
        let s = split("http://h/items/{seq}/detail").expect("split");
        assert_eq!(s.url, "http://h/items//detail");
        assert_eq!(s.at, Some("/items/".len()));
        assert_eq!(split("http://h/x").expect("split").at, None);
    }

    #[test]
    fn the_placeholder_elsewhere_or_twice_is_refused() {
        for bad in [
            "http://{seq}.example/x",
            "http://h:{seq}/x",
            "http://h{seq}",
            "http://h/{seq}/{seq}",
            "http://h/x?a={seq}#frag",
        ] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_never_repeat_across_clones() {
        let s = Sequence::default();
        let t = s.clone();
        let mut seen = std::collections::HashSet::new();
        for i in 0..1000 {
            let mut out = Vec::new();
            if i % 2 == 0 {
                s.write_next(&mut out)
            } else {
                t.write_next(&mut out)
            }
            assert!(seen.insert(out), "value {i} repeated");
        }
    }
}
