//! The component schemas of the OpenAPI document: request bodies (with examples, and
//! `additionalProperties: false` wherever the server refuses unknown fields) and
//! response bodies (their required fields; responses may gain fields).

use serde_json::{json, Value};

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn list_of(item: &str, paged: bool) -> Value {
    let mut props = json!({
        "count": {"type": "integer"},
        "list": {"type": "array", "items": r(item)},
    });
    let mut required = vec!["count", "list"];
    if paged {
        props["pagination"] = r("Pagination");
        required.push("pagination");
    }
    json!({"type": "object", "required": required, "properties": props})
}

/// Fields a client may echo back from a GET; the server ignores them on write.
fn read_only_props() -> Value {
    json!({
        "id": {"type": "string", "readOnly": true},
        "lifecycleStatus": {"type": "string", "readOnly": true},
        "provider": {"type": "string", "readOnly": true},
        "revision": {"type": "integer", "readOnly": true},
        "createdTime": {"type": "integer", "readOnly": true},
        "lastUpdatedTime": {"type": "integer", "readOnly": true}
    })
}

/// An API's `cacheConfiguration` (docs/caching.md).
fn cache_props() -> Value {
    json!({"type": "object", "additionalProperties": false, "description": "response cache at the gateway (docs/caching.md), the file's `cache` policy as written; purges are appended by cache/purge", "properties": {
            "ttl": {"type": "string", "example": "60s"},
            "methods": {"type": "array", "maxItems": 7, "items": {"type": "string"}},
            "statuses": {"type": "array", "maxItems": 32, "items": {"type": "integer"}},
            "key": {"type": "object", "additionalProperties": false, "properties": {
                "query": {"type": "boolean"}, "consumer": {"type": "boolean"},
                "headers": {"type": "array", "maxItems": 16, "items": {"type": "string"}}}},
            "max_entry_size": {"type": "string", "example": "1MiB"},
            "max_size": {"type": "string", "example": "64MiB"},
            "stale_while_revalidate": {"type": "string"},
            "stale_if_error": {"type": "string"},
            "lock_timeout": {"type": "string"},
            "min_uses": {"type": "integer", "minimum": 1, "maximum": 64},
            "admission": {"type": "string", "enum": ["adaptive", "always"], "description": "adaptive (default): while a burst earns almost no hits, a miss stores only a key asked before; always: every miss stores"},
            "tag_header": {"type": "string", "example": "Cache-Tag"},
            "shared": {"type": "string", "enum": ["none", "redis"]},
            "purges": {"type": "array", "maxItems": 32, "items": {"$ref": "#/components/schemas/CachePurge"}}}})
}

fn api_props() -> Value {
    let mut p = json!({
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "context": {"type": "string", "maxLength": 200, "pattern": "^/[A-Za-z0-9/_.~-]+$"},
        "version": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,30}$"},
        "isDefaultVersion": {"type": "boolean"},
        "type": {"type": "string", "enum": crate::service::api_body::API_TYPES},
        "description": {"type": "string", "maxLength": 10000},
        "endpoints": {"type": "array", "maxItems": 64, "items": r("Endpoint")},
        "sandboxEndpoints": {"type": "array", "maxItems": 64, "items": r("Endpoint"), "description": "where calls with SANDBOX keys go; none: such calls are refused (403 sandbox_not_configured)"},
        "resources": {"type": "array", "items": r("Resource")},
        "policies": {"type": "array", "maxItems": 50, "items": {"type": "string"}, "description": "subscription tiers offered"},
        "host": {"type": "string", "maxLength": 253, "description": "serve only for this Host (or *.example.com)"},
        "loadBalancing": {"type": "string", "enum": ["round_robin", "failover", "weighted_round_robin", "least_connections"]},
        "resilience": {"type": "object", "description": "endpoint suspension, circuit breaker, retries and health checks, as the declarative file's resilience: section (docs/resilience.md)", "properties": {
            "suspension": {"type": "object", "example": {"on": ["connect_failure", "timeout", "5xx"], "initial_duration": "30s", "progression_factor": 2, "max_duration": "5m"}},
            "circuit_breaker": {"type": "object", "example": {"consecutive_failures": 3, "failure_ratio": 0.5, "window": 20}},
            "retries": {"type": "object", "example": {"attempts": 2}},
            "health_check": {"type": "object", "example": {"path": "/health", "interval": "5s", "healthy_threshold": 2, "unhealthy_threshold": 3}}}},
        "maxBodySize": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 30}], "description": "bytes, or a size such as 10MiB"},
        "timeouts": {"type": "object", "additionalProperties": false, "properties": {
            "connect": {"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "5s"},
            "response": {"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "60s"},
            "read_idle": {"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "60s", "description": "longest silence between two reads of the upstream's response body; no limit when omitted (docs/streaming.md)"}}},
        "upstreamProtocol": {"type": "string", "enum": ["http1", "h2c"], "default": "http1", "description": "h2c: HTTP/2 with prior knowledge to http:// endpoints (gRPC back ends; docs/streaming.md)"},
        "apiThrottlingPolicy": {"type": "string", "description": "the API's advanced policy"},
        "graphql": {"type": "object", "description": "a GraphQL API's section as in the declarative file (schema, introspection, cost, caps, limits, tiers, operations, applications)"},
        "mediation": r("Mediation"),
        "mcp": mcp_section(),
        "requestBuffering": {"type": "object", "additionalProperties": false, "description": "read the request body (up to size) before connecting upstream, so slow clients hold no back-end connection; on by default (docs/operations.md)", "properties": {
            "enabled": {"type": "boolean"},
            "size": {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "maxLength": 30}], "example": "1MiB"},
            "timeout": {"type": "string", "maxLength": 30, "example": "30s"}}},
        "deprecation": {"type": "object", "additionalProperties": false, "description": "dates a DEPRECATED API's responses announce (Deprecation, Sunset and Link headers); RFC 3339 dates", "properties": {
            "since": {"type": "string", "maxLength": 30, "example": "2026-06-30"},
            "sunset": {"type": "string", "maxLength": 30, "example": "2026-12-31T00:00:00Z"},
            "link": {"type": "string", "maxLength": 2000, "format": "uri"}}},
        "corsConfiguration": {"type": "object", "additionalProperties": false, "description": "CORS at the gateway (docs/policies.md): preflights answered before auth", "properties": {
            "corsConfigurationEnabled": {"type": "boolean"},
            "accessControlAllowOrigins": {"type": "array", "maxItems": 100, "items": {"type": "string"}, "example": ["https://app.example"]},
            "accessControlAllowMethods": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "accessControlAllowHeaders": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "accessControlExposeHeaders": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "accessControlAllowCredentials": {"type": "boolean"},
            "accessControlMaxAge": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 30}], "example": "10m"}}},
        "paths": {"type": "object", "additionalProperties": false, "description": "how lenient the gateway is about request paths (docs/security.md, Request paths); strict when omitted", "properties": {
            "matrix_parameters": {"type": "string", "enum": ["refuse", "strip"], "default": "refuse", "description": "refuse: a ';' in the path is 400 invalid_path; strip: ';' parameters are removed before routing and the back end gets the stripped path"},
            "case_insensitive": {"type": "boolean", "default": false, "description": "templates match in any letter case and the path is forwarded in lower case (IIS back ends); context, version and templates must be lower case"}}},
        "tags": {"type": "array", "maxItems": 50, "items": {"type": "string", "minLength": 1, "maxLength": 100}}
    });
    // Its own call: one more nested object in the one above reaches `json!`'s recursion limit.
    p["cacheConfiguration"] = cache_props();
    p["ai"] = ai_props();
    if let (Some(o), Some(ro)) = (p.as_object_mut(), read_only_props().as_object()) {
        for (k, v) in ro {
            o.insert(k.clone(), v.clone());
        }
    }
    p
}

