//! The OpenAPI 3 document of the control plane's own REST APIs, served at
//! `/api/am/openapi.json`. Tests check every operation here against the live router.

use serde_json::{json, Map, Value};

/// (method, path, summary, scope): the `apim:` scope a bearer token needs (see
/// `crate::scopes` for the role each implies), or `gateway` for the gateway token.
pub const OPERATIONS: &[(&str, &str, &str, &str)] = &[
    (
        "get",
        "/api/am/publisher/v1/apis",
        "List and filter APIs (query, name, context, state, limit, offset)",
        "apim:api_view",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis",
        "Create an API",
        "apim:api_create",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/import-openapi",
        "Create an API from an OpenAPI 3 document",
        "apim:api_create",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/copy-api",
        "Copy an API as a new version (apiId, newVersion, defaultVersion)",
        "apim:api_create",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/change-lifecycle",
        "Apply a lifecycle action (apiId, action)",
        "apim:api_publish",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}",
        "Get an API",
        "apim:api_view",
    ),
    (
        "put",
        "/api/am/publisher/v1/apis/{apiId}",
        "Update an API (If-Match)",
        "apim:api_create",
    ),
    (
        "delete",
        "/api/am/publisher/v1/apis/{apiId}",
        "Delete an API (If-Match)",
        "apim:api_create",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/lifecycle-state",
        "Current state and allowed actions",
        "apim:api_view",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/swagger",
        "The API's OpenAPI definition",
        "apim:api_view",
    ),
    (
        "get",
        "/api/am/publisher/v1/subscriptions",
        "Subscriptions of an API (apiId)",
        "apim:api_view",
    ),
    (
        "post",
        "/api/am/publisher/v1/subscriptions/block-subscription",
        "Block a subscription (subscriptionId, blockState)",
        "apim:subscription_block",
    ),
    (
        "post",
        "/api/am/publisher/v1/subscriptions/unblock-subscription",
        "Unblock a subscription (subscriptionId)",
        "apim:subscription_block",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis",
        "List and search visible APIs",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis/{apiId}",
        "Get a visible API",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis/{apiId}/swagger",
        "A visible API's definition",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications",
        "The caller's applications",
        "apim:subscribe",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications",
        "Create an application",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Get an application",
        "apim:subscribe",
    ),
    (
        "put",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Update an application (If-Match)",
        "apim:subscribe",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Delete an application and its subscriptions",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/subscriptions",
        "Subscriptions of an application (applicationId)",
        "apim:subscribe",
    ),
    (
        "post",
        "/api/am/devportal/v1/subscriptions",
        "Subscribe an application to an API with a tier",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "Get a subscription",
        "apim:subscribe",
    ),
    (
        "delete",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "Unsubscribe",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "List tiers (subscription, application, advanced)",
        "apim:admin",
    ),
    (
        "post",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "Create a tier",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Get a tier",
        "apim:admin",
    ),
    (
        "put",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Update a tier (If-Match)",
        "apim:admin",
    ),
    (
        "delete",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Delete an unused tier",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/admin/v1/users",
        "List users",
        "apim:admin",
    ),
    (
        "post",
        "/api/am/admin/v1/users",
        "Create a user with roles",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/admin/v1/users/{name}",
        "Get a user",
        "apim:admin",
    ),
    (
        "delete",
        "/api/am/admin/v1/users/{name}",
        "Delete a user",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/admin/v1/gateways",
        "Gateways, the version each serves and convergence time",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "Credentials the API accepts (default: OAuth2 and a subscription)",
        "apim:api_view",
    ),
    (
        "put",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "Set the credentials the API accepts (\"none\" opens it; null restores the default)",
        "apim:api_create",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/generate-keys",
        "Generate OAuth2 keys (keyType, grantTypes, tokenType JWT|OPAQUE, scopes, TTLs); the secret is shown once",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/keys",
        "The application's OAuth2 keys (no secrets)",
        "apim:subscribe",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}",
        "Delete the application's keys of a type",
        "apim:subscribe",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}/regenerate-secret",
        "New consumer secret, shown once",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "The application's API keys (no keys)",
        "apim:subscribe",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "Create an API key (name, keyType, scopes, validityPeriod); the key is shown once",
        "apim:subscribe",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys/{keyId}",
        "Revoke an API key",
        "apim:subscribe",
    ),
    (
        "get",
        "/api/am/admin/v1/keys",
        "The key manager's signing keys (active and retired, no key material)",
        "apim:admin",
    ),
    (
        "post",
        "/api/am/admin/v1/keys/rotate",
        "Make a new signing key the signer; publishes a snapshot (old keys stay until their tokens expire)",
        "apim:admin",
    ),
    (
        "get",
        "/api/am/gateway/v1/snapshot",
        "Long-poll the gateway snapshot (after, wait); gateway token",
        "gateway",
    ),
];

