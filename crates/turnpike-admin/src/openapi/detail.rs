//! What each operation of the document takes and returns, by operation id: query and
//! header parameters, the request body's schema, the success status and body. The error
//! statuses an operation can answer follow from these (`crate::openapi::doc`).

use serde_json::{json, Value};

/// The SDK languages offered (`rest/sdk.rs`) and openapi-generator's generator for each.
pub(crate) const SDK_LANGUAGES: [(&str, &str); 3] = [
    ("typescript", "typescript-fetch"),
    ("python", "python"),
    ("java", "java"),
];

pub(crate) fn query(name: &str, required: bool, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": required, "schema": schema, "description": description})
}

fn page() -> [Value; 2] {
    [
        query(
            "limit",
            false,
            json!({"type": "integer", "minimum": 0, "maximum": 1000, "default": 25}),
            "page size",
        ),
        query(
            "offset",
            false,
            json!({"type": "integer", "minimum": 0, "default": 0}),
            "items to skip",
        ),
    ]
}

fn api_filters() -> Vec<Value> {
    let s = json!({"type": "string"});
    let mut v = vec![
        query(
            "query",
            false,
            s.clone(),
            "substring of name, context or description",
        ),
        query("name", false, s.clone(), "substring of the name"),
        query("context", false, s, "exact context"),
        query(
            "state",
            false,
            json!({"type": "string", "example": "PUBLISHED,PROTOTYPED"}),
            "lifecycle states, comma separated",
        ),
    ];
    v.extend(page());
    v
}

/// The reports' query parameters, for the OpenAPI document.
fn analytics_query_params(id: &str) -> Vec<Value> {
    let int = json!({"type": "integer"});
    let s = json!({"type": "string"});
    let mut out = vec![
        query("from", false, int.clone(), "window start, Unix seconds (default: to - 24 h)"),
        query("to", false, int.clone(), "window end (exclusive), Unix seconds (default: now)"),
        query(
            "interval",
            false,
            json!({"type": "integer", "minimum": 60}),
            "traffic and latency: seconds per point (default 60 up to 6 h, 3600 up to 14 days, else 86400)",
        ),
        query(
            "by",
            false,
            json!({"type": "string", "enum": ["api", "application", "resource"], "default": "api"}),
            "top: what to group by",
        ),
        query(
            "limit",
            false,
            json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 10}),
            "top: how many",
        ),
    ];
    if id != "getApplicationAnalytics" {
        out.push(query(
            "applicationId",
            false,
            s.clone(),
            "only this application",
        ));
    }
    if id == "getAnalytics" {
        out.push(query(
            "apiContext",
            false,
            s.clone(),
            "only this API (with apiVersion)",
        ));
        out.push(query(
            "apiVersion",
            false,
            s.clone(),
            "only this API (with apiContext)",
        ));
        out.push(query(
            "gateway",
            false,
            s,
            "only this gateway (its --gateway-id)",
        ));
    }
    out
}

/// The MCP audit trail's filters.
fn mcp_audit_params(id: &str) -> Vec<Value> {
    let s = json!({"type": "string"});
    let secs = json!({"type": "integer", "minimum": 0});
    let outcome = json!({"type": "string", "enum": ["ok", "tool_error", "refused"]});
    let mut v = Vec::new();
    if id == "listMcpAudit" {
        v.push(query("apiId", false, s.clone(), "only this API's calls"));
        v.push(query(
            "apiContext",
            false,
            s.clone(),
            "only this API's calls (with apiVersion)",
        ));
        v.push(query(
            "apiVersion",
            false,
            s.clone(),
            "only this API's calls (with apiContext)",
        ));
    }
    v.push(query("tool", false, s.clone(), "only this tool's calls"));
    v.push(query(
        "applicationId",
        false,
        s,
        "only this application's calls",
    ));
    v.push(query("outcome", false, outcome, "only calls that ended so"));
    v.push(query(
        "from",
        false,
        secs.clone(),
        "from this time on, Unix seconds",
    ));
    v.push(query("to", false, secs, "before this time, Unix seconds"));
    v.extend(page());
    v
}

