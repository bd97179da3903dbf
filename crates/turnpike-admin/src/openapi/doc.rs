//! The OpenAPI 3 document of the control plane's own REST APIs, served at
//! `/api/am/openapi.json`. Tests check every operation here against the live router.

use serde_json::{json, Map, Value};

/// One operation of the REST APIs: what the router serves and the document describes.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    /// Unique across the document: what a generated client names the call.
    pub id: &'static str,
    pub summary: &'static str,
    /// The `apim:` scope a bearer token needs (see `crate::scopes` for the role each
    /// implies), or `gateway` for the gateway token.
    pub scope: &'static str,
}

const fn op(
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    scope: &'static str,
) -> Operation {
    Operation {
        method,
        path,
        id,
        summary,
        scope,
    }
}

/// Every operation, in the document's order.
pub const OPERATIONS: &[Operation] = &[
    op(
        "get",
        "/api/am/publisher/v1/apis",
        "listApis",
        "List and filter APIs (query, name, context, state, limit, offset)",
        "apim:api_view",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis",
        "createApi",
        "Create an API",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/import-graphql-schema",
        "importGraphqlSchema",
        "Create a GraphQL API from an SDL schema: multipart (file, additionalProperties), JSON ({definition, additionalProperties}) or the SDL (application/graphql)",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/import-openapi",
        "importOpenApi",
        "Create an API from an OpenAPI 3 document: multipart (file or url, additionalProperties), JSON ({definition|url, additionalProperties} or the document) or YAML",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/import-wsdl",
        "importWsdl",
        "Create a SOAP or SOAP_TO_REST API from a WSDL 1.1: JSON ({wsdl, files} text, a base64 zip or a url; type, port, getOperations, additionalProperties) or multipart (file: the WSDL or a zip, url, implementationType, additionalProperties); the answer's soap lists the operations and what could not be mapped",
        "apim:api_create",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/wsdl",
        "getApiWsdl",
        "The WSDL a SOAP or SOAP_TO_REST API was imported from (404 for other APIs)",
        "apim:api_view",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/copy-api",
        "copyApi",
        "Copy an API as a new version (apiId, newVersion, defaultVersion)",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/change-lifecycle",
        "changeApiLifecycle",
        "Apply a lifecycle action (apiId, action)",
        "apim:api_publish",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}",
        "getApi",
        "Get an API",
        "apim:api_view",
    ),
    op(
        "put",
        "/api/am/publisher/v1/apis/{apiId}",
        "updateApi",
        "Replace the fields of an API the body names; fields left out keep their values (If-Match)",
        "apim:api_create",
    ),
    op(
        "patch",
        "/api/am/publisher/v1/apis/{apiId}",
        "patchApi",
        "Change some fields of an API (JSON Merge Patch, RFC 7396; null restores a default; If-Match)",
        "apim:api_create",
    ),
    op(
        "delete",
        "/api/am/publisher/v1/apis/{apiId}",
        "deleteApi",
        "Delete an API (If-Match)",
        "apim:api_create",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/lifecycle-state",
        "getApiLifecycleState",
        "Current state and allowed actions",
        "apim:api_view",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/swagger",
        "getApiDefinition",
        "The API's OpenAPI definition",
        "apim:api_view",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/documents",
        "listApiDocuments",
        "The API's documents (markdown)",
        "apim:api_view",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/{apiId}/documents",
        "createApiDocument",
        "Attach a document (name, summary, content in markdown)",
        "apim:api_create",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/documents/{documentId}",
        "getApiDocument",
        "Get a document",
        "apim:api_view",
    ),
    op(
        "put",
        "/api/am/publisher/v1/apis/{apiId}/documents/{documentId}",
        "updateApiDocument",
        "Change a document (fields left out keep their values)",
        "apim:api_create",
    ),
    op(
        "delete",
        "/api/am/publisher/v1/apis/{apiId}/documents/{documentId}",
        "deleteApiDocument",
        "Remove a document",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/{apiId}/graphql/explain",
        "explainGraphqlQuery",
        "Depth, cost, per-field breakdown and a tier's limits of a GraphQL query (query, operationName, variables, tier), without running it",
        "apim:api_view",
    ),
    op(
        "post",
        "/api/am/publisher/v1/apis/{apiId}/mediation/try",
        "tryApiMediation",
        "Run a transformation on a sample request or response, without deploying it",
        "apim:api_view",
    ),
    op(
        "get",
        "/api/am/publisher/v1/subscriptions",
        "listApiSubscriptions",
        "Subscriptions of an API (apiId)",
        "apim:api_view",
    ),
    op(
        "post",
        "/api/am/publisher/v1/subscriptions/block-subscription",
        "blockSubscription",
        "Block a subscription (subscriptionId, blockState)",
        "apim:subscription_block",
    ),
    op(
        "post",
        "/api/am/publisher/v1/subscriptions/unblock-subscription",
        "unblockSubscription",
        "Unblock a subscription (subscriptionId)",
        "apim:subscription_block",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis",
        "listVisibleApis",
        "List and search visible APIs (with endpointURLs: gateway URLs per environment)",
        "catalogue",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis/{apiId}",
        "getVisibleApi",
        "Get a visible API",
        "catalogue",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis/{apiId}/swagger",
        "getVisibleApiDefinition",
        "A visible API's definition, its servers the gateway URLs of each environment",
        "catalogue",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis/{apiId}/documents",
        "listVisibleApiDocuments",
        "A visible API's documents",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis/{apiId}/documents/{documentId}",
        "getVisibleApiDocument",
        "Get a visible API's document",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/apis/{apiId}/documents/{documentId}/content",
        "getVisibleApiDocumentContent",
        "A document's markdown (text/markdown)",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/applications",
        "listApplications",
        "The caller's applications",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/applications",
        "createApplication",
        "Create an application",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/applications/{applicationId}",
        "getApplication",
        "Get an application",
        "apim:subscribe",
    ),
    op(
        "put",
        "/api/am/devportal/v1/applications/{applicationId}",
        "updateApplication",
        "Replace the fields of an application the body names; fields left out keep their values (If-Match)",
        "apim:subscribe",
    ),
    op(
        "patch",
        "/api/am/devportal/v1/applications/{applicationId}",
        "patchApplication",
        "Change some fields of an application (JSON Merge Patch; If-Match)",
        "apim:subscribe",
    ),
    op(
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}",
        "deleteApplication",
        "Delete an application and its subscriptions",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/subscriptions",
        "listSubscriptions",
        "Subscriptions of an application (applicationId)",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/subscriptions",
        "subscribe",
        "Subscribe an application to an API with a tier",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "getSubscription",
        "Get a subscription",
        "apim:subscribe",
    ),
    op(
        "delete",
        "/api/am/devportal/v1/subscriptions/{subscriptionId}",
        "unsubscribe",
        "Unsubscribe",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "listTiers",
        "List tiers (subscription, application, advanced)",
        "apim:admin",
    ),
    op(
        "post",
        "/api/am/admin/v1/throttling/policies/{kind}",
        "createTier",
        "Create a tier",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "getTier",
        "Get a tier",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "updateTier",
        "Replace the fields of a tier the body names; fields left out keep their values (If-Match)",
        "apim:admin",
    ),
    op(
        "patch",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "patchTier",
        "Change some fields of a tier (JSON Merge Patch; requestCount null makes it unlimited; If-Match)",
        "apim:admin",
    ),
    op(
        "delete",
        "/api/am/admin/v1/throttling/policies/{kind}/{name}",
        "deleteTier",
        "Delete an unused tier",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/audit-log",
        "listAuditLog",
        "Every committed control-plane write, newest first: who (user), what (action), when, and the store version it made (user, q, from, to, limit, offset)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/users",
        "listUsers",
        "List users",
        "apim:admin",
    ),
    op(
        "post",
        "/api/am/admin/v1/users",
        "createUser",
        "Create a user with roles",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/users/{name}",
        "getUser",
        "Get a user",
        "apim:admin",
    ),
    op(
        "delete",
        "/api/am/admin/v1/users/{name}",
        "deleteUser",
        "Delete a user",
        "apim:admin",
    ),
    op(
        "patch",
        "/api/am/admin/v1/users/{name}",
        "patchUser",
        "Change a user's roles or status (JSON Merge Patch: roles, status ACTIVE|DISABLED; ACTIVE approves a sign-up); the last active admin stays",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/users/{name}/password",
        "resetUserPassword",
        "Set a user's password",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/applications",
        "listAllApplications",
        "Every application (owner filters)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/applications/{applicationId}",
        "getAnyApplication",
        "Get any application",
        "apim:admin",
    ),
    op(
        "patch",
        "/api/am/admin/v1/applications/{applicationId}",
        "setApplicationStatus",
        "Disable or enable an application (status ACTIVE|DISABLED, If-Match); gateways refuse a disabled application's tokens and keys",
        "apim:admin",
    ),
    op(
        "post",
        "/api/am/devportal/v1/me/change-password",
        "changeOwnPassword",
        "Change the caller's own password (currentPassword, newPassword)",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/self-signup",
        "selfSignup",
        "Sign up as a subscriber (name, password) without credentials, when an admin turned self sign-up on; PENDING until approved when approval is on",
        "none",
    ),
    op(
        "get",
        "/api/am/admin/v1/settings/self-signup",
        "getSelfSignupSettings",
        "Whether self sign-up is on, and whether new users need approval",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/settings/self-signup",
        "setSelfSignupSettings",
        "Turn self sign-up on or off (enabled), with or without approval (approval)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/devportal/v1/settings",
        "getPublicPortalSettings",
        "What a visitor may do before signing in: anonymousBrowsing, selfSignup",
        "none",
    ),
    op(
        "get",
        "/api/am/admin/v1/settings/devportal",
        "getDevportalSettings",
        "Whether the Developer Portal's catalogue is open to anonymous callers (anonymousBrowsing)",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/settings/devportal",
        "setDevportalSettings",
        "Open or close the Developer Portal's catalogue to anonymous callers (anonymousBrowsing)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/settings/environments",
        "getEnvironments",
        "Gateway environments (name, httpUrl, httpsUrl) the DevPortal shows URLs for",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/settings/environments",
        "setEnvironments",
        "Set the gateway environments",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/settings/throttling",
        "getThrottlingSettings",
        "The tier of callers without an application (unauthenticatedTier) and the rate-limit header style (rateLimitHeaders)",
        "apim:admin",
    ),
    op(
        "put",
        "/api/am/admin/v1/settings/throttling",
        "setThrottlingSettings",
        "Set the unauthenticated tier and the rate-limit header style",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/gateways",
        "listGateways",
        "Gateways, the version each serves and convergence time",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "getApiSecurity",
        "Credentials the API accepts (default: OAuth2 and a subscription)",
        "apim:api_view",
    ),
    op(
        "put",
        "/api/am/publisher/v1/apis/{apiId}/security",
        "setApiSecurity",
        "Set the credentials the API accepts (\"none\" opens it; null restores the default)",
        "apim:api_create",
    ),
    op(
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/generate-keys",
        "generateKeys",
        "Generate OAuth2 keys (keyType, grantTypes, tokenType JWT|OPAQUE, scopes, TTLs); the secret is shown once",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/try-it",
        "tryIt",
        "Try-it relay: send one request (method, path, headers, body, keyType) to the gateway with a one-minute token of the application; answers status, headers, body, timeMs",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/keys",
        "listKeys",
        "The application's OAuth2 keys (no secrets)",
        "apim:subscribe",
    ),
    op(
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}",
        "deleteKeys",
        "Delete the application's keys of a type",
        "apim:subscribe",
    ),
    op(
        "put",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}",
        "updateKeys",
        "Change the keys in place (grantTypes, scopes, tokenType, TTLs, callbackUrl): same consumer key and secret",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/keys/{keyType}/regenerate-secret",
        "regenerateSecret",
        "New consumer secret, shown once",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "listApiKeys",
        "The application's API keys (no keys)",
        "apim:subscribe",
    ),
    op(
        "post",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys",
        "createApiKey",
        "Create an API key (name, keyType, scopes, validityPeriod); the key is shown once",
        "apim:subscribe",
    ),
    op(
        "delete",
        "/api/am/devportal/v1/applications/{applicationId}/api-keys/{keyId}",
        "revokeApiKey",
        "Revoke an API key",
        "apim:subscribe",
    ),
    op(
        "get",
        "/api/am/admin/v1/keys",
        "listSigningKeys",
        "The key manager's signing keys (active and retired, no key material)",
        "apim:admin",
    ),
    op(
        "post",
        "/api/am/admin/v1/keys/rotate",
        "rotateSigningKey",
        "Make a new signing key the signer; publishes a snapshot (old keys stay until their tokens expire)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/admin/v1/export",
        "exportEnvironment",
        "The environment as a declarative file for turnpike apply: live APIs and throttling policies (YAML; JSON with Accept: application/json)",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/gateway/v1/snapshot",
        "getSnapshot",
        "Long-poll the gateway snapshot (after, wait); gateway token",
        "gateway",
    ),
    op(
        "post",
        "/api/am/gateway/v1/analytics",
        "ingestAnalytics",
        "A gateway's batch of analytics events ({events: [...]}, docs/analytics.md), rolled up per minute into the store; gateway token",
        "gateway",
    ),
    op(
        "get",
        "/api/am/admin/v1/analytics/{report}",
        "getAnalytics",
        "Analytics over all traffic: summary, traffic (over time), top (by api, application or resource), errors, throttling, latency (percentiles, gateway vs back end); filters apiContext+apiVersion, applicationId, gateway",
        "apim:admin",
    ),
    op(
        "get",
        "/api/am/publisher/v1/apis/{apiId}/analytics/{report}",
        "getApiAnalytics",
        "Analytics of one API: summary, traffic, top (by application or resource), errors, throttling, latency",
        "apim:api_view",
    ),
    op(
        "get",
        "/api/am/devportal/v1/applications/{applicationId}/analytics/{report}",
        "getApplicationAnalytics",
        "Analytics of one of the caller's applications: summary, traffic, top (by api or resource), errors, throttling, latency",
        "apim:subscribe",
    ),
];

