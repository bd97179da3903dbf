//! An API's tools: which operations become tools (the `mcp:` section's selection, or
//! every operation), their names, descriptions and JSON Schema inputs, and the
//! [`CallPlan`] that turns a call's arguments into the operation's HTTP request.

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderName, HeaderValue, Method};
use rmcp::model::{JsonObject, ListToolsResult, Tool, ToolAnnotations};
use serde_json::{Map, Value};
use turnpike_model::mcp::McpSpec;
use turnpike_model::ApiSpec;

use crate::openapi::{self, Location, Operation, Param};

/// Longest tool name (the MCP specification's bound).
pub const MAX_TOOL_NAME: usize = 128;

/// An API's tools, ready for requests: by name, their analytics names, and the
/// `tools/list` result serialized once.
pub struct Catalog {
    pub tools: Vec<ToolDef>,
    pub by_name: HashMap<String, usize>,
    /// Each tool's name as the resource its calls are counted under.
    pub resources: Vec<Arc<str>>,
    /// The `tools/list` result.
    pub list: Box<str>,
}

impl Catalog {
    pub fn new(tools: Vec<ToolDef>) -> Catalog {
        let mut list =
            ListToolsResult::with_all_items(tools.iter().map(|t| t.tool.clone()).collect());
        // The handshake versions know no result type.
        list.result_type = None;
        Catalog {
            by_name: tools
                .iter()
                .enumerate()
                .map(|(i, t)| (t.tool.name.to_string(), i))
                .collect(),
            resources: tools.iter().map(|t| Arc::from(&*t.tool.name)).collect(),
            list: serde_json::to_string(&list).unwrap_or_default().into(),
            tools,
        }
    }
}

/// One tool: how it is listed and how a call becomes an HTTP request.
pub struct ToolDef {
    pub tool: Tool,
    pub plan: CallPlan,
}

/// How a call's arguments become the operation's request.
#[derive(Debug)]
pub struct CallPlan {
    pub method: Method,
    /// The path template, split at its parameters.
    pub path: Vec<Piece>,
    pub args: Vec<Arg>,
}

/// A piece of a path template.
#[derive(Debug)]
pub enum Piece {
    Literal(String),
    /// The value of `args[i]`.
    Arg(usize),
}

/// One argument of a tool.
#[derive(Debug)]
pub struct Arg {
    pub name: String,
    pub place: Place,
    pub required: bool,
    pub schema: Value,
}

/// Where an argument goes.
#[derive(Debug)]
pub enum Place {
    Path,
    Query,
    Header(HeaderName),
    /// The request body, JSON when `json` (any other media type takes a string).
    Body {
        content_type: HeaderValue,
        json: bool,
    },
}

/// Headers an OpenAPI header parameter may not set (OpenAPI ignores the first three;
/// the others are the gateway's).
const RESERVED_HEADERS: [&str; 8] = [
    "accept",
    "content-type",
    "authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "cookie",
];

/// The API's tools, or every problem (document path below `mcp`, message).
pub fn build(spec: &McpSpec, api: &ApiSpec) -> Result<Vec<ToolDef>, Vec<(String, String)>> {
    let ops = operations_of(spec, api)?;
    let mut problems = Vec::new();
    let chosen: Vec<(&Operation, Option<&str>, Option<&str>)> = match &spec.tools {
        None => ops.iter().map(|o| (o, None, None)).collect(),
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match ops.iter().find(|o| names(o, &t.operation)) {
                Some(o) => Some((o, t.name.as_deref(), t.description.as_deref())),
                None => {
                    let msg = format!("the API has no operation `{}`", t.operation);
                    problems.push((format!(".tools[{i}].operation"), msg));
                    None
                }
            })
            .collect(),
    };
    let mut tools: Vec<ToolDef> = Vec::with_capacity(chosen.len());
    for (op, name, description) in chosen {
        let name = name.map_or_else(|| default_name(op), str::to_owned);
        if !valid_name(&name) {
            let msg = format!("tool name `{name}`: 1 to {MAX_TOOL_NAME} of A-Z a-z 0-9 _ - .");
            problems.push((".tools".into(), msg));
        } else if tools.iter().any(|t| t.tool.name == name) {
            problems.push((".tools".into(), format!("two tools are named `{name}`")));
        } else {
            match tool(op, name, description) {
                Ok(t) => tools.push(t),
                Err(e) => problems.push((".openapi".into(), e)),
            }
        }
    }
    if problems.is_empty() {
        Ok(tools)
    } else {
        Err(problems)
    }
}

/// The operations tools may be made of: the section's OpenAPI document's, else the
/// API's resources.
pub(crate) fn operations_of(
    spec: &McpSpec,
    api: &ApiSpec,
) -> Result<Vec<Operation>, Vec<(String, String)>> {
    match &spec.openapi {
        Some(text) => openapi::operations(text)
            .map_err(|ps| ps.into_iter().map(|p| (".openapi".into(), p)).collect()),
        None => Ok(from_resources(api)),
    }
}

/// Whether `wanted` (an operationId, or `METHOD /path`) names `op`.
pub(crate) fn names(op: &Operation, wanted: &str) -> bool {
    if op.operation_id.as_deref() == Some(wanted) {
        return true;
    }
    match wanted.split_once(' ') {
        Some((m, p)) => m.eq_ignore_ascii_case(op.method.as_str()) && p.trim() == op.path,
        None => false,
    }
}

