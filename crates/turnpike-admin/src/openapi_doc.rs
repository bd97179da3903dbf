//! The OpenAPI 3 document of the control plane's own REST APIs, served at
//! `/api/am/openapi.json`. Tests check every operation here against the live router.

use serde_json::{json, Map, Value};

/// (method, path, summary, role)
pub const OPERATIONS: &[(&str, &str, &str, &str)] = &[
    (
        "get",
        "/api/am/publisher/v1/apis",
        "List and filter APIs (query, name, context, state, limit, offset)",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis",
        "Create an API",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/import-openapi",
        "Create an API from an OpenAPI 3 document",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/copy-api",
        "Copy an API as a new version (apiId, newVersion, defaultVersion)",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/apis/change-lifecycle",
        "Apply a lifecycle action (apiId, action)",
        "publisher",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}",
        "Get an API",
        "publisher",
    ),
    (
        "put",
        "/api/am/publisher/v1/apis/{apiId}",
        "Update an API (If-Match)",
        "publisher",
    ),
    (
        "delete",
        "/api/am/publisher/v1/apis/{apiId}",
        "Delete an API (If-Match)",
        "publisher",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/lifecycle-state",
        "Current state and allowed actions",
        "publisher",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/swagger",
        "The API's OpenAPI definition",
        "publisher",
    ),
    (
        "get",
        "/api/am/publisher/v1/subscriptions",
        "Subscriptions of an API (apiId)",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/subscriptions/block-subscription",
        "Block a subscription (subscriptionId, blockState)",
        "publisher",
    ),
    (
        "post",
        "/api/am/publisher/v1/subscriptions/unblock-subscription",
        "Unblock a subscription (subscriptionId)",
        "publisher",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis",
        "List and search visible APIs",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis/{apiId}",
        "Get a visible API",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/apis/{apiId}/swagger",
        "A visible API's definition",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications",
        "The caller's applications",
        "subscriber",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications",
        "Create an application",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Get an application",
        "subscriber",
    ),
    (
        "put",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Update an application (If-Match)",
        "subscriber",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}",
        "Delete an application and its subscriptions",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/subscriptions",
        "Subscriptions of an application (applicationId)",
        "subscriber",
    ),
    (
        "post",
        "/api/am/devportal/v1/subscriptions",
        "Subscribe an application to an API with a tier",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "Get a subscription",
        "subscriber",
    ),
    (
        "delete",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "Unsubscribe",
        "subscriber",
    ),
    (
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "List tiers (subscription, application, advanced)",
        "admin",
    ),
    (
        "post",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "Create a tier",
        "admin",
    ),
    (
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Get a tier",
        "admin",
    ),
    (
        "put",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Update a tier (If-Match)",
        "admin",
    ),
    (
        "delete",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "Delete an unused tier",
        "admin",
    ),
    ("get", "/api/am/admin/v1/users", "List users", "admin"),
    (
        "post",
        "/api/am/admin/v1/users",
        "Create a user with roles",
        "admin",
    ),
    (
        "get",
        "/api/am/admin/v1/users/{name}",
        "Get a user",
        "admin",
    ),
    (
        "delete",
        "/api/am/admin/v1/users/{name}",
        "Delete a user",
        "admin",
    ),
    (
        "get",
        "/api/am/admin/v1/gateways",
        "Gateways, the version each serves and convergence time",
        "admin",
    ),
    (
        "get",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "Credentials the API accepts (default: OAuth2 and a subscription)",
        "publisher",
    ),
    (
        "put",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "Set the credentials the API accepts (\"none\" opens it; null restores the default)",
        "publisher",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/generate-keys",
        "Generate OAuth2 keys (keyType, grantTypes, tokenType JWT|OPAQUE, scopes, TTLs); the secret is shown once",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/keys",
        "The application's OAuth2 keys (no secrets)",
        "subscriber",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}",
        "Delete the application's keys of a type",
        "subscriber",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}/regenerate-secret",
        "New consumer secret, shown once",
        "subscriber",
    ),
    (
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "The application's API keys (no keys)",
        "subscriber",
    ),
    (
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "Create an API key (name, keyType, scopes, validityPeriod); the key is shown once",
        "subscriber",
    ),
    (
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys/{keyId}",
        "Revoke an API key",
        "subscriber",
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

/// The document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for (method, path, summary, role) in OPERATIONS {
        let security = if *role == "gateway" {
            json!([{"gatewayToken": []}])
        } else {
            json!([{"basic": []}])
        };
        let op = json!({
            "summary": summary,
            "description": format!("Requires the {role} role."),
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
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(method.to_string(), op);
        }
    }
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
                "gatewayToken": {"type": "http", "scheme": "bearer"}
            },
            "responses": {
                "Error": {
                    "description": "error",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                }
            },
            "schemas": {
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
