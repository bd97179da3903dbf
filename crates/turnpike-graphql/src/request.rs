//! A GraphQL request as it arrives over HTTP (GraphQL over HTTP): POST with a JSON body
//! `{"query", "operationName", "variables"}`, POST with an `application/graphql` body
//! (the query itself), or GET with `query`, `operationName` and `variables` (JSON) in
//! the query string.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, GraphqlError, Location};

/// The parts of a GraphQL request the analysis needs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphqlRequest {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub operation_name: Option<String>,
    #[serde(default)]
    pub variables: Option<Map<String, Value>>,
}

fn bad(message: impl Into<String>) -> GraphqlError {
    GraphqlError::new(ErrorCode::BadRequest, message)
}

impl GraphqlRequest {
    /// Reads a request from its HTTP method, `Content-Type`, query string and body.
    pub fn from_http(
        method: &str,
        content_type: Option<&str>,
        query_string: Option<&str>,
        body: &[u8],
    ) -> Result<Self, GraphqlError> {
        match method {
            "GET" => Self::from_query_string(query_string.unwrap_or_default()),
            "POST" => {
                let media = content_type
                    .unwrap_or("application/json")
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase();
                match media.as_str() {
                    "application/json" | "application/graphql-response+json" => {
                        Self::from_json(body)
                    }
                    "application/graphql" => Self::from_graphql_body(body),
                    other => Err(bad(format!(
                        "unsupported Content-Type `{other}`: send application/json or application/graphql"
                    ))),
                }
            }
            other => Err(bad(format!(
                "GraphQL is served over GET and POST, not {other}"
            ))),
        }
    }

    /// `{"query": ..., "operationName": ..., "variables": {...}}`.
    pub fn from_json(body: &[u8]) -> Result<Self, GraphqlError> {
        let req: GraphqlRequest = serde_json::from_slice(body)
            .map_err(|e| bad(format!("request body is not a GraphQL JSON request: {e}")))?;
        req.require_query()
    }

    /// An `application/graphql` body: the query text.
    pub fn from_graphql_body(body: &[u8]) -> Result<Self, GraphqlError> {
        let query = std::str::from_utf8(body).map_err(|_| bad("query is not UTF-8"))?;
        GraphqlRequest {
            query: Some(query.to_owned()),
            ..Default::default()
        }
        .require_query()
    }

    /// `?query=...&operationName=...&variables=<JSON>`.
    pub fn from_query_string(qs: &str) -> Result<Self, GraphqlError> {
        let mut req = GraphqlRequest::default();
        for (k, v) in form_urlencoded::parse(qs.as_bytes()) {
            match k.as_ref() {
                "query" => req.query = Some(v.into_owned()),
                "operationName" if !v.is_empty() => req.operation_name = Some(v.into_owned()),
                "variables" if !v.is_empty() => {
                    req.variables = serde_json::from_str::<Option<Map<String, Value>>>(&v)
                        .map_err(|e| bad(format!("`variables` is not a JSON object: {e}")))?;
                }
                _ => {}
            }
        }
        req.require_query()
    }

    fn require_query(self) -> Result<Self, GraphqlError> {
        match self.query.as_deref() {
            Some(q) if !q.trim().is_empty() => Ok(self),
            _ => Err(bad("the request has no `query`")),
        }
    }

    /// The query text (present after any constructor succeeded).
    pub fn query(&self) -> &str {
        self.query.as_deref().unwrap_or_default()
    }
}

/// 1-based line and column (in characters) of a byte offset in `text`.
pub fn location(text: &str, offset: usize) -> Location {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}
