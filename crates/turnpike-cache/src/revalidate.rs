//! Revalidation (RFC 9111 section 4.3): a stored answer past its freshness that carries
//! a validator (`ETag`, `Last-Modified`) is not thrown away; the request that goes
//! upstream for it asks conditionally (`If-None-Match`, `If-Modified-Since`), and a
//! `304 Not Modified` refreshes the stored head (its headers updated from the 304's)
//! and is answered with the stored body (`X-Cache: REVALIDATED`).

use http::header::{
    CONNECTION, CONTENT_LENGTH, ETAG, IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE,
    IF_UNMODIFIED_SINCE, LAST_MODIFIED, RANGE, TRANSFER_ENCODING,
};
use http::{HeaderMap, HeaderName};

/// Header names a 304 may update in a stored head before the rest are ignored.
const MAX_UPDATED: usize = 64;

/// The fields that validate a stored answer.
pub(crate) const VALIDATORS: [HeaderName; 2] = [ETAG, LAST_MODIFIED];

/// Whether a stored head carries a validator to revalidate with.
pub(crate) fn has_validator(stored: &HeaderMap) -> bool {
    VALIDATORS.iter().any(|v| stored.contains_key(v))
}

/// Adds the conditional headers for `stored` to an upstream request, unless the request
/// carries conditions or a range of its own (then the client's 304 or 206 is its own
/// business and passes through unstored). Whether it added them.
pub(crate) fn make_conditional(stored: &HeaderMap, req: &mut HeaderMap) -> bool {
    let own = [
        IF_NONE_MATCH,
        IF_MODIFIED_SINCE,
        IF_MATCH,
        IF_UNMODIFIED_SINCE,
        IF_RANGE,
        RANGE,
    ];
    if own.iter().any(|h| req.contains_key(h)) || !has_validator(stored) {
        return false;
    }
    if let Some(etag) = stored.get(ETAG) {
        req.insert(IF_NONE_MATCH, etag.clone());
    }
    if let Some(date) = stored.get(LAST_MODIFIED) {
        req.insert(IF_MODIFIED_SINCE, date.clone());
    }
    true
}

/// The stored head updated from a 304's (RFC 9111 section 3.2: every field the 304
/// carries replaces the stored one, except the framing ones and `ours`, the cache's own
/// label). `None` when the 304 names another `ETag` than the stored one: it validates
/// some other answer, not this one.
pub(crate) fn updated_head(
    stored: &HeaderMap,
    not_modified: &HeaderMap,
    ours: &HeaderName,
) -> Option<HeaderMap> {
    if let (Some(theirs), Some(ours)) = (not_modified.get(ETAG), stored.get(ETAG)) {
        if theirs != ours {
            return None;
        }
    }
    let framing: [HeaderName; 3] = [CONTENT_LENGTH, TRANSFER_ENCODING, CONNECTION];
    let mut head = stored.clone();
    for name in not_modified.keys().take(MAX_UPDATED) {
        if framing.contains(name) || name == ours {
            continue;
        }
        head.remove(name);
        for v in not_modified.get_all(name) {
            head.append(name.clone(), v.clone());
        }
    }
    Some(head)
}
