//! What an MCP server's policy learns about one tool call for its audit trail: the MCP
//! kind puts a [`ToolCallAudit`] in [`crate::RequestCtx::ext`] when the API's `mcp:`
//! section asks for an audit (docs/mcp.md, "Audit trail of tool calls"), and the
//! analytics observer turns it into an audit record when the request completes.
//! Readers never depend on the MCP crate. An API without an audit puts nothing there.

use std::sync::Arc;

/// One audited tool call, as the MCP policy saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCallAudit {
    /// The tool's name as the agent called it.
    pub tool: Arc<str>,
    /// The session the call came in (`Mcp-Session-Id`, 32 hex digits), when it named one.
    pub session: Option<Arc<str>>,
    /// The arguments as JSON text, redacted and cut to the section's size cap.
    pub arguments: Arc<str>,
    /// The arguments were longer than the cap (the text ends with the cut marker).
    pub truncated: bool,
    /// How the call ended, when the policy knows it; `Pending` leaves it to the
    /// request's completion (the gateway's refusal, or its status).
    pub outcome: ToolOutcome,
}

/// How an audited tool call ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolOutcome {
    /// Not settled by the policy: read from the request's completion.
    #[default]
    Pending,
    /// The tool answered a result.
    Ok,
    /// The tool answered `isError` (the operation's 4xx/5xx, a GraphQL `errors` list,
    /// or the tool's own limit: `code` then names it, e.g. `throttled`).
    ToolError { code: Option<Arc<str>> },
    /// The call was refused before it reached the tool: `code` is the error table's
    /// code (`missing_credentials`, `insufficient_scope`, ...) or the JSON-RPC error's
    /// number (`-32602` for an unknown tool or bad arguments).
    Refused { code: Arc<str> },
}