/// Query parameters of an operation.
pub fn query_params(id: &str) -> Vec<Value> {
    let s = json!({"type": "string"});
    match id {
        "listApis" | "listVisibleApis" | "listMcpServers" => api_filters(),
        "applyFile" => {
            let flag = json!({"type": "boolean", "default": false});
            vec![
                query(
                    "dryRun",
                    false,
                    flag.clone(),
                    "validate and list the changes, then roll back",
                ),
                query(
                    "prune",
                    false,
                    flag,
                    "demote live APIs the file does not list",
                ),
            ]
        }
        "getAnalytics" | "getApiAnalytics" | "getApplicationAnalytics" => {
            analytics_query_params(id)
        }
        "listMcpAudit" | "listApiMcpAudit" => mcp_audit_params(id),
        "listAuditLog" => {
            let secs = json!({"type": "integer", "minimum": 0});
            let mut v = vec![
                query("user", false, s.clone(), "changes made by this user"),
                query(
                    "q",
                    false,
                    s.clone(),
                    "text in the action (case-insensitive)",
                ),
                query(
                    "from",
                    false,
                    secs.clone(),
                    "from this time on, Unix seconds",
                ),
                query("to", false, secs, "before this time, Unix seconds"),
            ];
            v.extend(page());
            v
        }
        "copyApi" => vec![
            query("apiId", true, s.clone(), "the API to copy"),
            query(
                "newVersion",
                true,
                json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,30}$"}),
                "the new version",
            ),
            query(
                "defaultVersion",
                false,
                json!({"type": "boolean"}),
                "make the copy the default version",
            ),
        ],
        "changeApiLifecycle" => {
            let actions: Vec<&str> = turnpike_store::LifecycleAction::ALL
                .iter()
                .map(|a| a.as_str())
                .collect();
            vec![
                query("apiId", true, s.clone(), "the API"),
                query(
                    "action",
                    true,
                    json!({"type": "string", "enum": actions}),
                    "WSO2's lifecycle action",
                ),
            ]
        }
        "listApiSubscriptions" => {
            let mut v = vec![query("apiId", false, s.clone(), "only this API's")];
            v.extend(page());
            v
        }
        "blockSubscription" => vec![
            query("subscriptionId", true, s.clone(), "the subscription"),
            query(
                "blockState",
                true,
                json!({"type": "string", "enum": ["BLOCKED", "PROD_ONLY_BLOCKED"]}),
                "what to block",
            ),
        ],
        "unblockSubscription" => vec![query("subscriptionId", true, s.clone(), "the subscription")],
        "listApplications" => page().to_vec(),
        "listAllApplications" => {
            let mut v = vec![
                query("owner", false, s.clone(), "only this user's"),
                query(
                    "query",
                    false,
                    json!({"type": "string", "maxLength": 200}),
                    "name or owner contains it (case-insensitive)",
                ),
            ];
            v.extend(page());
            v
        }
        "listSubscriptions" => {
            let mut v = vec![
                query("applicationId", true, s.clone(), "the caller's application"),
                query("apiId", false, s.clone(), "only this API's"),
            ];
            v.extend(page());
            v
        }
        "importGraphqlSchema" => vec![
            query(
                "additionalProperties",
                false,
                s.clone(),
                "the API's fields as JSON, when the body is the bare schema",
            ),
            query(
                "context",
                false,
                s.clone(),
                "the API's context, when the body is the bare schema",
            ),
            query("version", false, s.clone(), "the API's version"),
            query("name", false, s.clone(), "the API's name"),
        ],
        "importOpenApi" => vec![
            query(
                "additionalProperties",
                false,
                s.clone(),
                "the API's fields as JSON, when the body is the bare document",
            ),
            query(
                "context",
                false,
                s.clone(),
                "the API's context, when the body is the bare document",
            ),
            query("version", false, s.clone(), "overrides info.version"),
            query("name", false, s.clone(), "overrides info.title"),
        ],
        "getSnapshot" => vec![query(
            "after",
            false,
            json!({"type": "integer", "minimum": 0}),
            "answer when a version newer than this exists (long-poll)",
        )],
        _ => Vec::new(),
    }
}

