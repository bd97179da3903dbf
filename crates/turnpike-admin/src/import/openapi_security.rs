//! An imported OpenAPI document's security schemes as the API's authentication: an
//! `apiKey` scheme (in a header or the query) becomes API-key auth reading that header or
//! query parameter, `oauth2`/`openIdConnect`/`http bearer` keep OAuth2 tokens, `http basic`
//! becomes Basic auth. Only the schemes the document's `security` requirements use count
//! (all declared ones when no requirement names any). A document with no `apiKey` or
//! `basic` scheme keeps the default (OAuth2), as before.

use serde_json::Value;
use turnpike_model::security::ApiAuthSpec;
use turnpike_store::Resource;

/// The scheme names the document's (and its operations') `security` requirements use.
fn used_schemes(doc: &Value) -> Vec<String> {
    let ops = doc
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values())
        .filter_map(|op| op.get("security"));
    let mut names: Vec<String> = doc
        .get("security")
        .into_iter()
        .chain(ops)
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|req| req.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The API's authentication from the document's security schemes; `None` keeps the
/// default. What cannot be mapped is a warning.
pub(crate) fn auth_of(
    doc: &Value,
    resources: &[Resource],
    warnings: &mut Vec<String>,
) -> Option<ApiAuthSpec> {
    let schemes = doc
        .pointer("/components/securitySchemes")
        .and_then(Value::as_object)?;
    let used = used_schemes(doc);
    let mut auth = ApiAuthSpec {
        oauth2: false,
        ..ApiAuthSpec::default()
    };
    let mut mapped = false;
    for (name, scheme) in schemes {
        if !used.is_empty() && !used.contains(name) {
            continue;
        }
        let kind = scheme.get("type").and_then(Value::as_str).unwrap_or("");
        let http = scheme.get("scheme").and_then(Value::as_str).unwrap_or("");
        match (kind, http.to_ascii_lowercase().as_str()) {
            ("apiKey", _) => mapped |= api_key(name, scheme, &mut auth, warnings),
            ("http", "basic") => {
                auth.basic = true;
                mapped = true;
            }
            ("oauth2" | "openIdConnect", _) | ("http", "bearer") => auth.oauth2 = true,
            _ => warnings.push(format!(
                "components.securitySchemes.{name}: type {kind:?} is not mapped (OAuth2 kept)"
            )),
        }
    }
    // Scoped resources need tokens that carry scopes.
    auth.oauth2 |= resources.iter().any(|r| !r.scopes.is_empty());
    mapped.then_some(auth)
}

/// An `apiKey` scheme: its header or query parameter name kept. False when it cannot be
/// mapped (a cookie, a second header name).
fn api_key(name: &str, scheme: &Value, auth: &mut ApiAuthSpec, warnings: &mut Vec<String>) -> bool {
    let key_name = scheme.get("name").and_then(Value::as_str).unwrap_or("");
    let place = scheme.get("in").and_then(Value::as_str).unwrap_or("");
    let valid = !key_name.is_empty()
        && key_name.len() <= 100
        && key_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    let slot = match place {
        "header" => &mut auth.api_key_header,
        "query" => &mut auth.api_key_query,
        _ => {
            warnings.push(format!(
                "components.securitySchemes.{name}: an API key in {place:?} is not supported (header or query)"
            ));
            return false;
        }
    };
    if !valid || slot.as_deref().is_some_and(|n| n != key_name) {
        warnings.push(format!(
            "components.securitySchemes.{name}: API key {place} {key_name:?} not used (one {place} name per API, letters, digits, '-', '_', '.')"
        ));
        return false;
    }
    *slot = Some(key_name.to_string());
    auth.api_key = true;
    true
}