/// An AI API's `ai:` section, in the file's shape (docs/ai-gateway.md).
fn ai_props() -> Value {
    r("AiSection")
}

/// The `ai:` section's schemas: providers, model routes with weighted targets, fallback.
fn ai_schemas() -> Value {
    let duration = json!({"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 30}], "example": "30s"});
    json!({
        "AiSection": strict(&["providers"], json!({
            "providers": {"type": "array", "minItems": 1, "maxItems": 64, "items": r("AiProvider")},
            "models": {"type": "array", "maxItems": 1000, "items": r("AiModel"), "description": "the model names clients may ask for; when empty, any name goes to the first provider"},
            "default_max_tokens": {"type": "integer", "minimum": 1, "description": "the completion cap sent to a provider that needs one when a request sets none (4096)"},
            "max_messages": {"type": "integer", "minimum": 1, "description": "most messages a request may carry (256)"},
            "passthrough": {"type": "boolean", "description": "other paths go to the first provider's own API with its key"},
            "fallback": r("AiFallback")}),
            json!({"providers": [{"name": "openai", "kind": "openai", "url": "https://api.openai.com/v1", "key": "env:OPENAI_API_KEY"}],
                   "models": [{"name": "gpt-4o-mini", "provider": "openai"}]})),
        "AiProvider": strict(&["name", "kind", "url"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "kind": {"type": "string", "enum": ["openai", "anthropic"], "description": "openai: OpenAI and every OpenAI-compatible server; anthropic: Anthropic's Messages API"},
            "url": {"type": "string", "format": "uri", "description": "the provider's base URL up to its version segment"},
            "key": {"type": "string", "maxLength": 1000, "description": "a secret reference, env:NAME or file:/path, read by the gateway; never the key itself"}}),
            json!({"name": "openai", "kind": "openai", "url": "https://api.openai.com/v1", "key": "env:OPENAI_API_KEY"})),
        "AiModel": strict(&["name"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 256, "description": "the name clients ask for"},
            "provider": {"type": "string", "description": "one target: a provider's name (or give targets)"},
            "model": {"type": "string", "description": "the provider's model; the name when omitted"},
            "targets": {"type": "array", "maxItems": 16, "items": r("AiTarget"), "description": "several targets shared by weight, each the others' fallback"}}),
            json!({"name": "fast", "targets": [{"provider": "openai", "model": "gpt-4o-mini", "weight": 3}, {"provider": "local", "model": "llama3", "weight": 1}]})),
        "AiTarget": strict(&["provider"], json!({
            "provider": {"type": "string"},
            "model": {"type": "string"},
            "weight": {"type": "integer", "minimum": 0, "maximum": 100, "description": "share of the calls (1); 0 is a standby"}}),
            json!({"provider": "openai", "model": "gpt-4o-mini", "weight": 3})),
        "AiFallback": strict(&[], json!({
            "retries": {"type": "integer", "minimum": 0, "maximum": 3, "description": "further tries of the same target before the next"},
            "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10, "description": "all tries of one call"},
            "suspend_after": {"type": "integer", "minimum": 0, "description": "failed calls in a row that suspend a provider (3; 0: never)"},
            "suspend_for": duration}),
            json!({"retries": 0, "max_attempts": 3, "suspend_after": 3, "suspend_for": "30s"})),
    })
}

fn api_example() -> Value {
    json!({"name": "Pets", "context": "/pets", "version": "v1", "isDefaultVersion": true,
        "endpoints": ["http://127.0.0.1:8080"],
        "resources": [{"path": "/pets", "methods": ["GET", "POST"]}, {"path": "/health", "methods": ["GET"], "auth": "none"}],
        "policies": ["Gold", "Unlimited"]})
}

fn tier_props() -> Value {
    json!({
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "description": {"type": "string", "maxLength": 1000},
        "requestCount": {"type": "integer", "minimum": 1, "nullable": true, "description": "requests per unitSeconds; neither this nor dataAmount: unlimited"},
        "dataAmount": {"type": "integer", "minimum": 1, "description": "bytes per unitSeconds (a bandwidth tier)"},
        "unitSeconds": {"type": "integer", "minimum": 1, "maximum": 31622400},
        "burst": {"type": "object", "additionalProperties": false, "required": ["requests", "per"], "properties": {
            "requests": {"type": "integer", "minimum": 0}, "per": {"type": "string", "enum": ["second", "minute"]}},
            "description": "subscription tiers: a spike limit on top of the quota"},
        "stopOnQuota": {"type": "boolean", "description": "subscription tiers: false makes a billing tier (over-quota requests pass)"},
        "models": {"type": "array", "maxItems": 1000, "items": {"type": "string", "minLength": 1, "maxLength": 256}, "description": "subscription tiers: the LLM API models (names clients ask for) its subscribers may call; any when empty; others get 403 model_not_allowed"},
        "conditionalGroups": {"type": "array", "items": {"type": "object"}, "description": "advanced policies: the declarative file's groups ({name, conditions: [{type: ip|header|query|claim, ...}], limit: {requests|bytes, per, every}})"},
        "tokenLimits": {"type": "array", "maxItems": 4, "description": "an LLM API's token budgets (the file's tokens:), checked before a call against its estimate and charged with its usage", "items": {
            "type": "object", "additionalProperties": false, "required": ["per"], "properties": {
                "total": {"type": "integer", "minimum": 1, "description": "prompt + completion tokens (exactly one of total, prompt, completion)"},
                "prompt": {"type": "integer", "minimum": 1},
                "completion": {"type": "integer", "minimum": 1},
                "per": {"type": "string", "enum": ["second", "minute", "hour", "day", "month"]},
                "every": {"type": "integer", "minimum": 1},
                "by": {"type": "array", "maxItems": 3, "items": {"type": "string"}, "description": "counted per each value of: model, user, header:NAME, claim:NAME"}}}},
        "kind": {"type": "string", "readOnly": true},
        "revision": {"type": "integer", "readOnly": true}
    })
}

