//! The audit trail of an MCP server's tool calls (the section's `audit:`): each
//! `tools/call` leaves a [`ToolCallAudit`] in the request's context with its arguments
//! redacted and cut to a size cap; the analytics observer turns it into a record when the
//! request completes and ships it with the gateway's analytics (docs/mcp.md, "Audit
//! trail of tool calls"). An API without `audit:` builds no [`Auditor`] and pays nothing.
//!
//! An API's own tools are noted from the message path's one read of the call (its
//! tool's name, its arguments' raw text: `exchange.rs`, [`Auditor::note_call`]); a proxied
//! server's calls from the message read again ([`Auditor::note`]). The arguments become a
//! tree only here, for redaction: a price audited APIs alone pay.

use std::sync::Arc;

use http::{request, HeaderValue};
use serde::Deserialize;
use serde_json::Value;
use turnpike_model::mcp::{McpAuditSpec, McpSpec};
use turnpike_policy::mcp::{ToolCallAudit, ToolOutcome};
use turnpike_policy::spec::size::parse_size;
use turnpike_policy::{BuildCx, RequestCtx};

use crate::rpc::Refusal;
use crate::session::MCP_SESSION_ID;

/// What a redacted value becomes.
pub(crate) const REDACTED: &str = "[REDACTED]";
/// What ends arguments cut at the cap.
pub(crate) const CUT: &str = "...[TRUNCATED]";
/// The arguments a record keeps when the section does not say.
pub(crate) const DEFAULT_MAX_ARGUMENT_BYTES: u64 = 4 * 1024;
/// The most a section may ask a record to keep.
pub(crate) const MAX_ARGUMENT_BYTES: u64 = 64 * 1024;
/// The most `redact` entries of a section.
pub(crate) const MAX_REDACT_RULES: usize = 100;
/// Key names that look like secrets, lower-cased with `_` and `-` dropped: a key
/// containing one is always redacted (`access_token`, `client-secret`, `X-Api-Key`).
const SECRET_WORDS: [&str; 6] = [
    "password",
    "passwd",
    "token",
    "secret",
    "apikey",
    "authorization",
];
/// The longest session id kept (the server's are 32 hex digits).
const MAX_SESSION_CHARS: usize = 64;

/// An API's audit rules, compiled.
pub(crate) struct Auditor {
    /// Argument names redacted at any depth, lower-cased.
    names: Vec<String>,
    /// JSON pointers into the arguments (`/card/number`).
    pointers: Vec<String>,
    max_bytes: usize,
}

impl Auditor {
    /// The section's rules; each problem as `(field below the section, message)`.
    pub(crate) fn build(spec: &McpAuditSpec) -> Result<Auditor, Vec<(String, String)>> {
        let mut problems = Vec::new();
        if spec.redact.len() > MAX_REDACT_RULES {
            problems.push((
                ".audit.redact".into(),
                format!("at most {MAX_REDACT_RULES} entries"),
            ));
        }
        let (mut names, mut pointers) = (Vec::new(), Vec::new());
        for (i, rule) in spec.redact.iter().enumerate() {
            match rule.as_str() {
                "" => problems.push((format!(".audit.redact[{i}]"), "empty".into())),
                p if p.starts_with('/') => pointers.push(p.to_string()),
                name => names.push(name.to_ascii_lowercase()),
            }
        }
        let max_bytes = match spec.max_argument_bytes.as_ref().map(parse_size) {
            None => DEFAULT_MAX_ARGUMENT_BYTES,
            Some(Ok(Some(n))) if (1..=MAX_ARGUMENT_BYTES).contains(&n) => n,
            Some(Ok(_)) => {
                problems.push((
                    ".audit.max_argument_bytes".into(),
                    format!("1 byte to {MAX_ARGUMENT_BYTES} bytes (64KiB)"),
                ));
                0
            }
            Some(Err(e)) => {
                problems.push((".audit.max_argument_bytes".into(), e));
                0
            }
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Auditor {
            names,
            pointers,
            max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        })
    }

    /// The rules of an `mcp:` section (`Some(None)`: it asks for no audit), each
    /// problem reported.
    pub(crate) fn of_section(spec: &McpSpec, cx: &mut BuildCx<'_>) -> Option<Option<Auditor>> {
        let Some(audit) = &spec.audit else {
            return Some(None);
        };
        match Auditor::build(audit) {
            Ok(a) => Some(Some(a)),
            Err(problems) => {
                for (below, msg) in problems {
                    cx.problem(&below, msg);
                }
                None
            }
        }
    }