fn params(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            let schema = match name {
                "kind" => {
                    json!({"type": "string", "enum": ["subscription", "application", "advanced"]})
                }
                "keyType" => json!({"type": "string", "enum": ["PRODUCTION", "SANDBOX"]}),
                "report" => json!({"type": "string", "enum": crate::rest::analytics::REPORTS}),
                _ => json!({"type": "string"}),
            };
            json!({"name": name, "in": "path", "required": true, "schema": schema})
        })
        .collect()
}

fn error(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// Operations that take no id (in the path or the query), so never answer 404.
const NEVER_404: [&str; 26] = [
    "getEnvironments",
    "setEnvironments",
    "getThrottlingSettings",
    "setThrottlingSettings",
    "selfSignup",
    "getSelfSignupSettings",
    "setSelfSignupSettings",
    "getDevportalSettings",
    "setDevportalSettings",
    "getPublicPortalSettings",
    "listAuditLog",
    "listApis",
    "listVisibleApis",
    "createApi",
    "importOpenApi",
    "importGraphqlSchema",
    "importWsdl",
    "listApplications",
    "createApplication",
    "listUsers",
    "createUser",
    "listGateways",
    "listAllApplications",
    "exportEnvironment",
    "changeOwnPassword",
    "getSnapshot",
];

/// Every status an operation answers, with its body.
fn responses(op: &Operation, has_query: bool) -> Value {
    let (ok, schema) = crate::openapi::detail::success(op.id);
    let mut out = Map::new();
    let ok_body = match (op.id, schema) {
        ("exportEnvironment", _) => json!({"description": "the declarative file", "content": {
            "application/yaml": {"schema": {"type": "object", "description": "the file as YAML"}},
            "application/json": {"schema": {"type": "object"}}}}),
        ("getApiWsdl", _) => json!({"description": "the WSDL", "content": {
            "text/xml": {"schema": {"type": "string"}}}}),
        ("getVisibleApiDocumentContent", _) => json!({"description": "the markdown", "content": {
            "text/markdown": {"schema": {"type": "string"}}}}),
        ("getApiDefinition" | "getVisibleApiDefinition", Some(s)) => {
            json!({"description": "the definition (YAML when it was imported as YAML)", "content": {
            "application/json": {"schema": s}, "application/yaml": {"schema": {"type": "object", "description": "the document as YAML"}}}})
        }
        (_, Some(s)) => {
            json!({"description": "success", "content": {"application/json": {"schema": s}}})
        }
        (_, None) => json!({"description": "success, no body"}),
    };
    out.insert(ok.to_string(), ok_body);
    // The try operations take a free-form JSON body (no schema component) and refuse
    // other media types as every JSON operation does.
    let body = crate::openapi::detail::request_body(op.id).is_some()
        || matches!(op.id, "tryApiMediation" | "tryIt");
    let write = op.method != "get";
    let mut add = |status: u16, what: &str| {
        out.insert(status.to_string(), error(what));
    };
    if op.scope == "gateway" {
        add(401, "not the gateway token");
        add(503, "the control plane is stopping");
        out.insert(
            "304".into(),
            json!({"description": "no newer version within the long-poll"}),
        );
        return Value::Object(out);
    }
    if body || has_query {
        add(400, "invalid fields, all of them listed in errors[]");
    }
    if op.id == "selfSignup" {
        add(403, "self sign-up is off");
    } else if op.scope != "none" {
        add(
            401,
            "no or bad credentials (WWW-Authenticate: Basic and Bearer)",
        );
        add(403, "the caller's roles or token scopes do not allow it");
    }
    if !NEVER_404.contains(&op.id) {
        add(404, "not found (or not the caller's)");
    }
    if write && op.id != "changeOwnPassword" && op.id != "resetUserPassword" {
        add(409, "conflicts with the current state");
    }
    if crate::openapi::detail::takes_if_match(op.id) {
        add(412, "If-Match names an older revision");
    }
    if body {
        add(413, "body over the limit (2 MiB)");
        add(415, "not JSON");
    }
    if crate::openapi::detail::sends_etag(op.id) {
        out.insert(
            "304".into(),
            json!({"description": "If-None-Match already has it"}),
        );
    }
    Value::Object(out)
}

/// The document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in OPERATIONS {
        let Operation {
            method,
            path,
            id,
            summary,
            scope,
        } = *op;
        let (security, description) = match crate::scopes::Scope::parse(scope) {
            Some(s) => (
                json!([{"basic": []}, {"bearer": [scope]}]),
                format!(
                    "Bearer tokens need the {scope} scope; HTTP Basic callers need the {} role.",
                    s.role().unwrap_or("any")
                ),
            ),
            None if scope == "none" => (json!([]), "No credentials.".to_string()),
            None if scope == "catalogue" => (
                json!([{}, {"basic": []}, {"bearer": ["apim:subscribe"]}]),
                "No credentials while anonymous browsing is on (/api/am/admin/v1/settings/devportal); \
                 otherwise bearer tokens need the apim:subscribe scope."
                    .to_string(),
            ),
            None => (
                json!([{"gatewayToken": []}]),
                "Gateways only (the gateway token).".to_string(),
            ),
        };
        let mut parameters = params(path);
        let query = crate::openapi::detail::query_params(id);
        let has_query = !query.is_empty();
        parameters.extend(query);
        if crate::openapi::detail::takes_if_match(id) {
            parameters.push(json!({"name": "If-Match", "in": "header", "required": false,
                "schema": {"type": "string"}, "description": "the ETag last read; 412 when the record changed since"}));
        }
        if crate::openapi::detail::sends_etag(id) {
            parameters.push(json!({"name": "If-None-Match", "in": "header", "required": false,
                "schema": {"type": "string"}, "description": "an ETag; 304 when it is still current"}));
        }
        let mut op_json = json!({
            "operationId": id,
            "summary": summary,
            "description": description,
            "parameters": parameters,
            "security": security,
            "responses": responses(op, has_query),
        });
        if let (Some((schema, required)), Some(o)) = (
            crate::openapi::detail::request_body(id),
            op_json.as_object_mut(),
        ) {
            let schema = json!({"$ref": format!("#/components/schemas/{schema}")});
            let mut content = json!({"application/json": {"schema": schema}});
            if method == "patch" {
                content["application/merge-patch+json"] = json!({"schema": schema});
            }
            if id == "importOpenApi" {
                content["multipart/form-data"] = json!({"schema": {"type": "object", "properties": {
                    "file": {"type": "string", "format": "binary", "description": "the document, JSON or YAML"},
                    "inlineAPIDefinition": {"type": "string"},
                    "url": {"type": "string", "format": "uri"},
                    "additionalProperties": {"type": "string", "description": "the API's fields as JSON"}}}});
                content["application/yaml"] =
                    json!({"schema": {"type": "string", "description": "the bare document"}});
            }
            if id == "importGraphqlSchema" {
                content["multipart/form-data"] = json!({"schema": {"type": "object", "properties": {
                    "file": {"type": "string", "format": "binary", "description": "the schema (SDL)"},
                    "additionalProperties": {"type": "string", "description": "the API's fields as JSON"}}}});
                content["application/graphql"] =
                    json!({"schema": {"type": "string", "description": "the bare schema (SDL)"}});
            }
            o.insert(
                "requestBody".into(),
                json!({"required": required, "content": content}),
            );
        }
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(method.to_string(), op_json);
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
            "schemas": crate::openapi::schemas::schemas()
        }
    })
}
