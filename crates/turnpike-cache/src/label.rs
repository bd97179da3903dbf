//! The header by which a cached resource's every answer says how the cache served it
//! (`X-Cache: HIT | MISS | STALE | BYPASS`): stamped by the policy, never kept in an entry.

use http::HeaderName;

/// The header that says how the cache answered.
pub(crate) const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