    /// Puts the audit of the `tools/call` in `body` (if it is one) in `ctx`.
    pub(crate) fn note(&self, ctx: &mut RequestCtx, req: &request::Parts, body: &[u8]) {
        let Some((tool, arguments)) = tool_call(body) else {
            return;
        };
        self.insert(ctx, req.headers.get(MCP_SESSION_ID), &tool, arguments);
    }

    /// Puts the audit of a call of `tool` in `ctx`: its arguments' raw text as the
    /// message carried it (`None`: absent), the `Mcp-Session-Id` it named.
    pub(crate) fn note_call(
        &self,
        ctx: &mut RequestCtx,
        session: Option<&HeaderValue>,
        tool: &str,
        arguments: Option<&str>,
    ) {
        let arguments = arguments
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or_else(|| Value::Object(Default::default()));
        self.insert(ctx, session, tool, arguments);
    }

    fn insert(
        &self,
        ctx: &mut RequestCtx,
        session: Option<&HeaderValue>,
        tool: &str,
        arguments: Value,
    ) {
        let (arguments, truncated) = self.record(arguments);
        let session = session
            .and_then(|v| v.to_str().ok())
            .map(|s| Arc::from(cut(s, MAX_SESSION_CHARS)));
        ctx.ext.insert(ToolCallAudit {
            tool: tool.into(),
            session,
            arguments: arguments.into(),
            truncated,
            outcome: ToolOutcome::Pending,
        });
    }

    /// The arguments as the record keeps them: redacted, as JSON text, cut to the cap.
    pub(crate) fn record(&self, mut arguments: Value) -> (String, bool) {
        for p in &self.pointers {
            if let Some(v) = arguments.pointer_mut(p) {
                *v = Value::String(REDACTED.into());
            }
        }
        self.redact_keys(&mut arguments);
        let text = arguments.to_string();
        if text.len() <= self.max_bytes {
            return (text, false);
        }
        let mut kept = cut(&text, self.max_bytes).to_string();
        kept.push_str(CUT);
        (kept, true)
    }

    /// Replaces the values of named and secret-looking keys, at any depth (the parser's
    /// own depth limit bounds the recursion).
    fn redact_keys(&self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if self.is_redacted(k) {
                        *v = Value::String(REDACTED.into());
                    } else {
                        self.redact_keys(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.redact_keys(i)),
            _ => {}
        }
    }