/// The request body's schema (a component name) and whether it is required.
pub fn request_body(id: &str) -> Option<(&'static str, bool)> {
    Some(match id {
        "createApi" => ("Api", true),
        "updateApi" => ("ApiUpdate", true),
        "patchApi" => ("ApiUpdate", true),
        "importOpenApi" => ("ImportOpenApi", true),
        "importGraphqlSchema" => ("ImportGraphqlSchema", true),
        "explainGraphqlQuery" => ("GraphqlExplainInput", true),
        "setGraphqlComplexity" => ("GraphqlComplexity", true),
        "purgeApiCache" => ("CachePurgeInput", true),
        "importWsdl" => ("ImportWsdl", true),
        "applyFile" => ("DeclarativeFile", true),
        "setApiSecurity" => ("ApiSecurity", true),
        "createApplication" => ("ApplicationInput", true),
        "updateApplication" | "patchApplication" => ("ApplicationUpdate", true),
        "subscribe" => ("SubscriptionInput", true),
        "createTier" => ("TierInput", true),
        "updateTier" | "patchTier" => ("TierUpdate", true),
        "createUser" => ("UserInput", true),
        "patchUser" => ("UserPatch", true),
        "resetUserPassword" => ("PasswordReset", true),
        "changeOwnPassword" => ("PasswordChange", true),
        "createApiDocument" => ("DocumentInput", true),
        "updateApiDocument" => ("DocumentUpdate", true),
        "setEnvironments" => ("Environments", true),
        "setThrottlingSettings" => ("ThrottlingSettings", true),
        "setClientRegistrationSettings" => ("ClientRegistrationSettingsInput", true),
        "setClientIdMetadataDocumentsSettings" => ("ClientIdMetadataDocumentsSettingsInput", true),
        "setAiPrice" => ("AiPriceInput", true),
        "selfSignup" => ("SignUp", true),
        "setSelfSignupSettings" => ("SelfSignupSettings", true),
        "setDevportalSettings" => ("DevportalSettings", true),
        "setApplicationStatus" => ("ApplicationStatus", true),
        "generateKeys" => ("KeysInput", true),
        "updateKeys" => ("KeysUpdate", true),
        "createApiKey" => ("ApiKeyInput", true),
        "tryIt" => ("TryItInput", true),
        "tryApiMediation" => ("MediationTryInput", true),
        _ => return None,
    })
}

