//! The one mediation error: which policy failed, on which side of the exchange, and why.
//! The gateway maps it to its error table: a message the policy cannot read is the
//! sender's fault (the client's on the request side, 4xx; the upstream's on the response
//! side, 502); a program that fails is the configuration's (500 `mediation_failed`).

use std::sync::Arc;
use std::time::Duration;

use crate::xml::XmlError;

/// Which message a transformation was working on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorStage {
    Request,
    Response,
}

/// A transformation that could not produce its output. Nothing of the output has been
/// sent when this is returned: the body is built whole before it replaces the old one.
#[derive(Debug, Clone, thiserror::Error)]
#[error("mediation policy {policy:?} ({stage:?}): {kind}")]
pub struct MediationError {
    /// The policy's name, as configured (or `{api}/request`, `{api}/response`).
    pub policy: Arc<str>,
    pub stage: ErrorStage,
    pub kind: MediationErrorKind,
}

/// Why a transformation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MediationErrorKind {
    /// The body is not JSON (message names the line and column).
    #[error("the body is not valid JSON: {0}")]
    BadJson(String),
    /// The body is not XML this gateway reads (DTDs, entities, depth and size limits).
    #[error("the body is not acceptable XML: {0}")]
    BadXml(XmlError),
    /// The body's content type is not the one the transformation reads, and the policy
    /// refuses other content.
    #[error("content type {0:?} is not what this transformation reads")]
    UnsupportedContentType(String),
    /// The body is larger than the transformation reads.
    #[error("the body exceeds the {0} bytes a transformation reads")]
    InputTooLarge(usize),
    /// The jq program raised an error (`error(...)`, a type error, `halt`).
    #[error("the jq program failed: {0}")]
    Program(String),
    #[error("the jq program ran past its deadline of {0:?}")]
    Deadline(Duration),
    #[error("the jq program recursed deeper than its stack budget")]
    StackLimit,
    #[error("the jq program produced no output")]
    NoOutput,
    #[error("the jq program produced more than one output")]
    ManyOutputs,
    #[error("the output exceeds the cap of {0} bytes")]
    OutputTooLarge(usize),
    /// The program's result cannot be written in the output format (a byte string, a
    /// non-string object key, an XML name that is not a name, nesting too deep).
    #[error("the output cannot be written as {format}: {message}")]
    Unrepresentable {
        format: &'static str,
        message: String,
    },
    /// The interpreter itself failed (a bug): logged, reported as a program failure.
    #[error("the jq interpreter failed unexpectedly")]
    Internal,
}

impl MediationErrorKind {
    /// True when the message being transformed is at fault (unreadable body, wrong
    /// content type, too large), false when the program or its output is.
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Self::BadJson(_)
                | Self::BadXml(_)
                | Self::UnsupportedContentType(_)
                | Self::InputTooLarge(_)
        )
    }
}