fn strict(required: &[&str], props: Value, example: Value) -> Value {
    let mut schema = json!({"type": "object", "additionalProperties": false, "properties": props, "example": example});
    // OpenAPI 3.0 wants `required` to list at least one name when present.
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// An API as the DevPortal shows it (`rest/devportal.rs` `portal_json`): the record less
/// its back ends and gateway-only settings, with the gateway URLs of each environment.
fn portal_api() -> Value {
    let mut props = api_props();
    if let Some(p) = props.as_object_mut() {
        let hidden = turnpike_model::rest::OPTION_FIELDS
            .iter()
            .map(|(field, _)| *field)
            .filter(|f| *f != "deprecation" && *f != "graphql");
        for field in hidden.chain([
            "endpoints",
            "sandboxEndpoints",
            turnpike_model::rest::cors::FIELD,
            turnpike_model::rest::cache::FIELD,
        ]) {
            p.remove(field);
        }
        let urls = json!({"type": "object", "properties": {"http": {"type": "string"}, "https": {"type": "string"}}});
        p.insert("endpointURLs".into(), json!({"type": "array", "items": {"type": "object", "required": ["environmentName", "URLs"], "properties": {
            "environmentName": {"type": "string"}, "URLs": urls, "defaultVersionURLs": urls}}}));
    }
    json!({"type": "object", "required": ["id", "name", "context", "version", "isDefaultVersion", "lifecycleStatus", "type", "resources", "policies", "provider", "revision", "endpointURLs"], "properties": props})
}

/// The bodies of the two "try" operations: try-it (a request relayed to the gateway) and
/// mediation/try (a transformation run on a sample).
fn try_schemas() -> Value {
    let headers =
        json!({"type": "object", "maxProperties": 50, "additionalProperties": {"type": "string"}});
    json!({
        "TryItInput": strict(&["method", "path"], json!({
            "method": {"type": "string", "enum": turnpike_model::rest::METHODS},
            "path": {"type": "string", "maxLength": 4096, "pattern": "^/", "description": "the gateway path (one leading /): the API's context, version and resource, with a query"},
            "headers": headers,
            "body": {"type": "string", "maxLength": 1048576},
            "keyType": {"type": "string", "enum": ["PRODUCTION", "SANDBOX"], "default": "PRODUCTION", "description": "whose keys mint the one-minute token"}
        }), json!({"method": "GET", "path": "/fixture/v1/", "headers": {"accept": "application/json"}})),
        "TryItResult": {"type": "object", "required": ["status", "headers", "body", "timeMs", "truncated"], "properties": {
            "status": {"type": "integer"},
            "headers": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string"}}, "description": "[name, value] pairs as the gateway sent them"},
            "body": {"type": "string"}, "timeMs": {"type": "number"},
            "truncated": {"type": "boolean", "description": "the body was over 1 MiB and is left out"}}},
        "MediationTryInput": strict(&[], json!({
            "mediation": r("Mediation"),
            "resources": {"type": "array", "maxItems": 100, "items": {"type": "object", "additionalProperties": false, "required": ["path", "mediation"], "properties": {
                "path": {"type": "string", "description": "a resource path of the API"}, "mediation": r("Mediation")}}},
            "method": {"type": "string", "default": "POST"},
            "path": {"type": "string", "default": "/", "description": "below the API's context and version"},
            "query": {"type": "string"},
            "headers": headers,
            "body": {"description": "the sample body: a JSON value, or a string sent as is"},
            "status": {"type": "integer", "minimum": 100, "maximum": 599, "description": "the upstream's status: runs the response side"}
        }), json!({"mediation": {"request": {"headers": {"set": {"x-source": "gateway"}}}}, "method": "POST", "path": "/", "body": {"id": 1}})),
        "MediationTryResult": {"type": "object", "required": ["policy", "headers", "body"], "properties": {
            "policy": {"type": "string"}, "path": {"type": "string"}, "query": {"type": "string", "nullable": true},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"description": "JSON when the result parses as JSON, else the text"}}}
    })
}

/// An API's MCP server in the portals: the Publisher's tool candidates and the
/// DevPortal's list of MCP servers (`rest/mcp_tools.rs`).
fn mcp_schemas() -> Value {
    let tool = json!({"type": "object", "required": ["name", "inputSchema"], "description": "an MCP tool as tools/list lists it", "properties": {
        "name": {"type": "string", "maxLength": 128}, "title": {"type": "string"}, "description": {"type": "string"},
        "inputSchema": {"type": "object", "description": "JSON Schema of the arguments"},
        "annotations": {"type": "object", "properties": {"readOnlyHint": {"type": "boolean"}, "destructiveHint": {"type": "boolean"}, "idempotentHint": {"type": "boolean"}}}}});
    let problem = json!({"type": "object", "required": ["field", "message"], "properties": {"field": {"type": "string", "example": "mcp.tools[0].operation"}, "message": {"type": "string"}}});
    let urls = json!({"type": "object", "properties": {"http": {"type": "string"}, "https": {"type": "string"}}});
    json!({
        "McpTool": tool,
        "McpToolCandidate": {"type": "object", "required": ["operation", "method", "path", "selected", "defaultName", "defaultDescription", "tool"], "properties": {
            "operation": {"type": "string", "example": "getPet", "description": "what mcp.tools[].operation names it by: the operationId, or METHOD /path"},
            "method": {"type": "string"}, "path": {"type": "string"},
            "selected": {"type": "boolean", "description": "served as a tool (mcp.tools lists it, or lists nothing)"},
            "defaultName": {"type": "string"}, "defaultDescription": {"type": "string"},
            "tool": r("McpTool")}},
        "McpTools": {"type": "object", "required": ["exposed", "endpoint", "source", "tools", "problems"], "properties": {
            "exposed": {"type": "boolean", "description": "the API has an mcp: section; false: the candidates are those a first save would offer"},
            "endpoint": {"type": "string", "example": "/mcp/pets/v1", "description": "the MCP endpoint's path on the gateway"},
            "source": {"type": "string", "enum": ["openapi", "resources", "upstream"], "description": "what the tools are made of; upstream: a proxied MCP server's, listed by it at run time (tools is then empty)"},
            "openapi": {"type": "string", "description": "not exposed yet: the stored OpenAPI document a first save puts in mcp.openapi"},
            "tools": {"type": "array", "items": r("McpToolCandidate")},
            "problems": {"type": "array", "items": problem, "description": "what the gateway's compile would refuse"}}},
        "McpServer": {"type": "object", "required": ["apiId", "name", "context", "version", "endpoint", "endpointURLs", "tools"], "properties": {
            "apiId": {"type": "string"}, "name": {"type": "string"}, "context": {"type": "string"}, "version": {"type": "string"},
            "description": {"type": "string"}, "lifecycleStatus": {"type": "string"},
            "endpoint": {"type": "string", "example": "/mcp/pets/v1"},
            "endpointURLs": {"type": "array", "items": {"type": "object", "required": ["environmentName", "URLs"], "properties": {"environmentName": {"type": "string"}, "URLs": urls}}},
            "instructions": {"type": "string", "nullable": true},
            "tools": {"type": "array", "items": r("McpTool")}}},
        "McpServerList": list_of("McpServer", true),
    })
}

