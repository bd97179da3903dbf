//! WSO2's field names accepted where they mean the same thing as ours, rewritten before
//! a body is read (so every check, error and stored value uses our names):
//!
//! - tiers (Admin API `throttling/policies/...`): `policyName` → `name`; `defaultLimit`
//!   (`{"type": "REQUESTCOUNTLIMIT", "requestCount": {"requestCount", "timeUnit",
//!   "unitTime"}}` or `"BANDWIDTHLIMIT"` with `{"dataAmount", "dataUnit", "timeUnit",
//!   "unitTime"}`) → `requestCount` / `dataAmount` (bytes; `KB` = 1024) per `unitSeconds`;
//!   `rateLimitCount` + `rateLimitTimeUnit` (`sec`/`min`) → `burst`; `stopOnQuotaReach` →
//!   `stopOnQuota`; `displayName`, `billingPlan`, `policyId` and `isDeployed`, which have
//!   no meaning here, are dropped.
//! - users (Admin API `users`): `username` and `userName` → `name`.
//!
//! A field given under both names keeps ours; a `defaultLimit` that cannot be read is left
//! in place, so the body is refused naming it.

use serde_json::{json, Map, Value};

/// Seconds in WSO2's `timeUnit`.
fn unit_seconds(unit: &str) -> Option<i64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "ms" => return None,
        "sec" | "second" | "seconds" | "s" => 1,
        "min" | "minute" | "minutes" | "m" => 60,
        "hour" | "hours" | "h" => 3600,
        "day" | "days" | "d" => 86_400,
        "month" | "months" => 30 * 86_400,
        _ => return None,
    })
}

fn bytes_in(unit: &str) -> Option<i64> {
    Some(match unit.to_ascii_uppercase().as_str() {
        "B" => 1,
        "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        _ => return None,
    })
}

fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.entry(to).or_insert(v);
    }
}

/// Our fields for WSO2's `defaultLimit`, or `None` when it cannot be read.
fn default_limit(limit: &Value) -> Option<Map<String, Value>> {
    let (inner, amount_key) = match (limit.get("requestCount"), limit.get("bandwidth")) {
        (Some(rc), None) => (rc, "requestCount"),
        (None, Some(bw)) => (bw, "dataAmount"),
        _ => return None,
    };
    let per = unit_seconds(inner.get("timeUnit")?.as_str()?)?;
    let unit_time = inner.get("unitTime").map_or(Some(1), Value::as_i64)?;
    let mut amount = inner.get(amount_key)?.as_i64()?;
    if amount_key == "dataAmount" {
        let unit = inner.get("dataUnit").and_then(Value::as_str).unwrap_or("B");
        amount = amount.checked_mul(bytes_in(unit)?)?;
    }
    let mut out = Map::new();
    out.insert(amount_key.into(), json!(amount));
    out.insert("unitSeconds".into(), json!(unit_time.checked_mul(per)?));
    Some(out)
}

/// Rewrites a tier body's WSO2 names.
pub(crate) fn tier(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    rename(obj, "policyName", "name");
    rename(obj, "stopOnQuotaReach", "stopOnQuota");
    for dropped in ["displayName", "billingPlan", "policyId", "isDeployed"] {
        obj.remove(dropped);
    }
    if let Some(ours) = obj.get("defaultLimit").and_then(default_limit) {
        obj.remove("defaultLimit");
        for (k, v) in ours {
            obj.entry(k).or_insert(v);
        }
    }
    let count = obj.get("rateLimitCount").and_then(Value::as_i64);
    let per = obj.get("rateLimitTimeUnit").and_then(Value::as_str);
    match (count, per) {
        // WSO2 sends 0 (or -1) for "no burst control".
        (Some(c), _) if c <= 0 => {
            obj.remove("rateLimitCount");
            obj.remove("rateLimitTimeUnit");
        }
        (Some(c), Some(unit)) => {
            let per = match unit_seconds(unit) {
                Some(1) => "second",
                Some(60) => "minute",
                _ => return,
            };
            obj.remove("rateLimitCount");
            obj.remove("rateLimitTimeUnit");
            obj.entry("burst")
                .or_insert(json!({"requests": c, "per": per}));
        }
        _ => {}
    }
}

