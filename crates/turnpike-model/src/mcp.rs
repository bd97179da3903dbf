//! An API's `mcp:` section: the API is also an MCP server (Model Context Protocol,
//! Streamable HTTP) at `/mcp{context}/{version}` on the gateway, each selected operation
//! a tool whose call runs through the API's own chain (docs/mcp.md).

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// What a request to an MCP endpoint is routed as (its resource, as analytics names
/// the protocol's own messages; a tool call is named by its tool).
pub const ENDPOINT_RESOURCE: &str = "mcp";

/// What an API's MCP endpoint path starts with, before the API's id.
pub const ENDPOINT_PREFIX: &str = "/mcp";

/// The gateway path of an API's MCP endpoint: `/mcp{context}/{version}` (`/pets`, `v1`
/// -> `/mcp/pets/v1`).
pub fn endpoint_path(context: &str, version: &str) -> String {
    format!("{ENDPOINT_PREFIX}{}", crate::api_id(context, version))
}

/// The `mcp:` section of an API: its presence exposes the API as an MCP server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSpec {
    /// The API's OpenAPI 3 document (YAML or JSON text) the tools are built from
    /// (operationId, summary, parameters, request body schema). Without it a GraphQL
    /// API's root fields are its tools, another API's resources and methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openapi: Option<String>,
    /// The operations that become tools, with the publisher's names and descriptions;
    /// every operation when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<McpToolSpec>>,
    /// Most sessions this API keeps at once on a gateway (10000 when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<u32>,
    /// How long an unused session lives, e.g. `"30m"` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_idle: Option<Quantity>,
    /// What the server tells agents about itself in `initialize` (`instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The API's endpoint is a remote MCP server spoken to over this transport: the
    /// gateway proxies its tools (filtered and renamed by `tools:` and `deny_tools:`)
    /// instead of making tools of the API's operations (docs/mcp.md, "Proxying a remote
    /// MCP server").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<McpUpstream>,
    /// A proxied server's tools that agents never see nor call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_tools: Option<Vec<String>>,
    /// Several remote servers behind this one endpoint (multiplexed, `upstream:` their
    /// transport): each one's tools shown as `<server>__<tool>`; the API needs no
    /// `endpoints:` then (docs/mcp.md, "Several remote servers behind one endpoint").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<McpServerSpec>,
    /// Prompt templates agents list and fill in (`prompts/list`, `prompts/get`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<McpPromptSpec>,
    /// Documents served as resources (`resources/list`, `resources/read`), beside the
    /// `openapi:` document.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<McpDocumentSpec>,
    /// An audit record of every tool call, its arguments redacted (off when omitted;
    /// docs/mcp.md, "Audit trail of tool calls").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<McpAuditSpec>,
}

/// What a tool call's audit record keeps of its arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpAuditSpec {
    /// Arguments whose values are replaced by `"[REDACTED]"`: a name (`password`, at
    /// any depth) or a JSON pointer into the arguments (`/card/number`). Keys that look
    /// like secrets (password, token, secret, apikey, authorization) always are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact: Vec<String>,
    /// The most bytes of (redacted) arguments a record keeps, e.g. `"4KiB"` (the
    /// default); longer ones are cut and marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_argument_bytes: Option<crate::Quantity>,
}

/// The transport a proxied MCP server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpUpstream {
    /// Streamable HTTP (2025-03-26 and later): JSON-RPC POSTs answered as JSON or SSE.
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05): an event stream (`GET` the URL) whose
    /// `endpoint` event names where messages are POSTed; answers arrive on the stream.
    Sse,
}

/// One remote MCP server of a multiplexed endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// Its tools' prefix (`weather` -> `weather__forecast`): 1-32 of `a-z A-Z 0-9 -`,
    /// distinct within the section.
    pub name: String,
    /// The remote server's URL, exactly (its path included).
    pub url: String,
    /// Its tools agents see (by the remote's name, `tool:`), renamed, scoped and
    /// throttled as a single proxied server's `tools:`; every tool when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<McpToolSpec>>,
    /// Its tools agents never see nor call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_tools: Option<Vec<String>>,
}

/// A prompt template: `text` with `{{argument}}` placeholders, one user message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPromptSpec {
    /// 1-128 of `A-Z a-z 0-9 _ - .`, distinct within the section.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<McpPromptArgument>,
    /// The message's text; each `{{name}}` is replaced by that argument's value.
    pub text: String,
}

/// One argument of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPromptArgument {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// A document served as a resource at `docs://{name}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpDocumentSpec {
    /// 1-128 of `A-Z a-z 0-9 _ - .`, distinct within the section.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `text/markdown` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub text: String,
}

/// One operation exposed as a tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolSpec {
    /// The operation: its OpenAPI `operationId`, or `METHOD /path` as the API's
    /// resources write it (`GET /pets/{id}`); for a proxied server, the remote tool's
    /// name (`tool:` says the same).
    #[serde(alias = "tool")]
    pub operation: String,
    /// The tool's name (the operationId, or one made of the method and path, when
    /// omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool's description (the operation's summary and description when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Scopes of which the caller needs any one to call this tool, on top of what the
    /// operation's resource asks (docs/mcp.md, "Per-tool scopes and limits").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// An advanced throttling policy counted per API, tool and application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling: Option<String>,
    /// A GraphQL API's tool: the selection set its document asks for (`{ id name }`)
    /// instead of the generated one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
}