/// The body of `POST /publisher/v1/apply` and its answer.
fn apply_schemas() -> Value {
    json!({
        "DeclarativeFile": {"type": "object", "description": "the declarative file (docs/control-plane.md, `turnpike apply`; every field in examples/gateway.yaml)", "properties": {
            "format_version": {"type": "integer", "enum": [1]},
            "apis": {"type": "array", "maxItems": 1000, "items": {"type": "object"}},
            "throttling": {"type": "object"},
            "security": {"type": "object"},
            "applications": {"type": "array", "maxItems": 10000, "items": {"type": "object", "required": ["name", "owner"], "properties": {
                "name": {"type": "string"}, "owner": {"type": "string"}, "tier": {"type": "string"}, "description": {"type": "string"},
                "subscriptions": {"type": "array", "items": {"type": "object", "required": ["context", "version", "tier"], "properties": {
                    "context": {"type": "string"}, "version": {"type": "string"}, "tier": {"type": "string"}}}},
                "keys": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {
                    "type": {"type": "string", "enum": ["PRODUCTION", "SANDBOX"]}, "consumer_key": {"type": "string"}, "api_key": {"type": "string"}}}}}}}
        }, "example": {"apis": [{"name": "pets", "context": "/pets", "version": "v1", "endpoints": ["http://pets.internal:8080"], "resources": [{"path": "/*", "methods": ["GET"]}]}]}},
        "ApplyResult": {"type": "object", "required": ["dryRun", "changes", "count", "version", "warnings"], "properties": {
            "dryRun": {"type": "boolean"},
            "changes": {"type": "array", "items": {"type": "string"}, "description": "one line per change, e.g. `create  /pets v1`"},
            "count": {"type": "integer"},
            "version": {"type": "integer", "nullable": true, "description": "the version committed (null: a dry run or nothing to change)"},
            "warnings": {"type": "array", "items": {"type": "string"}, "description": "key references this control plane does not have"}}}
    })
}

