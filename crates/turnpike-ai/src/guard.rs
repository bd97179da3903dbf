//! An AI API's guardrails (`ai.guards:`), compiled once per snapshot into a [`Guard`]:
//! the request checks (body size, `max_tokens` cap, deny/allow patterns, PII masked or
//! refused) run on the parsed body before it is routed ([`Guard::request`]); the answer
//! checks (its JSON schema) on a whole answer ([`Guarded::check_answer`]); the external
//! guard service is asked in `external.rs`. Each refusal is a [`GatewayError`] of its own
//! kind (its own code and analytics reason), answered in the front's shape by the policy.
//!
//! Bounded: at most [`MAX_PATTERNS`] patterns of [`MAX_PATTERN_BYTES`] each, compiled
//! under a size limit; the texts scanned are the prompt's (`messages`, `system`,
//! `prompt`, `input`), each under the PII scanner's cap; a client's JSON schema is at
//! most [`MAX_SCHEMA_BYTES`] and its patterns compile with the linear-time engine.

use std::sync::Arc;

use regex::{RegexSet, RegexSetBuilder};
use serde_json::{Map, Value};
use turnpike_model::ai_guard::{GuardSpec, PiiAction};
use turnpike_policy::spec::size::parse_size;
use turnpike_policy::{BuildCx, ErrorKind, GatewayError};

use crate::external::External;
use crate::pii::{Masks, Scanner, TooMuch};
use crate::request::Front;

pub const MAX_PATTERNS: usize = 64;
pub const MAX_PATTERN_BYTES: usize = 1024;
/// The compiled size each pattern set may take.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// Most texts looked at in one request (parts of every message).
const MAX_TEXTS: usize = 4096;
/// Longest validation message passed on to the client.
const MAX_REASON_CHARS: usize = 300;

/// The members of a request body that hold prompt text, and the keys under them whose
/// string values are text (not roles, ids, URLs or image data).
const TOP: [&str; 4] = ["messages", "system", "prompt", "input"];
const TEXT_KEYS: [&str; 7] = [
    "messages",
    "system",
    "prompt",
    "input",
    "content",
    "text",
    "arguments",
];

/// The compiled guards.
pub struct Guard {
    max_bytes: Option<u64>,
    max_tokens: Option<u64>,
    deny: Option<RegexSet>,
    allow: Option<RegexSet>,
    pii: Option<(Scanner, PiiAction, bool)>,
    json_schema: bool,
    pub(crate) external: Option<External>,
}

/// What the request checks leave for the answer: the placeholders to put back and the
/// schema the answer must meet.
#[derive(Clone, Default)]
pub(crate) struct Guarded {
    pub(crate) masks: Option<Arc<Masks>>,
    pub(crate) schema: Option<Arc<jsonschema::Validator>>,
}

fn refusal(kind: ErrorKind, message: impl Into<String>) -> GatewayError {
    let mut e = GatewayError::new(kind);
    e.detail = Some(message.into().into());
    e
}

fn patterns(cx: &mut BuildCx<'_>, field: &str, list: &[String]) -> Option<RegexSet> {
    if list.is_empty() {
        return None;
    }
    if list.len() > MAX_PATTERNS {
        cx.problem(field, format!("at most {MAX_PATTERNS} patterns"));
        return None;
    }
    if let Some(i) = list.iter().position(|p| p.len() > MAX_PATTERN_BYTES) {
        cx.problem(
            &format!("{field}[{i}]"),
            format!("a pattern is at most {MAX_PATTERN_BYTES} bytes"),
        );
        return None;
    }
    match RegexSetBuilder::new(list)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
    {
        Ok(set) => Some(set),
        Err(e) => {
            cx.problem(field, format!("not a valid pattern: {e}"));
            None
        }
    }
}

impl Guard {
    /// The guards of `spec`; problems for bad patterns, sizes and URLs.
    pub(crate) fn build(spec: &GuardSpec, cx: &mut BuildCx<'_>) -> Guard {
        let max_bytes = match spec.max_request_bytes.as_ref().map(parse_size) {
            Some(Ok(n)) => n,
            Some(Err(e)) => {
                cx.problem(".guards.max_request_bytes", e);
                None
            }
            None => None,
        };
        Guard {
            max_bytes,
            max_tokens: spec.max_tokens,
            deny: patterns(cx, ".guards.deny", &spec.deny),
            allow: patterns(cx, ".guards.allow", &spec.allow),
            pii: spec
                .pii
                .as_ref()
                .map(|p| (Scanner::new(&p.detect), p.action, p.unmask)),
            json_schema: spec.json_schema,
            external: spec.external.as_ref().and_then(|e| External::build(e, cx)),
        }
    }

    /// The request checks on a front call's parsed body of `len` bytes; PII is masked
    /// in place (`true` when something was). The texts are what the external guard and
    /// the semantic cache read (masked).
    pub(crate) fn request(
        &self,
        front: Front,
        parsed: &mut Map<String, Value>,
        len: usize,
    ) -> Result<(Guarded, Vec<String>, bool), GatewayError> {
        if self.max_bytes.is_some_and(|m| len as u64 > m) {
            return Err(refusal(
                ErrorKind::BodyTooLarge,
                "the request is larger than this AI API accepts",
            ));
        }
        self.check_max_tokens(parsed)?;
        let mut texts = texts(parsed);
        self.check_patterns(&texts)?;
        let mut guarded = Guarded::default();
        let mut masked = false;
        if let Some((scanner, action, unmask)) = &self.pii {
            let masks = mask(parsed, scanner, *action)?;
            if !masks.is_empty() {
                masked = true;
                // What leaves the gateway (the guard service, the cache) sees the
                // masked texts, never the originals.
                texts = self::texts(parsed);
                if *unmask {
                    guarded.masks = Some(Arc::new(masks));
                }
            }
        }
        if self.json_schema && front.sent_as() == Front::Chat {
            guarded.schema = schema(parsed)?;
        }
        Ok((guarded, texts, masked))
    }