/// The success status and its JSON body's schema (`None`: no body or not JSON).
pub fn success(id: &str) -> (u16, Option<Value>) {
    let r = |name: &str| Some(json!({"$ref": format!("#/components/schemas/{name}")}));
    let any = Some(json!({"type": "object"}));
    match id {
        "createApi" | "importOpenApi" | "importGraphqlSchema" | "copyApi" => (201, r("ApiRecord")),
        "explainGraphqlQuery" => (200, any.clone()),
        "getGraphqlComplexity" | "setGraphqlComplexity" => (200, r("GraphqlComplexity")),
        "getGraphqlComplexityTypes" => (200, r("GraphqlSchemaTypeList")),
        "tryIt" => (200, r("TryItResult")),
        "tryApiMediation" => (200, r("MediationTryResult")),
        "getApiMcpTools" => (200, r("McpTools")),
        "listMcpServers" => (200, r("McpServerList")),
        "purgeApiCache" => (202, r("CachePurge")),
        "importWsdl" => (201, r("ApiRecord")),
        "applyFile" => (200, r("ApplyResult")),
        "getApiWsdl" => (200, None),
        "getApi" | "updateApi" | "patchApi" | "changeApiLifecycle" => (200, r("ApiRecord")),
        "getVisibleApi" => (200, r("PortalApi")),
        "listApis" => (200, r("ApiList")),
        "listVisibleApis" => (200, r("PortalApiList")),
        "listApiDocuments" | "listVisibleApiDocuments" => (200, r("DocumentList")),
        "createApiDocument" => (201, r("Document")),
        "getApiDocument" | "updateApiDocument" | "getVisibleApiDocument" => (200, r("Document")),
        "deleteApiDocument" => (204, None),
        "getVisibleApiDocumentContent" => (200, None),
        "getApiSdk" => (200, None),
        "getEnvironments" | "setEnvironments" => (200, r("Environments")),
        "getThrottlingSettings" | "setThrottlingSettings" => (200, r("ThrottlingSettings")),
        "getClientRegistrationSettings" | "setClientRegistrationSettings" => {
            (200, r("ClientRegistrationSettings"))
        }
        "getClientIdMetadataDocumentsSettings" | "setClientIdMetadataDocumentsSettings" => {
            (200, r("ClientIdMetadataDocumentsSettings"))
        }
        "listAiPrices" => (200, r("AiPriceList")),
        "setAiPrice" => (200, r("AiPrice")),
        "deleteAiPrice" => (204, None),
        "deleteApi" | "deleteApplication" | "unsubscribe" | "deleteTier" | "deleteUser"
        | "resetUserPassword" | "changeOwnPassword" => (204, None),
        "getApiLifecycleState" => (200, r("LifecycleState")),
        "getApiDefinition" | "getVisibleApiDefinition" | "exportEnvironment" | "getSnapshot" => {
            (200, any)
        }
        "listApiSubscriptions" | "listSubscriptions" => (200, r("SubscriptionList")),
        "blockSubscription" | "unblockSubscription" | "getSubscription" => (200, r("Subscription")),
        "subscribe" => (201, r("Subscription")),
        "listApplications" | "listAllApplications" => (200, r("ApplicationList")),
        "createApplication" => (201, r("Application")),
        "getApplication"
        | "updateApplication"
        | "patchApplication"
        | "getAnyApplication"
        | "setApplicationStatus" => (200, r("Application")),
        "listTiers" | "listPublisherTiers" | "listDevportalTiers" => (200, r("TierList")),
        "createTier" => (201, r("Tier")),
        "getTier" | "updateTier" | "patchTier" => (200, r("Tier")),
        "listUsers" => (200, r("UserList")),
        "listAuditLog" => (200, r("AuditLog")),
        "listMcpAudit" | "listApiMcpAudit" => (200, r("McpAuditLog")),
        "createUser" => (201, r("User")),
        "getUser" | "patchUser" => (200, r("User")),
        "selfSignup" => (201, r("User")),
        "getSelfSignupSettings" | "setSelfSignupSettings" => (200, r("SelfSignupSettings")),
        "getDevportalSettings" | "setDevportalSettings" => (200, r("DevportalSettings")),
        "getPublicPortalSettings" => (200, r("PublicPortalSettings")),
        "listGateways" => (200, r("GatewayList")),
        "getApiSecurity" | "setApiSecurity" => (200, r("ApiSecuritySettings")),
        "generateKeys" => (201, r("Keys")),
        "regenerateSecret" | "updateKeys" => (200, r("Keys")),
        "listKeys" => (200, r("KeysList")),
        "deleteKeys" | "revokeApiKey" => (204, None),
        "listApiKeys" => (200, r("ApiKeyList")),
        "getAnalytics" | "getApiAnalytics" | "getApplicationAnalytics" => (200, any.clone()),
        "ingestAnalytics" => (202, any.clone()),
        "reportGatewayStatus" => (204, None),
        "createApiKey" => (201, r("ApiKey")),
        "listSigningKeys" => (200, r("SigningKeys")),
        "rotateSigningKey" => (201, r("SigningKeys")),
        _ => (200, any),
    }
}

/// Whether the operation reads `If-Match` (writes to a revisioned record).
pub fn takes_if_match(id: &str) -> bool {
    matches!(
        id,
        "updateApi"
            | "patchApi"
            | "deleteApi"
            | "changeApiLifecycle"
            | "blockSubscription"
            | "unblockSubscription"
            | "updateApplication"
            | "patchApplication"
            | "unsubscribe"
            | "updateTier"
            | "patchTier"
            | "setApplicationStatus"
    )
}

/// Whether a `GET` answers `304` to `If-None-Match` (it sends an `ETag`).
pub fn sends_etag(id: &str) -> bool {
    matches!(
        id,
        "listApis"
            | "getApi"
            | "listApiSubscriptions"
            | "listVisibleApis"
            | "listMcpServers"
            | "getVisibleApi"
            | "listApplications"
            | "getApplication"
            | "listSubscriptions"
            | "getSubscription"
            | "listTiers"
            | "listPublisherTiers"
            | "listDevportalTiers"
            | "getTier"
            | "listUsers"
            | "listAllApplications"
            | "getAnyApplication"
    )
}