/// Every schema the operations name.
pub fn schemas() -> Value {
    let tier_example = json!({"name": "Platinum", "requestCount": 20000, "unitSeconds": 60, "burst": {"requests": 500, "per": "second"}});
    let mut all = serde_json::Map::new();
    if let Value::Object(m) = apply_schemas() {
        all.extend(m);
    }
    if let Value::Object(m) = ai_schemas() {
        all.extend(m);
    }
    let part = json!({
        "Endpoint": {"oneOf": [{"type": "string", "format": "uri"}, {"type": "object", "required": ["url"], "additionalProperties": false, "properties": {
            "url": {"type": "string", "format": "uri"},
            "weight": {"type": "integer", "minimum": 0, "maximum": 100, "description": "share under weighted_round_robin; 0 is a standby"},
            "timeouts": {"type": "object", "additionalProperties": false, "properties": {
                "connect": {"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "2s"},
                "read": {"oneOf": [{"type": "integer"}, {"type": "string"}], "example": "10s"}}}}}],
            "description": "an endpoint URL, or the URL with its weight and timeouts (docs/resilience.md)"},
        "Resource": {
            "type": "object",
            "required": ["path", "methods"],
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "description": "template under /{context}/{version}: /pets, /pets/{id}, /pets/*"},
                "methods": {"type": "array", "items": {"type": "string", "enum": turnpike_model::rest::METHODS}},
                "scopes": {"type": "array", "maxItems": 50, "description": "a caller's token needs any one of them (secured APIs only)",
                    "items": {"type": "string", "pattern": "^[!#-\\[\\]-~]{1,100}$"}},
                "auth": {"type": "string", "enum": ["none"], "description": "open although the API is secured"},
                "throttlingPolicy": {"type": "string", "description": "the resource's advanced policy"},
                "mediation": r("Mediation"),
                "cacheConfiguration": {"oneOf": [{"type": "boolean"}, {"type": "object"}],
                    "description": "this resource's response cache: false (off), true (the API's settings) or settings over the API's cacheConfiguration (docs/caching.md)",
                    "example": {"ttl": "5s"}}
            }
        },
        "Mediation": {"type": "object", "additionalProperties": false,
            "description": "request and response transformations (headers, query, path, a jq program on the body), as the declarative file's mediation: (docs/mediation.md); a resource's direction replaces the API's",
            "properties": {"request": {"type": "object"}, "response": {"type": "object"}},
            "example": {"request": {"headers": {"set": {"x-source": "gateway"}}, "body": {"jq": "{order: .}"}}}},
        "Api": strict(&["name", "context", "version"], api_props(), api_example()),
        "ApiUpdate": {"type": "object", "additionalProperties": false, "properties": api_props(),
            "description": "PUT: fields left out keep their values. PATCH: a JSON Merge Patch (null restores a default).",
            "example": {"endpoints": ["http://127.0.0.1:8081"], "isDefaultVersion": false}},
        "ApiRecord": {"type": "object", "required": ["id", "name", "context", "version", "isDefaultVersion", "lifecycleStatus", "type", "endpoints", "resources", "policies", "provider", "revision"], "properties": api_props()},
        "PortalApi": portal_api(),
        "PortalApiList": list_of("PortalApi", true),
        "DocumentInput": strict(&["name"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "summary": {"type": "string", "maxLength": 1000},
            "content": {"type": "string", "maxLength": 1000000, "description": "markdown"},
            "id": {"type": "string", "readOnly": true}, "apiId": {"type": "string", "readOnly": true},
            "revision": {"type": "integer", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"name": "Getting started", "summary": "Your first call", "content": "# Getting started\n\n`curl https://gw/pets/v1/pets`"})),
        "DocumentUpdate": {"type": "object", "additionalProperties": false, "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "summary": {"type": "string"}, "content": {"type": "string"},
            "id": {"type": "string", "readOnly": true}, "apiId": {"type": "string", "readOnly": true},
            "revision": {"type": "integer", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }, "example": {"summary": "Your first call, step by step"}},
        "Document": {"type": "object", "required": ["id", "apiId", "name", "summary", "content", "revision"], "properties": {
            "id": {"type": "string"}, "apiId": {"type": "string"}, "name": {"type": "string"}, "summary": {"type": "string"},
            "content": {"type": "string"}, "revision": {"type": "integer"}, "createdTime": {"type": "integer"}}},
        "DocumentList": list_of("Document", false),
        "Environments": strict(&["environments"], json!({
            "environments": {"type": "array", "items": {"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
                "name": {"type": "string"}, "httpUrl": {"type": "string", "format": "uri"}, "httpsUrl": {"type": "string", "format": "uri"}}}}
        }), json!({"environments": [{"name": "Production", "httpUrl": "http://gw.example.com", "httpsUrl": "https://gw.example.com"}]})),
        "ThrottlingSettings": strict(&[], json!({
            "unauthenticatedTier": {"type": "string", "nullable": true, "description": "subscription tier applied per client IP to requests without an application (Unauthenticated when null)"},
            "rateLimitHeaders": {"type": "string", "enum": ["ietf", "legacy", "both", "none"]}
        }), json!({"unauthenticatedTier": "Bronze", "rateLimitHeaders": "both"})),
        "ClientRegistrationSettingsInput": strict(&[], json!({
            "enabled": {"type": "boolean", "description": "dynamic client registration (RFC 7591) at the key manager's /oauth2/register"},
            "initialAccessToken": {"type": "string", "maxLength": 512, "writeOnly": true, "description": "the bearer token a registration must send (at least 32 characters; \"\" opens registration to anyone)"},
            "owner": {"type": "string", "description": "the user who owns registered clients' applications"},
            "applicationTier": {"type": "string", "description": "the application tier registered applications get"},
            "grantTypes": {"type": "array", "maxItems": 3, "items": {"type": "string", "enum": ["authorization_code", "refresh_token", "client_credentials"]}},
            "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}, "description": "scopes a registered client may ask for (others are dropped)"},
            "maxClients": {"type": "integer", "minimum": 1, "maximum": 100000},
            "perMinute": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "registrations a minute per client address"}
        }), json!({"enabled": true, "owner": "admin", "applicationTier": "Unlimited", "grantTypes": ["authorization_code"], "maxClients": 1000, "perMinute": 10})),
        "ClientRegistrationSettings": {"type": "object", "required": ["enabled", "initialAccessTokenSet", "owner", "applicationTier", "grantTypes", "scopes", "maxClients", "perMinute"], "properties": {
            "enabled": {"type": "boolean"}, "initialAccessTokenSet": {"type": "boolean"},
            "owner": {"type": "string"}, "applicationTier": {"type": "string"},
            "grantTypes": {"type": "array", "items": {"type": "string"}}, "scopes": {"type": "array", "items": {"type": "string"}},
            "maxClients": {"type": "integer"}, "perMinute": {"type": "integer"}}},
        "ClientIdMetadataDocumentsSettingsInput": strict(&[], json!({
            "enabled": {"type": "boolean", "description": "accept an https URL as client_id and fetch its client ID metadata document (the MCP authorization specification)"},
            "allowedHosts": {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 255}, "description": "hosts whose documents are accepted (exact, or *.example.com); empty: any host with a public address"},
            "allowPrivateAddresses": {"type": "boolean", "description": "also loopback, private and link-local addresses, and plain http to loopback (tests and labs only)"},
            "owner": {"type": "string", "description": "the user who owns these clients' applications"},
            "applicationTier": {"type": "string"},
            "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}, "description": "scopes such a client may ask for"},
            "maxClients": {"type": "integer", "minimum": 1, "maximum": 100000}
        }), json!({"enabled": true, "allowedHosts": ["*.agents.example"], "owner": "admin", "applicationTier": "Unlimited"})),
        "ClientIdMetadataDocumentsSettings": {"type": "object", "required": ["enabled", "allowedHosts", "allowPrivateAddresses", "owner", "applicationTier", "scopes", "maxClients"], "properties": {
            "enabled": {"type": "boolean"}, "allowedHosts": {"type": "array", "items": {"type": "string"}},
            "allowPrivateAddresses": {"type": "boolean"}, "owner": {"type": "string"}, "applicationTier": {"type": "string"},
            "scopes": {"type": "array", "items": {"type": "string"}}, "maxClients": {"type": "integer"}}},
        "AiPriceInput": strict(&["inputPerMillion", "outputPerMillion"], json!({
            "inputPerMillion": {"type": "number", "minimum": 0, "maximum": 1_000_000, "description": "USD per million prompt tokens"},
            "outputPerMillion": {"type": "number", "minimum": 0, "maximum": 1_000_000, "description": "USD per million completion tokens"},
            "cachedInputPerMillion": {"type": "number", "minimum": 0, "maximum": 1_000_000, "description": "USD per million prompt tokens served from the provider's cache (default: inputPerMillion)"}
        }), json!({"inputPerMillion": 0.15, "outputPerMillion": 0.6, "cachedInputPerMillion": 0.075})),
        "AiPrice": {"type": "object", "required": ["model", "inputPerMillion", "outputPerMillion", "cachedInputPerMillion", "source"], "properties": {
            "model": {"type": "string"}, "inputPerMillion": {"type": "number"}, "outputPerMillion": {"type": "number"},
            "cachedInputPerMillion": {"type": "number"}, "source": {"type": "string", "enum": ["built-in", "edited"]}}},
        "AiPriceList": list_of("AiPrice", false),
        "Pagination": {"type": "object", "required": ["offset", "limit", "total"], "properties": {
            "offset": {"type": "integer"}, "limit": {"type": "integer"}, "total": {"type": "integer"}}},
        "ApiList": list_of("ApiRecord", true)
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    let part = json!({
        "LifecycleState": {"type": "object", "required": ["state", "availableTransitions"], "properties": {
            "state": {"type": "string"}, "availableTransitions": {"type": "array", "items": {"type": "string", "enum": turnpike_store::LifecycleAction::ALL.iter().map(|a| a.as_str()).collect::<Vec<_>>()}}}},
        "ImportOpenApi": strict(&[], json!({
            "definition": {"description": "an OpenAPI 3 document (object, or YAML/JSON text)"},
            "url": {"type": "string", "format": "uri", "description": "where to fetch the document instead (http or https)"},
            "additionalProperties": {"type": "object", "description": "API fields (context is required; WSO2's endpointConfig is read as endpoints)"}
        }), json!({"definition": {"openapi": "3.0.3", "info": {"title": "Pets", "version": "v1"}, "paths": {"/pets": {"get": {}}}},
            "additionalProperties": {"context": "/pets"}})),
        "ImportGraphqlSchema": strict(&["definition"], json!({
            "definition": {"type": "string", "description": "the schema in SDL"},
            "additionalProperties": {"type": "object", "description": "API fields (context is required); a graphql object adds limits, tiers... to the imported schema"}
        }), json!({"definition": "type Query { hello: String }", "additionalProperties": {"name": "Hello", "context": "/hello", "version": "v1", "endpoints": ["http://127.0.0.1:8688/graphql"]}})),
        "CachePurgeInput": json!({"type": "object", "additionalProperties": false, "description": "nothing (every entry), or one of prefix and tag", "properties": {
            "prefix": {"type": "string", "maxLength": 2000, "pattern": "^/", "description": "upstream path prefix"},
            "tag": {"type": "string", "maxLength": 200, "description": "a value of the cache's tag_header"}},
            "example": {"prefix": "/items"}}),
        "CachePurge": json!({"type": "object", "required": ["id"], "properties": {
            "id": {"type": "integer", "minimum": 1, "description": "increasing; each gateway applies a purge once"},
            "prefix": {"type": "string"}, "tag": {"type": "string"}}}),
        "GraphqlComplexity": strict(&["list"], json!({
            "list": {"type": "array", "maxItems": 10000, "items": strict(&["type", "field", "complexityValue"], json!({
                "type": {"type": "string"}, "field": {"type": "string"},
                "complexityValue": {"type": "integer", "minimum": 0, "maximum": 1_000_000}}),
                json!({"type": "Query", "field": "allFilms", "complexityValue": 2}))}
        }), json!({"list": [{"type": "Query", "field": "allFilms", "complexityValue": 2}]})),
        "GraphqlSchemaTypeList": json!({"type": "object", "required": ["typeList"], "properties": {
            "typeList": {"type": "array", "items": {"type": "object", "required": ["type", "fieldList"], "properties": {
                "type": {"type": "string"}, "fieldList": {"type": "array", "items": {"type": "string"}}}}}}}),
        "GraphqlExplainInput": strict(&["query"], json!({
            "query": {"type": "string"},
            "operationName": {"type": "string"},
            "variables": {"type": "object"},
            "tier": {"type": "string", "description": "a tier of the API's graphql.tiers (the default limits otherwise)"}
        }), json!({"query": "{ hero { name friends { name } } }"})),
        "ImportWsdl": strict(&[], json!({
            "wsdl": {"type": "string", "description": "the WSDL 1.1 text (or, with zip, the root WSDL's path in it)"},
            "files": {"type": "object", "additionalProperties": {"type": "string"}, "description": "the files the WSDL imports, by the relative path it names them with"},
            "zip": {"type": "string", "format": "byte", "description": "a base64 zip holding the WSDL and its XSDs"},
            "url": {"type": "string", "format": "uri", "description": "where to fetch the WSDL instead (http or https)"},
            "type": {"type": "string", "enum": ["SOAP", "SOAP_TO_REST"], "description": "pass-through (default) or REST resources per operation"},
            "service": {"type": "string"}, "port": {"type": "string", "description": "the port (hence SOAP version) to use; default the first SOAP port"},
            "getOperations": {"type": "array", "items": {"type": "string"}, "description": "SOAP_TO_REST operations called with GET"},
            "additionalProperties": {"type": "object", "description": "API fields (context is required)"}
        }), json!({"wsdl": include_str!("../../../../bench/soap/echo.wsdl"), "type": "SOAP_TO_REST", "port": "Echo12",
            "additionalProperties": {"context": "/echo-soap"}})),
        "ApiSecurity": {
            "description": "\"none\", or which credentials the API accepts; a PUT of null restores the default (oauth2 and subscription)",
            "oneOf": [{"type": "string", "enum": ["none"]}, r("ApiSecuritySettings")],
            "example": {"oauth2": true, "api_key": true, "api_key_query": "apikey"}
        },
        "ApiSecuritySettings": {"type": "object", "additionalProperties": false, "description": "which credentials the API accepts", "properties": {
            "oauth2": {"type": "boolean"}, "api_key": {"type": "boolean"},
            "api_key_header": {"type": "string"}, "api_key_query": {"type": "string"},
            "basic": {"type": "boolean"}, "subscription": {"type": "boolean"},
            "backend_jwt": {"type": "object"},
            "resource_metadata": {"type": "boolean", "description": "publish RFC 9728 protected resource metadata and name it in 401s (docs/security.md)"},
            "audience_check": {"type": "boolean", "description": "accept only tokens whose aud is this API's resource URI (RFC 8707)"}}},
        "ApplicationInput": strict(&["name"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "throttlingPolicy": {"type": "string", "description": "an application tier (Unlimited when left out)"},
            "description": {"type": "string", "maxLength": 10000},
            "id": {"type": "string", "readOnly": true}, "owner": {"type": "string", "readOnly": true},
            "status": {"type": "string", "readOnly": true},
            "revision": {"type": "integer", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"name": "shop", "throttlingPolicy": "50PerMin"})),
        "ApplicationUpdate": {"type": "object", "additionalProperties": false, "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100},
            "throttlingPolicy": {"type": "string"}, "description": {"type": "string"},
            "id": {"type": "string", "readOnly": true}, "owner": {"type": "string", "readOnly": true},
            "status": {"type": "string", "readOnly": true},
            "revision": {"type": "integer", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }, "example": {"description": "the shop's back office"}},
        "Application": {"type": "object", "required": ["id", "name", "owner", "throttlingPolicy", "status", "revision"], "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "owner": {"type": "string"},
            "throttlingPolicy": {"type": "string"}, "description": {"type": "string"},
            "status": {"type": "string", "enum": ["ACTIVE", "DISABLED"]},
            "revision": {"type": "integer"}, "createdTime": {"type": "integer"}}}
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    let part = json!({
        "ApplicationList": list_of("Application", true),
        "ApplicationStatus": strict(&["status"], json!({"status": {"type": "string", "enum": ["ACTIVE", "DISABLED"]}}), json!({"status": "DISABLED"})),
        "SubscriptionInput": strict(&["applicationId", "apiId", "throttlingPolicy"], json!({
            "applicationId": {"type": "string"}, "apiId": {"type": "string"},
            "throttlingPolicy": {"type": "string", "description": "a tier the API offers"},
            "id": {"type": "string", "readOnly": true}, "status": {"type": "string", "readOnly": true},
            "revision": {"type": "integer", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"applicationId": "…", "apiId": "…", "throttlingPolicy": "Gold"})),
        "Subscription": {"type": "object", "required": ["id", "applicationId", "apiId", "throttlingPolicy", "status", "revision"], "properties": {
            "id": {"type": "string"}, "applicationId": {"type": "string"}, "apiId": {"type": "string"},
            "throttlingPolicy": {"type": "string"},
            "status": {"type": "string", "enum": ["ACTIVE", "BLOCKED", "PROD_ONLY_BLOCKED", "ON_HOLD", "REJECTED"]},
            "revision": {"type": "integer"}, "createdTime": {"type": "integer"},
            "applicationName": {"type": "string", "nullable": true, "description": "in the Publisher's list: the application's name"}}},
        "SubscriptionList": list_of("Subscription", true),
        "TierInput": strict(&["name"], tier_props(), tier_example)
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    let part = json!({
        "TierUpdate": {"type": "object", "additionalProperties": false, "properties": tier_props(),
            "description": "PUT: fields left out keep their values. PATCH: a JSON Merge Patch.",
            "example": {"requestCount": 30000}},
        "Tier": {"type": "object", "required": ["kind", "name", "description", "requestCount", "unitSeconds", "revision"], "properties": tier_props()},
        "TierList": list_of("Tier", false),
        "UserInput": strict(&["name", "password", "roles"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[^:]+$"},
            "password": {"type": "string", "minLength": 8, "maxLength": 1000, "writeOnly": true},
            "roles": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": turnpike_store::ROLES}},
            "status": {"type": "string", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"name": "carol", "password": "correct horse", "roles": ["subscriber"]})),
        "UserPatch": strict(&[], json!({
            "roles": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": turnpike_store::ROLES}},
            "status": {"type": "string", "enum": ["ACTIVE", "DISABLED"]},
            "name": {"type": "string", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"roles": ["publisher"], "status": "ACTIVE"})),
        "User": {"type": "object", "required": ["name", "roles", "status", "createdTime"], "properties": {
            "name": {"type": "string"}, "roles": {"type": "array", "items": {"type": "string"}},
            "status": {"type": "string", "enum": ["ACTIVE", "DISABLED", "PENDING"]}, "createdTime": {"type": "integer"}}}
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    let part = json!({
        "UserList": list_of("User", false),
        "AuditLog": list_of("AuditEntry", true),
        "McpAuditLog": list_of("McpAuditRecord", true),
        "McpAuditRecord": {"type": "object", "required": ["timestamp", "time", "requestId", "apiName", "apiContext", "apiVersion", "tool", "arguments", "truncated", "outcome", "status", "latencyUs"], "properties": {
            "timestamp": {"type": "integer", "description": "when the call arrived, Unix milliseconds"},
            "time": {"type": "string", "format": "date-time"},
            "requestId": {"type": "string"},
            "gateway": {"type": "string"},
            "apiName": {"type": "string"},
            "apiContext": {"type": "string"},
            "apiVersion": {"type": "string"},
            "tool": {"type": "string"},
            "applicationId": {"type": "string", "nullable": true},
            "applicationName": {"type": "string", "nullable": true},
            "subject": {"type": "string", "nullable": true, "description": "the token's sub when kept, else the application's owner"},
            "sessionId": {"type": "string", "nullable": true},
            "arguments": {"type": "string", "description": "the arguments as JSON text, redacted ([REDACTED]) and cut at the API's cap (then ending ...[TRUNCATED])"},
            "truncated": {"type": "boolean"},
            "outcome": {"type": "string", "enum": ["ok", "tool_error", "refused"]},
            "code": {"type": "string", "nullable": true, "description": "the error table's code or the JSON-RPC error's number"},
            "status": {"type": "integer", "description": "the HTTP status the agent got"},
            "latencyUs": {"type": "integer"}}},
        "AuditEntry": {"type": "object", "required": ["version", "previousVersion", "timestamp", "time", "user", "action"], "properties": {
            "version": {"type": "integer", "description": "the store version this change made"},
            "previousVersion": {"type": "integer", "description": "the version before it"},
            "timestamp": {"type": "integer", "description": "Unix milliseconds"},
            "time": {"type": "string", "format": "date-time"},
            "user": {"type": "string"},
            "action": {"type": "string", "description": "what changed, with today's names in place of ids"},
            "summary": {"type": "string", "description": "what changed, as recorded (with ids)"},
            "objects": {"type": "array", "description": "the ids in the summary; name and kind null once deleted", "items": {
                "type": "object", "required": ["id", "kind", "name"], "properties": {
                    "id": {"type": "string"},
                    "kind": {"type": "string", "nullable": true, "enum": ["api", "application", "subscription", "document", null]},
                    "name": {"type": "string", "nullable": true}}}}}},
        "SignUp": strict(&["name", "password"], json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[^:]+$"},
            "password": {"type": "string", "minLength": 8, "maxLength": 1000, "writeOnly": true}
        }), json!({"name": "dave", "password": "correct horse"})),
        "SelfSignupSettings": strict(&[], json!({
            "enabled": {"type": "boolean"}, "approval": {"type": "boolean"}
        }), json!({"enabled": true, "approval": true})),
        "DevportalSettings": strict(&[], json!({
            "anonymousBrowsing": {"type": "boolean"}
        }), json!({"anonymousBrowsing": true})),
        "PublicPortalSettings": strict(&["anonymousBrowsing", "selfSignup"], json!({
            "anonymousBrowsing": {"type": "boolean"}, "selfSignup": {"type": "boolean"}
        }), json!({"anonymousBrowsing": true, "selfSignup": false})),
        "PasswordReset": strict(&["password"], json!({"password": {"type": "string", "minLength": 8, "maxLength": 1000, "writeOnly": true}}), json!({"password": "a new password"})),
        "PasswordChange": strict(&["currentPassword", "newPassword"], json!({
            "currentPassword": {"type": "string", "writeOnly": true},
            "newPassword": {"type": "string", "minLength": 8, "maxLength": 1000, "writeOnly": true}
        }), json!({"currentPassword": "the old one", "newPassword": "a new password"})),
        "GatewayList": {"type": "object", "required": ["controlPlaneVersion", "count", "list"], "properties": {
            "controlPlaneVersion": {"type": "integer"}, "count": {"type": "integer"},
            "maxLagMs": {"type": "integer"}, "lagging": {"type": "integer"},
            "list": {"type": "array", "items": r("Gateway")}}},
        "Gateway": {"type": "object", "required": ["id", "servingVersion", "servingHash", "controlPlane", "lastSeenMsAgo", "versionsBehind", "lagMs", "lagging", "upToDate"], "properties": {
            "id": {"type": "string"}, "servingVersion": {"type": "integer"}, "servingHash": {"type": "string"},
            "controlPlane": {"type": "string", "description": "the control plane it polled last, as it addressed it"},
            "lastSeenMsAgo": {"type": "integer"},
            "lastConvergenceMs": {"type": "integer", "nullable": true, "description": "commit of servingVersion to its first poll serving it"},
            "applyMs": {"type": "integer", "nullable": true}, "versionsBehind": {"type": "integer"},
            "lagMs": {"type": "integer", "description": "how long it may have been out of date: behind, or silent past its next poll"},
            "lagging": {"type": "boolean"}, "upToDate": {"type": "boolean"},
            "report": {"type": "object", "nullable": true, "additionalProperties": true, "description": "its last status report, as it sent it (null before the first)"},
            "endpoints": {"type": "array", "items": r("EndpointState"), "description": "each endpoint of its APIs with resilience settings, as it last reported them (not active first, at most 200)"}}},
        "EndpointState": {"type": "object", "required": ["api", "version", "context", "id", "endpoint", "pool", "state", "failures", "inFlight", "suspensions"], "properties": {
            "api": {"type": "string", "description": "the API's name"}, "version": {"type": "string"}, "context": {"type": "string"},
            "id": {"type": "string", "description": "{context}/{version} (host-prefixed for a host-limited API)"},
            "endpoint": {"type": "string"}, "pool": {"type": "string", "enum": ["production", "sandbox"]},
            "state": {"type": "string", "enum": ["active", "suspended", "probing", "unhealthy"]},
            "untilMs": {"type": "integer", "description": "when the suspension ends (Unix ms), while suspended"},
            "failures": {"type": "integer"}, "inFlight": {"type": "integer"}, "suspensions": {"type": "integer"}}},
        "KeysInput": strict(&[], json!({
            "keyType": {"type": "string", "enum": ["PRODUCTION", "SANDBOX"]},
            "grantTypes": {"type": "array", "items": {"type": "string", "enum": ["client_credentials", "password", "refresh_token"]}},
            "tokenType": {"type": "string", "enum": ["JWT", "OPAQUE"]},
            "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "accessTokenTtl": {"type": "integer", "minimum": 1, "maximum": 86400},
            "refreshTokenTtl": {"type": "integer", "minimum": 1, "maximum": 7776000},
            "callbackUrl": {"type": "string", "format": "uri"},
            "redirectUris": {"type": "array", "maxItems": 20, "items": {"type": "string", "format": "uri"}, "description": "registering one enables the authorization_code grant (PKCE S256)"}
        }), json!({"keyType": "PRODUCTION", "grantTypes": ["client_credentials"], "tokenType": "JWT"})),
        "KeysUpdate": strict(&[], json!({
            "grantTypes": {"type": "array", "items": {"type": "string", "enum": ["client_credentials", "password", "refresh_token"]}},
            "tokenType": {"type": "string", "enum": ["JWT", "OPAQUE"]},
            "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "accessTokenTtl": {"type": "integer", "minimum": 1, "maximum": 86400},
            "refreshTokenTtl": {"type": "integer", "minimum": 1, "maximum": 7776000},
            "callbackUrl": {"type": "string", "format": "uri"},
            "redirectUris": {"type": "array", "maxItems": 20, "items": {"type": "string", "format": "uri"}},
            "keyType": {"type": "string", "readOnly": true}, "consumerKey": {"type": "string", "readOnly": true},
            "consumerSecret": {"type": "string", "readOnly": true}, "createdTime": {"type": "integer", "readOnly": true}
        }), json!({"scopes": ["pets:read", "pets:write"], "callbackUrl": "https://shop.example.com/callback"})),
        "Keys": {"type": "object", "required": ["consumerKey", "keyType", "tokenType", "grantTypes", "scopes"], "properties": {
            "consumerKey": {"type": "string"}, "consumerSecret": {"type": "string", "description": "shown once"},
            "keyType": {"type": "string"}, "tokenType": {"type": "string"},
            "grantTypes": {"type": "array", "items": {"type": "string"}}, "scopes": {"type": "array", "items": {"type": "string"}},
            "accessTokenTtl": {"type": "integer"}, "refreshTokenTtl": {"type": "integer"}, "createdTime": {"type": "integer"},
            "callbackUrl": {"type": "string", "nullable": true},
            "redirectUris": {"type": "array", "items": {"type": "string"}}}}
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    let part = json!({
        "KeysList": list_of("Keys", false),
        "ApiKeyInput": strict(&[], json!({
            "name": {"type": "string", "maxLength": 100},
            "keyType": {"type": "string", "enum": ["PRODUCTION", "SANDBOX"]},
            "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
            "validityPeriod": {"type": "integer", "minimum": 1, "description": "seconds; never expires when left out"}
        }), json!({"name": "ci", "validityPeriod": 86400})),
        "ApiKey": {"type": "object", "required": ["id", "name", "keyType", "scopes", "createdTime"], "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "keyType": {"type": "string"},
            "scopes": {"type": "array", "items": {"type": "string"}}, "createdTime": {"type": "integer"},
            "expiresAt": {"type": "integer", "nullable": true}, "apikey": {"type": "string", "description": "shown once"}}},
        "ApiKeyList": list_of("ApiKey", false),
        "SigningKeys": {"type": "object", "required": ["count", "list"], "properties": {
            "activeKid": {"type": "string", "nullable": true}, "count": {"type": "integer"},
            "list": {"type": "array", "items": {"type": "object", "required": ["kid", "alg", "active", "created_at"], "properties": {
                "kid": {"type": "string"}, "alg": {"type": "string"},
                "active": {"type": "boolean", "description": "the key that signs new tokens"},
                "created_at": {"type": "integer"},
                "retired_at": {"type": "integer", "nullable": true, "description": "when a newer key took over"}}}}}},
        "Error": {
            "type": "object",
            "required": ["code", "message", "request_id"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "request_id": {"type": "string"},
                "errors": {"type": "array", "items": {"type": "object", "required": ["field", "message"], "properties": {
                    "field": {"type": "string"}, "message": {"type": "string"}}}}
            }
        }
    });
    if let Value::Object(m) = part {
        all.extend(m);
    }
    if let Value::Object(m) = try_schemas() {
        all.extend(m);
    }
    if let Value::Object(m) = mcp_schemas() {
        all.extend(m);
    }
    Value::Object(all)
}

/// The API's `mcp:` section (its own function: one `json!` this deep overflows the
/// macro's recursion limit).
fn mcp_section() -> Value {
    json!({"type": "object", "additionalProperties": false, "description": "expose the API as an MCP server at /mcp{context}/{version} on the gateway, its operations as tools (docs/mcp.md); the declarative file's mcp: section", "properties": {
            "openapi": {"type": "string", "description": "the OpenAPI 3 document (YAML or JSON) the tools are built from; when omitted, a GraphQL API's Query and Mutation fields, another API's resources"},
            "tools": {"type": "array", "maxItems": 1000, "description": "the operations that become tools (every one when omitted)", "items": {"type": "object", "additionalProperties": false, "required": ["operation"], "properties": {
                "operation": {"type": "string", "example": "getPet", "description": "an operationId, or METHOD /path"},
                "name": {"type": "string", "maxLength": 128},
                "description": {"type": "string"},
                "scopes": {"type": "array", "maxItems": 100, "items": {"type": "string"}, "description": "the caller needs one of these to call the tool, besides its operation's scopes"},
                "throttling": {"type": "string", "description": "an advanced policy counted per API, tool and application"},
                "selection": {"type": "string", "example": "{ id name }", "description": "a GraphQL API's tool: the selection set asked for instead of the generated one"}}}},
            "prompts": {"type": "array", "maxItems": 100, "description": "prompt templates (prompts/list, prompts/get)", "items": {"type": "object", "additionalProperties": false, "required": ["name", "text"], "properties": {
                "name": {"type": "string", "maxLength": 128},
                "title": {"type": "string"},
                "description": {"type": "string"},
                "arguments": {"type": "array", "maxItems": 32, "items": {"type": "object", "additionalProperties": false, "required": ["name"], "properties": {
                    "name": {"type": "string", "maxLength": 128}, "description": {"type": "string"}, "required": {"type": "boolean"}}}},
                "text": {"type": "string", "description": "the message; {{argument}} is replaced by the argument's value"}}}},
            "documents": {"type": "array", "maxItems": 100, "description": "documents served as resources at docs://{name} (resources/list, resources/read), beside the OpenAPI document", "items": {"type": "object", "additionalProperties": false, "required": ["name", "text"], "properties": {
                "name": {"type": "string", "maxLength": 128},
                "title": {"type": "string"},
                "description": {"type": "string"},
                "mime_type": {"type": "string", "default": "text/markdown"},
                "text": {"type": "string"}}}},
            "max_sessions": {"type": "integer", "minimum": 1, "default": 10000},
            "session_idle": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 30}], "example": "30m"},
            "instructions": {"type": "string"},
            "upstream": {"type": "string", "enum": ["streamable_http", "sse"], "description": "the API's endpoint (or each of servers:) is a remote MCP server over this transport (sse: the legacy HTTP+SSE one): its tools are proxied (tools: then names remote tools to expose)"},
            "deny_tools": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 128}, "description": "a proxied server's tools agents never see nor call"},
            "servers": {"type": "array", "maxItems": 16, "description": "several remote MCP servers behind this endpoint (upstream: their transport), each one's tools shown as <name>__<tool>; the API needs no endpoints then", "items": {"type": "object", "additionalProperties": false, "required": ["name", "url"], "properties": {
                "name": {"type": "string", "maxLength": 32, "pattern": "^[A-Za-z0-9-]+$"},
                "url": {"type": "string", "example": "http://10.0.0.7:8000/mcp"},
                "tools": {"type": "array", "maxItems": 1000, "items": {"type": "object"}, "description": "the server's tools shown (as a proxied server's tools:)"},
                "deny_tools": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 128}}}}}}})
}
