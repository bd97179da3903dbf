//! The GraphQL-shaped error (spec §7.1.2: `message`, `locations`, `extensions.code`) that
//! every rejection of this crate becomes, and the `{"errors": [...]}` body.

use serde::Serialize;

/// Where in the query text an error points (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// Why a query was refused; stable strings sent as `extensions.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The HTTP request does not carry a GraphQL request (no query, bad JSON, ...).
    BadRequest,
    /// The query text is not GraphQL.
    ParseFailed,
    /// The query does not validate against the schema.
    ValidationFailed,
    /// A cap checked before analysis (bytes, tokens, nesting, aliases, root fields,
    /// directives, expanded fields) was exceeded.
    QueryTooLarge,
    /// `operationName` names no operation, or several operations and no name.
    OperationNotFound,
    MaxDepthExceeded,
    MaxComplexityExceeded,
    /// A type or field the caller may not select.
    FieldNotAllowed,
    /// `__schema` / `__type` on an API that turned introspection off.
    IntrospectionDisabled,
    /// The tier's cost quota for the window is spent.
    QuotaExceeded,
    /// A request without a credential calls an operation that is not `auth: none`.
    Unauthenticated,
    /// An operation's throttling policy (`operations[].throttling`) is over its limit.
    Throttled,
}

impl ErrorCode {
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::ParseFailed => "GRAPHQL_PARSE_FAILED",
            ErrorCode::ValidationFailed => "GRAPHQL_VALIDATION_FAILED",
            ErrorCode::QueryTooLarge => "QUERY_TOO_LARGE",
            ErrorCode::OperationNotFound => "OPERATION_NOT_FOUND",
            ErrorCode::MaxDepthExceeded => "MAX_DEPTH_EXCEEDED",
            ErrorCode::MaxComplexityExceeded => "MAX_COMPLEXITY_EXCEEDED",
            ErrorCode::FieldNotAllowed => "FIELD_NOT_ALLOWED",
            ErrorCode::IntrospectionDisabled => "INTROSPECTION_DISABLED",
            ErrorCode::QuotaExceeded => "COST_QUOTA_EXCEEDED",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::Throttled => "THROTTLED",
        }
    }
}

/// One GraphQL error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphqlError {
    pub message: String,
    pub locations: Vec<Location>,
    pub code: ErrorCode,
}

impl GraphqlError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        GraphqlError {
            message: message.into(),
            locations: Vec::new(),
            code,
        }
    }

    pub fn at(mut self, location: Option<Location>) -> Self {
        self.locations.extend(location);
        self
    }
}

impl std::fmt::Display for GraphqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(l) = self.locations.first() {
            write!(f, " (line {}, column {})", l.line, l.column)?;
        }
        Ok(())
    }
}

impl std::error::Error for GraphqlError {}

#[derive(Serialize)]
struct Wire<'a> {
    message: &'a str,
    #[serde(skip_serializing_if = "<[Location]>::is_empty")]
    locations: &'a [Location],
    extensions: Extensions<'a>,
}

#[derive(Serialize)]
struct Extensions<'a> {
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
}

#[derive(Serialize)]
struct Body<'a> {
    errors: Vec<Wire<'a>>,
}

/// `{"errors": [...]}` for a response; `request_id` goes into each error's
/// `extensions` so a client can quote it.
pub fn errors_body(errors: &[GraphqlError], request_id: Option<&str>) -> String {
    let body = Body {
        errors: errors
            .iter()
            .map(|e| Wire {
                message: &e.message,
                locations: &e.locations,
                extensions: Extensions {
                    code: e.code.as_str(),
                    request_id,
                },
            })
            .collect(),
    };
    // Serializing plain strings and numbers cannot fail.
    serde_json::to_string(&body).unwrap_or_else(|_| String::from("{\"errors\":[]}"))
}