fn params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

/// The request body schema of an operation, when it takes one worth describing.
fn request_schema(method: &str, path: &str) -> Option<&'static str> {
    match (method, path) {
        ("post", "/api/am/publisher/v1/apis") | ("put", "/api/am/publisher/v1/apis/{apiId}") => {
            Some("Api")
        }
        ("put", "/api/am/publisher/v1/apis/{apiId}/security") => Some("ApiSecurity"),
        _ => None,
    }
}

/// The document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for (method, path, summary, scope) in OPERATIONS {
        let (security, description) = match crate::scopes::Scope::parse(scope) {
            Some(s) => (
                json!([{"basic": []}, {"bearer": [scope]}]),
                format!(
                    "Bearer tokens need the {scope} scope; HTTP Basic callers need the {} role.",
                    s.role().unwrap_or("any")
                ),
            ),
            None => (
                json!([{"gatewayToken": []}]),
                "Gateways only (the gateway token).".to_string(),
            ),
        };
        let mut op = json!({
            "summary": summary,
            "description": description,
            "parameters": params(path),
            "security": security,
            "responses": {
                "200": {"description": "success"},
                "400": {"$ref": "#/components/responses/Error"},
                "401": {"$ref": "#/components/responses/Error"},
                "403": {"$ref": "#/components/responses/Error"},
                "404": {"$ref": "#/components/responses/Error"},
                "409": {"$ref": "#/components/responses/Error"},
                "412": {"$ref": "#/components/responses/Error"}
            }
        });
        if let (Some(schema), Some(o)) = (request_schema(method, path), op.as_object_mut()) {
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {
                    "schema": {"$ref": format!("#/components/schemas/{schema}")}}}}),
            );
        }
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(method.to_string(), op);
        }
    }
    let scopes: Map<String, Value> = crate::scopes::Scope::ALL
        .iter()
        .map(|s| {
            (
                s.as_str().to_string(),
                json!(format!("role: {}", s.role().unwrap_or("any"))),
            )
        })
        .collect();
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Turnpike control plane",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Publisher, DevPortal, Admin and gateway-sync REST APIs."
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "oauth2", "description": "Password grant with the public client turnpike-cli; audience turnpike-control-plane",
                    "flows": {"password": {"tokenUrl": "/oauth2/token", "refreshUrl": "/oauth2/token", "scopes": scopes}}},
                "gatewayToken": {"type": "http", "scheme": "bearer"}
            },
            "responses": {
                "Error": {
                    "description": "error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                }
            },
            "schemas": {
                "Resource": {
                    "type": "object",
                    "required": ["path", "methods"],
                    "additionalProperties": false,
                    "properties": {
                        "path": {"type": "string", "description": "template under /{context}/{version}: /pets, /pets/{id}, /pets/*"},
                        "methods": {"type": "array", "items": {"type": "string", "enum": crate::api_body::METHODS}},
                        "scopes": {"type": "array", "maxItems": 50, "description": "a caller's token needs any one of them (secured APIs only)",
                            "items": {"type": "string", "pattern": "^[!#-\\[\\]-~]{1,100}$"}}
                    }
                },
                "Api": {
                    "type": "object",
                    "required": ["name", "context", "version"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 100},
                        "context": {"type": "string", "maxLength": 200},
                        "version": {"type": "string", "maxLength": 30},
                        "isDefaultVersion": {"type": "boolean"},
                        "type": {"type": "string", "enum": crate::api_body::API_TYPES},
                        "description": {"type": "string"},
                        "endpoints": {"type": "array", "items": {"type": "string", "format": "uri"}},
                        "resources": {"type": "array", "items": {"$ref": "#/components/schemas/Resource"}},
                        "policies": {"type": "array", "items": {"type": "string"}}
                    }
                },
                "ApiSecurity": {
                    "description": "\"none\", or which credentials the API accepts; null restores the default (oauth2 and subscription)",
                    "oneOf": [
                        {"type": "string", "enum": ["none"]},
                        {"type": "object", "additionalProperties": false, "properties": {
                            "oauth2": {"type": "boolean"}, "api_key": {"type": "boolean"},
                            "api_key_header": {"type": "string"}, "api_key_query": {"type": "string"},
                            "basic": {"type": "boolean"}, "subscription": {"type": "boolean"},
                            "backend_jwt": {"type": "object"}}}
                    ]
                },
                "Error": {
                    "type": "object",
                    "required": ["code", "message", "request_id"],
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "request_id": {"type": "string"},
                        "errors": {"type": "array", "items": {"type": "object", "properties": {
                            "field": {"type": "string"}, "message": {"type": "string"}}}}
                    }
                }
            }
        }
    })
}