    fn is_redacted(&self, key: &str) -> bool {
        let lower = key.to_ascii_lowercase();
        if self.names.contains(&lower) {
            return true;
        }
        let squashed: String = lower.chars().filter(|c| !matches!(c, '_' | '-')).collect();
        SECRET_WORDS.iter().any(|w| squashed.contains(w))
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The tool's name and arguments, when `body` is a `tools/call`.
fn tool_call(body: &[u8]) -> Option<(String, Value)> {
    #[derive(Deserialize)]
    struct Message {
        method: String,
        #[serde(default)]
        params: Option<Value>,
    }
    let m: Message = serde_json::from_slice(body).ok()?;
    if m.method != "tools/call" {
        return None;
    }
    let Value::Object(mut params) = m.params? else {
        return None;
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return None;
    };
    let arguments = params
        .remove("arguments")
        .unwrap_or(Value::Object(Default::default()));
    Some((name, arguments))
}

/// Settles the audited call's outcome (nothing for an unaudited request).
pub(crate) fn settle(ctx: &mut RequestCtx, outcome: ToolOutcome) {
    settle_ext(&mut ctx.ext, outcome);
}

/// [`settle`] from a request's extensions (a streamed answer settles when it ends).
pub(crate) fn settle_ext(ext: &mut http::Extensions, outcome: ToolOutcome) {
    if let Some(a) = ext.get_mut::<ToolCallAudit>() {
        a.outcome = outcome;
    }
}

/// Settles a call refused before its tool ran, by the JSON-RPC error's number.
pub(crate) fn refused(ctx: &mut RequestCtx, r: &Refusal) {
    let code = r.error.code.0.to_string().into();
    settle(ctx, ToolOutcome::Refused { code });
}

/// Settles a call over its tool's own limit.
pub(crate) fn throttled(ctx: &mut RequestCtx) {
    let code = Some("throttled".into());
    settle(ctx, ToolOutcome::ToolError { code });
}

/// The outcome a tool call's JSON-RPC answer tells: `isError` or not, a JSON-RPC
/// error by its number (a remote server's).
pub(crate) fn outcome_of_answer(answer: &[u8]) -> ToolOutcome {
    answer_outcome(answer).unwrap_or(ToolOutcome::ToolError { code: None })
}

/// The outcome told by `message` when it is an answer (`None`: a notification, a
/// request, or not JSON: an event of a stream before the answer).
pub(crate) fn answer_outcome(message: &[u8]) -> Option<ToolOutcome> {
    #[derive(Deserialize)]
    struct Answer {
        result: Option<Result_>,
        error: Option<Error_>,
    }
    #[derive(Deserialize)]
    struct Result_ {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    #[derive(Deserialize)]
    struct Error_ {
        code: Option<i64>,
    }
    let a = serde_json::from_slice::<Answer>(message).ok()?;
    match (a.result, a.error) {
        (
            Some(Result_ {
                is_error: Some(true),
            }),
            _,
        ) => Some(ToolOutcome::ToolError { code: None }),
        (Some(_), _) => Some(ToolOutcome::Ok),
        (None, Some(e)) => Some(ToolOutcome::ToolError {
            code: e.code.map(|c| c.to_string().into()),
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn auditor(redact: &[&str], max: Option<u64>) -> Auditor {
        let spec = McpAuditSpec {
            redact: redact.iter().map(|s| s.to_string()).collect(),
            max_argument_bytes: max.map(turnpike_model::Quantity::Number),
        };
        Auditor::build(&spec).unwrap_or_else(|p| panic!("{p:?}"))
    }

    #[test]
    fn secret_looking_keys_named_keys_and_pointers_are_redacted() {
        let a = auditor(&["note", "/card/number", "/items/1"], None);
        let (text, cut) = a.record(json!({
            "user": "ann",
            "Password": "hunter2",
            "access_token": "t",
            "X-Api-Key": "k",
            "nested": {"client_secret": "s", "NOTE": "private", "keep": 1},
            "card": {"number": "4111", "brand": "visa"},
            "items": ["a", "b", "c"],
            "tokens": [{"authorization": "Bearer x"}]
        }));
        assert!(!cut);
        let v: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(
            v,
            json!({
                "user": "ann",
                "Password": REDACTED,
                "access_token": REDACTED,
                "X-Api-Key": REDACTED,
                "nested": {"client_secret": REDACTED, "NOTE": REDACTED, "keep": 1},
                "card": {"number": REDACTED, "brand": "visa"},
                "items": ["a", REDACTED, "c"],
                "tokens": REDACTED
            })
        );
    }

    #[test]
    fn arguments_over_the_cap_are_cut_at_a_character_and_marked() {
        let a = auditor(&[], Some(40));
        let (text, cut) = a.record(json!({"text": "é".repeat(100)}));
        assert!(cut);
        assert!(text.ends_with(CUT), "{text}");
        let kept = text.len() - CUT.len();
        assert!((39..=40).contains(&kept), "{text}");
        let (short, cut) = a.record(json!({"n": 1}));
        assert_eq!((short.as_str(), cut), ("{\"n\":1}", false));
    }

    #[test]
    fn bad_rules_are_problems_naming_their_field() {
        let spec = McpAuditSpec {
            redact: vec!["".into()],
            max_argument_bytes: Some(turnpike_model::Quantity::Text("1MiB".into())),
        };
        let fields: Vec<String> = match Auditor::build(&spec) {
            Err(p) => p.into_iter().map(|(f, _)| f).collect(),
            Ok(_) => panic!("accepted"),
        };
        assert_eq!(fields, [".audit.redact[0]", ".audit.max_argument_bytes"]);
    }

    #[test]
    fn only_a_tools_call_is_audited_and_its_answer_settles_it() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"id":"7"}}}"#;
        assert_eq!(
            tool_call(call),
            Some(("getPet".to_string(), json!({"id": "7"})))
        );
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(tool_call(list), None);
        assert_eq!(tool_call(b"not json"), None);
        let ok = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"isError":true}}}"#;
        assert_eq!(outcome_of_answer(ok), ToolOutcome::Ok);
        let failed = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#;
        assert_eq!(
            outcome_of_answer(failed),
            ToolOutcome::ToolError { code: None }
        );
        let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such tool"}}"#;
        assert_eq!(
            outcome_of_answer(error),
            ToolOutcome::ToolError {
                code: Some("-32602".into())
            }
        );
        let progress = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        assert_eq!(answer_outcome(progress), None, "not the answer yet");
    }
}
