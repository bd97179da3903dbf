//! An API's CORS setting in the Publisher REST API: `corsConfiguration` with WSO2's field
//! names (plus `accessControlExposeHeaders` and `accessControlMaxAge`), stored with the
//! API's other gateway settings, and its form in the declarative file
//! (`policies: [ { cors: ... } ]`, `turnpike_model::policy::CorsSpec`). The shape is
//! checked here; what the values mean (an origin, a header name) is checked by compiling
//! the API, as for every gateway setting.

use serde_json::{json, Map, Value};
use turnpike_model::rest::cors::FIELD;

use crate::validate::Fields;

const LIST_FIELDS: [(&str, &str); 4] = [
    ("accessControlAllowOrigins", "allow_origins"),
    ("accessControlAllowMethods", "allow_methods"),
    ("accessControlAllowHeaders", "allow_headers"),
    ("accessControlExposeHeaders", "expose_headers"),
];

/// Checks a body's `corsConfiguration` (recording errors in `f`); the value to store.
pub fn check(f: &mut Fields<'_>) -> Option<Value> {
    let v = f.value(FIELD)?;
    let mut c = Fields::new(v, FIELD);
    c.boolean("corsConfigurationEnabled");
    for (rest, _) in LIST_FIELDS {
        c.strings(rest, 100, |s| {
            (s.is_empty() || s.len() > 200 || s.chars().any(char::is_control))
                .then(|| "must be 1-200 characters".to_string())
        });
    }
    c.boolean("accessControlAllowCredentials");
    let age = c.value("accessControlMaxAge");
    if age.is_some_and(|a| {
        a.as_u64().is_none() && !a.as_str().is_some_and(|s| !s.is_empty() && s.len() <= 30)
    }) {
        c.err(
            "accessControlMaxAge",
            "must be a number of seconds or a duration such as \"10m\"",
        );
    }
    c.finish_unknown();
    let ok = c.errors.is_empty();
    f.errors.append(&mut c.errors);
    ok.then(|| v.clone())
}

/// The file's `cors` policy entry (`{"cors": {...}}`) for a stored `corsConfiguration`;
/// `None` when CORS is disabled (`corsConfigurationEnabled: false`).
pub fn policy(stored: &Value) -> Option<Value> {
    if stored.get("corsConfigurationEnabled") == Some(&Value::Bool(false)) {
        return None;
    }
    let mut spec = Map::new();
    spec.insert("allow_origins".into(), json!([]));
    for (rest, file) in LIST_FIELDS {
        if let Some(v) = stored.get(rest).filter(|v| !v.is_null()) {
            spec.insert(file.into(), v.clone());
        }
    }
    if let Some(v) = stored.get("accessControlAllowCredentials") {
        spec.insert("allow_credentials".into(), v.clone());
    }
    if let Some(v) = stored.get("accessControlMaxAge") {
        // WSO2's value is seconds; the file's is a duration with its unit.
        let age = match v.as_u64() {
            Some(secs) => json!(format!("{secs}s")),
            None => v.clone(),
        };
        spec.insert("max_age".into(), age);
    }
    Some(json!({ "cors": spec }))
}

/// The REST field of a problem the compiler found at `policies[0].cors{rest}`
/// (`.allow_origins[1]` -> `corsConfiguration.accessControlAllowOrigins[1]`).
pub fn rest_field(rest: &str) -> String {
    let named = [
        ("allow_credentials", "accessControlAllowCredentials"),
        ("max_age", "accessControlMaxAge"),
    ];
    let inner = rest.strip_prefix('.').unwrap_or(rest);
    for (file, api) in LIST_FIELDS.iter().map(|(a, f)| (*f, *a)).chain(named) {
        if let Some(tail) = inner.strip_prefix(file) {
            return format!("{FIELD}.{api}{tail}");
        }
    }
    FIELD.to_string()
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::policy::CorsSpec;
    use turnpike_model::rest::cors::from_spec;

    #[test]
    fn rest_and_file_forms_map_both_ways() {
        let rest = json!({
            "corsConfigurationEnabled": true,
            "accessControlAllowOrigins": ["https://app.example"],
            "accessControlAllowHeaders": ["authorization"],
            "accessControlAllowCredentials": true,
            "accessControlMaxAge": 600
        });
        let body = json!({ FIELD: rest });
        let mut f = Fields::new(&body, "");
        assert_eq!(check(&mut f), Some(rest.clone()));
        assert!(f.errors.is_empty());
        let entry = policy(&rest).unwrap();
        let spec: CorsSpec = serde_json::from_value(entry["cors"].clone()).unwrap();
        assert_eq!(spec.allow_origins, ["https://app.example"]);
        assert!(spec.allow_credentials);
        assert_eq!(policy(&from_spec(&spec)), Some(entry));
        assert_eq!(policy(&json!({"corsConfigurationEnabled": false})), None);
        assert_eq!(
            rest_field(".allow_origins[1]"),
            "corsConfiguration.accessControlAllowOrigins[1]"
        );
    }

    #[test]
    fn a_bad_shape_names_the_field() {
        let body = json!({ FIELD: {"accessControlAllowOrigins": "x", "origins": []} });
        let mut f = Fields::new(&body, "");
        assert_eq!(check(&mut f), None);
        let fields: Vec<_> = f.errors.iter().map(|e| e.field.as_str()).collect();
        assert!(
            fields.contains(&"corsConfiguration.accessControlAllowOrigins"),
            "{fields:?}"
        );
        assert!(fields.contains(&"corsConfiguration.origins"), "{fields:?}");
    }
}
