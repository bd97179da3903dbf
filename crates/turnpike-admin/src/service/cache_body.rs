//! An API's response cache in the Publisher REST API: `cacheConfiguration`, the file's
//! `cache` policy entry in its own shape (`turnpike_model::policy::CacheSpec`,
//! docs/caching.md), stored with the API's other gateway settings; and purges, appended
//! to it so they reach every gateway with the snapshot. The shape is checked here; what
//! the values mean (a duration, a size) is checked by compiling the API.

use serde_json::{json, Value};
use turnpike_model::policy::{CachePurge, CacheSpec, ResourceCacheSpec};
use turnpike_model::rest::cache::FIELD;

use crate::error::{ApiError, FieldError};
use crate::validate::Fields;

/// Purges an API's configuration keeps (the newest; a gateway that missed older ones
/// has had its snapshot replaced since, and the settings compile refuses more).
pub const MAX_PURGES: usize = 32;

/// Checks a body's `cacheConfiguration` (recording errors in `f`); the value to store.
pub fn check(f: &mut Fields<'_>) -> Option<Value> {
    let v = f.value(FIELD)?;
    // Stored as the file's form serializes it (defaults spelled out where the file
    // does), so `turnpike apply` finds what it sent and changes nothing the next time.
    match serde_json::from_value::<CacheSpec>(v.clone()) {
        Ok(spec) => Some(turnpike_model::rest::cache::from_spec(&spec)),
        Err(e) => {
            f.err(FIELD, format!("not a cache configuration: {e}"));
            None
        }
    }
}

/// Checks a resource's `cacheConfiguration` (`false`, `true`, or settings over the
/// API's: the file's resource `cache:`); the value to store, in the file's form.
pub fn check_resource(f: &mut Fields<'_>) -> Option<Value> {
    let v = f.value(FIELD)?;
    match serde_json::from_value::<ResourceCacheSpec>(v.clone()) {
        Ok(spec) => serde_json::to_value(&spec).ok(),
        Err(e) => {
            f.err(
                FIELD,
                format!("must be false, true or a cache configuration: {e}"),
            );
            None
        }
    }
}

/// The file's `cache` policy entry (`{"cache": {...}}`) for a stored configuration.
pub fn policy(stored: &Value) -> Option<Value> {
    (!stored.is_null()).then(|| json!({ "cache": stored }))
}

/// The REST field of a problem the compiler found at `policies[i].cache{rest}`.
pub fn rest_field(rest: &str) -> Option<String> {
    if let Some((resource, inner)) = rest.split_once("].cache") {
        if resource.starts_with("resources[") && (inner.is_empty() || inner.starts_with('.')) {
            return Some(format!("{resource}].{FIELD}{inner}"));
        }
    }
    let after = rest.strip_prefix("policies[")?;
    let (_, tail) = after.split_once(']')?;
    let inner = tail.strip_prefix(".cache")?;
    Some(format!("{FIELD}{inner}"))
}

/// The purge a `POST .../cache/purge` body asks for: everything, a key prefix (an
/// upstream path) or a tag.
pub fn purge_of(body: &Value) -> Result<(Option<String>, Option<String>), ApiError> {
    let mut f = Fields::new(body, "");
    let prefix = f.string("prefix", false, 2000);
    let tag = f.string("tag", false, 200);
    f.finish_unknown();
    if prefix.is_some() && tag.is_some() {
        f.err("tag", "a purge names a prefix or a tag, not both");
    }
    if prefix.as_deref().is_some_and(|p| !p.starts_with('/')) {
        f.err("prefix", "an upstream path prefix starts with '/'");
    }
    f.into_result()?;
    Ok((prefix, tag))
}

/// `stored` with one more purge, its id above every earlier one and at least `now_ms`
/// (ids never go back, even after the configuration is removed and added again), the
/// oldest dropped beyond [`MAX_PURGES`]. `Err`: the API has no cache.
pub fn with_purge(
    stored: Option<&Value>,
    prefix: Option<String>,
    tag: Option<String>,
    now_ms: u64,
) -> Result<(Value, CachePurge), ApiError> {
    let no_cache = || {
        ApiError::invalid(vec![FieldError {
            field: FIELD.into(),
            message: "the API has no response cache to purge".into(),
        }])
    };
    let stored = stored.filter(|v| !v.is_null()).ok_or_else(no_cache)?;
    let mut spec: CacheSpec =
        serde_json::from_value(stored.clone()).map_err(|_| ApiError::internal())?;
    let last = spec.purges.iter().map(|p| p.id).max().unwrap_or(0);
    let purge = CachePurge {
        id: now_ms.max(last + 1),
        prefix,
        tag,
    };
    spec.purges.push(purge.clone());
    let over = spec.purges.len().saturating_sub(MAX_PURGES);
    spec.purges.drain(..over);
    let value = serde_json::to_value(&spec).map_err(|_| ApiError::internal())?;
    Ok((value, purge))
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purges_append_with_rising_ids_and_stay_bounded() {
        let stored = json!({"ttl": "60s"});
        let (mut v, first) = with_purge(Some(&stored), None, Some("t".into()), 5).unwrap();
        assert_eq!(first.id, 5);
        for _ in 0..40 {
            v = with_purge(Some(&v), Some("/p".into()), None, 1).unwrap().0;
        }
        let spec: CacheSpec = serde_json::from_value(v).unwrap();
        assert_eq!(spec.purges.len(), MAX_PURGES);
        assert_eq!(spec.purges.last().unwrap().id, 45);
        assert_eq!(spec.ttl, serde_json::from_value(json!("60s")).unwrap());
        assert!(with_purge(None, None, None, 1).is_err());
    }

    #[test]
    fn compile_problems_name_the_rest_field() {
        assert_eq!(
            rest_field("policies[1].cache.ttl").as_deref(),
            Some("cacheConfiguration.ttl")
        );
        assert_eq!(rest_field("policies[0].cors.max_age"), None);
        assert_eq!(
            rest_field("resources[2].cache.ttl").as_deref(),
            Some("resources[2].cacheConfiguration.ttl")
        );
    }
}