/// Tool names the MCP specification allows.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The operationId when it is a valid name, else one made of the method and path
/// (`get_pets_petId`).
pub(crate) fn default_name(op: &Operation) -> String {
    if let Some(id) = op.operation_id.as_deref().filter(|id| valid_name(id)) {
        return id.to_owned();
    }
    let raw = format!("{}{}", op.method.as_str().to_ascii_lowercase(), op.path);
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let mut out = out.trim_end_matches('_').to_owned();
    out.truncate(MAX_TOOL_NAME);
    out
}

/// Without an OpenAPI document: each resource and method (not `*`), with its path
/// parameters as strings and, for POST, PUT and PATCH, an optional JSON body.
fn from_resources(api: &ApiSpec) -> Vec<Operation> {
    let mut ops = Vec::new();
    for r in api.resources.iter().filter(|r| !r.path.contains('*')) {
        for m in r.methods.iter().filter(|m| m.as_str() != "*") {
            let Ok(method) = Method::from_bytes(m.to_ascii_uppercase().as_bytes()) else {
                continue;
            };
            let params = template_names(&r.path)
                .map(|name| Param {
                    name: name.to_owned(),
                    location: Location::Path,
                    required: true,
                    description: None,
                    schema: serde_json::json!({"type": "string"}),
                })
                .collect();
            let body = matches!(method, Method::POST | Method::PUT | Method::PATCH).then(|| {
                openapi::Body {
                    required: false,
                    content_type: "application/json".into(),
                    schema: Value::Object(Map::new()),
                }
            });
            ops.push(Operation {
                method,
                path: r.path.clone(),
                operation_id: None,
                summary: None,
                description: None,
                params,
                body,
            });
        }
    }
    ops
}

/// The `{name}`s of a path template, in order.
fn template_names(path: &str) -> impl Iterator<Item = &str> {
    path.split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name))
}

pub(crate) fn tool(
    op: &Operation,
    name: String,
    description: Option<&str>,
) -> Result<ToolDef, String> {
    let plan = plan(op)?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for a in &plan.args {
        properties.insert(a.name.clone(), a.schema.clone());
        if a.required {
            required.push(Value::String(a.name.clone()));
        }
    }
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    let description = description.map_or_else(|| describe(op), str::to_owned);
    let mut tool = Tool::new(name, description, Arc::new(schema));
    tool.title = op.summary.clone();
    let read_only = matches!(op.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let idempotent = read_only || matches!(op.method, Method::PUT | Method::DELETE);
    tool.annotations = Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(op.method == Method::DELETE)
            .idempotent(idempotent),
    );
    Ok(ToolDef { tool, plan })
}

/// The operation's summary and description, or its method and path.
pub(crate) fn describe(op: &Operation) -> String {
    match (&op.summary, &op.description) {
        (Some(s), Some(d)) => format!("{s}\n\n{d}"),
        (Some(t), None) | (None, Some(t)) => t.clone(),
        (None, None) => format!("{} {}", op.method, op.path),
    }
}

fn plan(op: &Operation) -> Result<CallPlan, String> {
    let at = || format!("{} {}", op.method, op.path);
    let mut args: Vec<Arg> = Vec::with_capacity(op.params.len() + 1);
    for p in &op.params {
        let place = match p.location {
            Location::Path => Place::Path,
            Location::Query => Place::Query,
            Location::Header => {
                let lower = p.name.to_ascii_lowercase();
                if RESERVED_HEADERS.contains(&lower.as_str()) {
                    continue;
                }
                let h = HeaderName::from_bytes(lower.as_bytes())
                    .map_err(|_| format!("{}: `{}` is no header name", at(), p.name))?;
                Place::Header(h)
            }
        };
        if args.iter().any(|a| a.name == p.name) {
            return Err(format!(
                "{}: two parameters are named `{}` (a tool's arguments need distinct names)",
                at(),
                p.name
            ));
        }
        args.push(Arg {
            name: p.name.clone(),
            place,
            required: p.required,
            schema: with_description(&p.schema, p.description.as_deref()),
        });
    }
    if let Some(b) = &op.body {
        let content_type = HeaderValue::from_str(&b.content_type)
            .map_err(|_| format!("{}: media type `{}`", at(), b.content_type))?;
        let json = openapi::is_json(&b.content_type);
        let name = if args.iter().any(|a| a.name == "body") {
            "requestBody"
        } else {
            "body"
        };
        let schema = match json {
            true => b.schema.clone(),
            false => serde_json::json!({"type": "string"}),
        };
        args.push(Arg {
            name: name.into(),
            place: Place::Body { content_type, json },
            required: b.required,
            schema,
        });
    }
    let path = pieces(&op.path, &mut args);
    Ok(CallPlan {
        method: op.method.clone(),
        path,
        args,
    })
}

/// Splits a template at its `{name}`s; a name no parameter declares becomes a
/// required string argument.
fn pieces(template: &str, args: &mut Vec<Arg>) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        out.push(Piece::Literal(rest[..open].to_owned()));
        let name = &rest[open + 1..close];
        let i = match args.iter().position(|a| a.name == name) {
            Some(i) => {
                args[i].place = Place::Path;
                args[i].required = true;
                i
            }
            None => {
                args.push(Arg {
                    name: name.to_owned(),
                    place: Place::Path,
                    required: true,
                    schema: serde_json::json!({"type": "string"}),
                });
                args.len() - 1
            }
        };
        out.push(Piece::Arg(i));
        rest = &rest[close + 1..];
    }
    out.push(Piece::Literal(rest.to_owned()));
    out
}

fn with_description(schema: &Value, description: Option<&str>) -> Value {
    let mut s = schema.clone();
    if let (Some(d), Value::Object(m)) = (description, &mut s) {
        m.entry("description").or_insert_with(|| d.into());
    }
    s
}