/// Rewrites a user body's WSO2 names.
pub(crate) fn user(v: &mut Value) {
    if let Some(obj) = v.as_object_mut() {
        rename(obj, "username", "name");
        rename(obj, "userName", "name");
    }
}

/// WSO2's `endpointConfig` as `endpoints` (production, else sandbox, as before sandbox
/// endpoints existed) and `sandboxEndpoints`.
pub(crate) fn endpoint_config(props: &mut Value) {
    let Some(obj) = props.as_object_mut() else {
        return;
    };
    let Some(cfg) = obj.remove("endpointConfig") else {
        return;
    };
    if obj.contains_key("endpoints") {
        return;
    }
    let urls_of = |k: &str| -> Vec<Value> {
        match cfg.get(k) {
            Some(Value::Array(a)) => a.iter().filter_map(|e| e.get("url").cloned()).collect(),
            Some(e) => e.get("url").cloned().into_iter().collect(),
            None => Vec::new(),
        }
    };
    let sandbox = urls_of("sandbox_endpoints");
    let urls: Vec<Value> = urls_of("production_endpoints")
        .into_iter()
        .chain(sandbox.iter().cloned())
        .take(1)
        .collect();
    obj.insert("endpoints".into(), Value::Array(urls));
    if !sandbox.is_empty() && !obj.contains_key("sandboxEndpoints") {
        obj.insert("sandboxEndpoints".into(), Value::Array(sandbox));
    }
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wso2_request_count_tier_reads_as_ours() {
        let mut v = json!({"policyName": "Gold2", "displayName": "Gold 2", "defaultLimit":
            {"type": "REQUESTCOUNTLIMIT", "requestCount": {"timeUnit": "min", "unitTime": 1, "requestCount": 5000}},
            "rateLimitCount": 100, "rateLimitTimeUnit": "sec", "stopOnQuotaReach": true, "billingPlan": "FREE"});
        tier(&mut v);
        assert_eq!(
            v,
            json!({"name": "Gold2", "requestCount": 5000, "unitSeconds": 60,
                "burst": {"requests": 100, "per": "second"}, "stopOnQuota": true})
        );
    }

    #[test]
    fn a_bandwidth_limit_is_bytes_and_no_burst_is_dropped() {
        let mut v = json!({"policyName": "Data", "defaultLimit": {"type": "BANDWIDTHLIMIT",
            "bandwidth": {"timeUnit": "hour", "unitTime": 2, "dataAmount": 3, "dataUnit": "MB"}},
            "rateLimitCount": 0, "rateLimitTimeUnit": "sec"});
        tier(&mut v);
        assert_eq!(
            v,
            json!({"name": "Data", "dataAmount": 3 << 20, "unitSeconds": 7200})
        );
    }

    #[test]
    fn an_unreadable_limit_stays_to_be_refused_and_ours_win() {
        let mut v = json!({"name": "A", "policyName": "B", "defaultLimit": {"requestCount": {"timeUnit": "fortnight"}}});
        tier(&mut v);
        assert_eq!(v["name"], "A");
        assert!(v.get("defaultLimit").is_some());
        let mut u = json!({"username": "alice", "password": "x"});
        user(&mut u);
        assert_eq!(u, json!({"name": "alice", "password": "x"}));
    }

    #[test]
    fn endpoint_config_gives_production_and_sandbox_endpoints() {
        let mut v = json!({"endpointConfig": {"endpoint_type": "http",
            "production_endpoints": {"url": "http://prod"},
            "sandbox_endpoints": [{"url": "http://sb1"}, {"url": "http://sb2"}]}});
        endpoint_config(&mut v);
        assert_eq!(
            v,
            json!({"endpoints": ["http://prod"], "sandboxEndpoints": ["http://sb1", "http://sb2"]})
        );
        // Sandbox only: production calls go there too, as before sandbox endpoints existed.
        let mut v = json!({"endpointConfig": {"sandbox_endpoints": {"url": "http://sb"}}});
        endpoint_config(&mut v);
        assert_eq!(
            v,
            json!({"endpoints": ["http://sb"], "sandboxEndpoints": ["http://sb"]})
        );
    }
}