    fn check_max_tokens(&self, parsed: &Map<String, Value>) -> Result<(), GatewayError> {
        let Some(cap) = self.max_tokens else {
            return Ok(());
        };
        let asked = ["max_completion_tokens", "max_tokens"]
            .iter()
            .filter_map(|k| parsed.get(*k).and_then(Value::as_u64))
            .max();
        match asked {
            Some(n) if n > cap => Err(refusal(
                ErrorKind::AiMaxTokensExceeded,
                format!("max_tokens {n} is more than this API allows ({cap})"),
            )),
            _ => Ok(()),
        }
    }

    fn check_patterns(&self, texts: &[String]) -> Result<(), GatewayError> {
        if let Some(deny) = &self.deny {
            if texts.iter().any(|t| deny.is_match(t)) {
                return Err(refusal(
                    ErrorKind::AiPromptDenied,
                    "the prompt matches a pattern this API refuses",
                ));
            }
        }
        if let Some(allow) = &self.allow {
            if !texts.iter().any(|t| allow.is_match(t)) {
                return Err(refusal(
                    ErrorKind::AiPromptDenied,
                    "the prompt matches none of the patterns this API allows",
                ));
            }
        }
        Ok(())
    }
}

/// Every prompt text of a request body, at most [`MAX_TEXTS`].
pub(crate) fn texts(parsed: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for k in TOP {
        if let Some(v) = parsed.get(k) {
            collect(v, k, &mut out);
        }
    }
    out
}

fn collect(v: &Value, key: &str, out: &mut Vec<String>) {
    if out.len() >= MAX_TEXTS {
        return;
    }
    match v {
        Value::String(s) if TEXT_KEYS.contains(&key) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect(x, key, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| collect(x, k, out)),
        _ => {}
    }
}

/// Masks the PII of every prompt text in place (or refuses it).
fn mask(
    parsed: &mut Map<String, Value>,
    scanner: &Scanner,
    action: PiiAction,
) -> Result<Masks, GatewayError> {
    let mut masks = Masks::default();
    let mut seen = 0usize;
    for k in TOP {
        if let Some(v) = parsed.get_mut(k) {
            mask_value(v, k, scanner, &mut masks, &mut seen)?;
        }
    }
    if action == PiiAction::Refuse && !masks.is_empty() {
        return Err(refusal(
            ErrorKind::AiPiiDetected,
            "the prompt carries personal data (an e-mail address, phone, card number or IBAN)",
        ));
    }
    Ok(masks)
}

fn mask_value(
    v: &mut Value,
    key: &str,
    scanner: &Scanner,
    masks: &mut Masks,
    seen: &mut usize,
) -> Result<(), GatewayError> {
    match v {
        Value::String(s) if TEXT_KEYS.contains(&key) => {
            *seen += 1;
            if *seen > MAX_TEXTS {
                return Err(too_much(TooMuch::Values));
            }
            if let Some(out) = scanner.mask(s, masks).map_err(too_much)? {
                *s = out;
            }
        }
        Value::Array(a) => {
            for x in a {
                mask_value(x, key, scanner, masks, seen)?;
            }
        }
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                mask_value(x, k, scanner, masks, seen)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn too_much(t: TooMuch) -> GatewayError {
    refusal(
        ErrorKind::AiPiiDetected,
        match t {
            TooMuch::Text => "a prompt text is too long to scan for personal data",
            TooMuch::Values => "the prompt carries more personal data than can be masked",
        },
    )
}

/// The validator of a `response_format: {type: json_schema, json_schema: {schema}}`.
fn schema(parsed: &Map<String, Value>) -> Result<Option<Arc<jsonschema::Validator>>, GatewayError> {
    let Some(rf) = parsed.get("response_format") else {
        return Ok(None);
    };
    if rf.get("type").and_then(Value::as_str) != Some("json_schema") {
        return Ok(None);
    }
    let Some(schema) = rf.get("json_schema").and_then(|j| j.get("schema")) else {
        return Ok(None);
    };
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(refusal(
            ErrorKind::BadRequest,
            format!("response_format's schema is larger than {MAX_SCHEMA_BYTES} bytes"),
        ));
    }
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex().size_limit(REGEX_SIZE_LIMIT))
        .build(schema)
        .map(|v| Some(Arc::new(v)))
        .map_err(|e| {
            refusal(
                ErrorKind::BadRequest,
                format!("response_format's schema: {e}"),
            )
        })
}

impl Guarded {
    pub(crate) fn is_empty(&self) -> bool {
        self.masks.is_none() && self.schema.is_none()
    }

    /// A whole OpenAI chat answer against the request's schema: each choice's content
    /// must be JSON that the schema accepts.
    pub(crate) fn check_answer(&self, answer: &Value) -> Result<(), GatewayError> {
        let Some(schema) = &self.schema else {
            return Ok(());
        };
        let choices = answer.get("choices").and_then(Value::as_array);
        for c in choices.into_iter().flatten() {
            let Some(text) = c["message"]["content"].as_str() else {
                continue;
            };
            let why = match serde_json::from_str::<Value>(text) {
                Err(_) => "the answer is not JSON".to_owned(),
                Ok(v) => match schema.validate(&v) {
                    Ok(()) => continue,
                    Err(e) => {
                        let e: String = e.to_string().chars().take(MAX_REASON_CHARS).collect();
                        format!("the answer does not match response_format's schema: {e}")
                    }
                },
            };
            return Err(refusal(ErrorKind::AiAnswerInvalid, why));
        }
        Ok(())
    }
}
