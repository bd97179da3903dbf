//! The MCP kind: an API exposed as a Model Context Protocol server over the Streamable
//! HTTP transport, at `/mcp{context}/{version}` on the gateway (docs/mcp.md). Each
//! selected operation of the API (from its OpenAPI document, a GraphQL API's root
//! fields, or its resources) is a tool; a `tools/call` is rewritten into the operation's HTTP request before auth, so
//! the API's own chain (auth, subscription, scopes, throttling, mediation, analytics)
//! runs on it exactly as on a REST call, and the answer is wrapped back into the
//! call's result. Sessions live in the gateway's runtime, bounded and expiring.
//!
//! Protocol types are the official SDK's (`rmcp::model`); its server runtime is not
//! used: the gateway's chain is the server. Depends on turnpike-policy, turnpike-model
//! and turnpike-throttle (the tools' own limits count in the snapshot's throttler), never
//! on the gateway or the config compiler.

mod args;
mod audit;
mod call;
mod content;
mod exchange;
mod fast;
#[cfg(test)]
mod fuzz;
mod govern;
pub mod graphql;
pub mod openapi;
mod policy;
pub mod preview;
#[cfg(test)]
mod profile;
mod proxy;
mod rpc;
mod scan;
mod session;
mod tools;
mod wrap;

pub use policy::{Mcp, McpPolicy, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_SECS};
pub use rpc::MAX_MESSAGE_BYTES;
pub use tools::MAX_TOOL_NAME;
