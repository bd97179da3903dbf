//! An API's tools: which operations become tools (the `mcp:` section's selection, or
//! every operation), their names, descriptions and JSON Schema inputs, and the
//! [`CallPlan`] that turns a call's arguments into the operation's HTTP request.

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderName, HeaderValue, Method};
use rmcp::model::{JsonObject, ListToolsResult, Tool, ToolAnnotations};
use serde_json::{Map, Value};
use turnpike_model::mcp::{McpSpec, McpToolSpec};
use turnpike_model::ApiSpec;

use crate::graphql;
use crate::openapi::{self, Location, Operation, Param};
use crate::scan::Expected;

/// Longest tool name (the MCP specification's bound).
pub const MAX_TOOL_NAME: usize = 128;

/// An API's tools, ready for requests: by name, their analytics names, and the
/// `tools/list` result serialized once.
pub struct Catalog {
    pub tools: Vec<ToolDef>,
    /// Each tool's index by its name (foldhash: the names are the publisher's, a call
    /// looks one up on the hot path).
    pub by_name: HashMap<String, usize, foldhash::fast::RandomState>,
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
    /// The section's `scopes` of the tool (the caller needs one), checked after auth.
    pub scopes: Box<[String]>,
    /// The section's advanced policy of the tool (per API, tool and application).
    pub throttling: Option<Box<str>>,
}

/// How a call's arguments become the operation's request.
#[derive(Debug)]
pub struct CallPlan {
    pub method: Method,
    /// The path template, split at its parameters.
    pub path: Vec<Piece>,
    /// The template's literal bytes (a call's path buffer starts this large, plus room).
    pub path_len: usize,
    pub args: Vec<Arg>,
    /// The arguments' names, as the scanner compares a key with them (`args`' order).
    pub(crate) keys: Vec<Expected<String>>,
    /// A GraphQL field's document: the call is a POST of it with the arguments as its
    /// variables.
    pub graphql: Option<String>,
    /// The operation never has a body (no body argument, no GraphQL document): a
    /// call's message `Content-Type` is taken out as it is checked.
    pub bodiless: bool,
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
    /// The schema's `type`s as [`Kind`] bits, compiled once (`None`: any value).
    pub kinds: Option<u8>,
    /// The schema's `enum` (its allowed values), looked up once.
    pub allowed: bool,
}

impl Arg {
    fn new(name: String, place: Place, required: bool, schema: Value) -> Arg {
        let kinds = Kind::compile(&Arg::names_in(&schema));
        let allowed = schema.get("enum").is_some_and(Value::is_array);
        Arg {
            name,
            place,
            required,
            schema,
            kinds,
            allowed,
        }
    }

    /// The schema's `type` names (for a refusal's message).
    pub fn type_names(&self) -> Vec<&str> {
        Arg::names_in(&self.schema)
    }

    fn names_in(schema: &Value) -> Vec<&str> {
        match schema.get("type") {
            Some(Value::String(t)) => vec![t],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

/// A JSON value's type, read from the first byte of its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

/// A schema's `type` names, by their [`Kind`] bit.
const TYPE_NAMES: [&str; 7] = [
    "string", "integer", "number", "boolean", "array", "object", "null",
];
const STRING: u8 = 1;
const INTEGER: u8 = 1 << 1;
const NUMBER: u8 = 1 << 2;
const BOOLEAN: u8 = 1 << 3;
const ARRAY: u8 = 1 << 4;
const OBJECT: u8 = 1 << 5;
const NULL: u8 = 1 << 6;

impl Kind {
    /// The kind of a value the parser read (so its first byte says which it is).
    pub fn of(v: &str) -> Kind {
        match v.as_bytes().first() {
            Some(b'"') => Kind::String,
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b't' | b'f') => Kind::Boolean,
            Some(b'n') => Kind::Null,
            _ => Kind::Number,
        }
    }

    /// Type names as bits; `None` when they allow any value (none given, or one this
    /// checker does not know).
    fn compile(names: &[&str]) -> Option<u8> {
        let mut bits = 0;
        for name in names {
            let i = TYPE_NAMES.iter().position(|t| t == name)?;
            bits |= 1 << i;
        }
        (bits != 0).then_some(bits)
    }

    /// Whether `v`, of this kind, is one of the types in `bits`.
    pub fn fits(self, v: &str, bits: u8) -> bool {
        let want = match self {
            Kind::String => STRING,
            Kind::Boolean => BOOLEAN,
            Kind::Array => ARRAY,
            Kind::Object => OBJECT,
            Kind::Null => NULL,
            Kind::Number if bits & NUMBER != 0 => NUMBER,
            Kind::Number => INTEGER * u8::from(is_integer(v)),
        };
        bits & want != 0
    }
}

/// A JSON number that is an integer (`1.0` and `1e2` are, as a parsed value's are).
fn is_integer(number: &str) -> bool {
    !number.contains(['.', 'e', 'E']) || number.parse::<f64>().is_ok_and(|f| f.fract() == 0.0)
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
    /// A GraphQL variable.
    Variable,
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

/// Operations, and the GraphQL schema they come from (a GraphQL API's).
pub(crate) type Operations = (Vec<Operation>, Option<apollo_compiler::Schema>);

/// The API's tools, or every problem (document path below `mcp`, message).
pub fn build(spec: &McpSpec, api: &ApiSpec) -> Result<Vec<ToolDef>, Vec<(String, String)>> {
    let (ops, schema) = operations_of(spec, api)?;
    let mut problems = Vec::new();
    let chosen: Vec<(&Operation, Option<&McpToolSpec>)> = match &spec.tools {
        None => ops.iter().map(|o| (o, None)).collect(),
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match ops.iter().find(|o| names(o, &t.operation)) {
                Some(o) => Some((o, Some(t))),
                None => {
                    let msg = format!("the API has no operation `{}`", t.operation);
                    problems.push((format!(".tools[{i}].operation"), msg));
                    None
                }
            })
            .collect(),
    };
    let mut tools: Vec<ToolDef> = Vec::with_capacity(chosen.len());
    for (op, edit) in chosen {
        let name = edit
            .and_then(|e| e.name.clone())
            .unwrap_or_else(|| default_name(op));
        if !valid_name(&name) {
            let msg = format!("tool name `{name}`: 1 to {MAX_TOOL_NAME} of A-Z a-z 0-9 _ - .");
            problems.push((".tools".into(), msg));
        } else if tools.iter().any(|t| t.tool.name == name) {
            problems.push((".tools".into(), format!("two tools are named `{name}`")));
        } else if let Some(problem) = bad_selection(schema.as_ref(), op, edit) {
            problems.push((".tools".into(), problem));
        } else {
            match tool(op, name, edit) {
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

/// A publisher's `selection` that is no valid document for its GraphQL field, or is
/// given for a tool that is not one.
fn bad_selection(
    schema: Option<&apollo_compiler::Schema>,
    op: &Operation,
    edit: Option<&McpToolSpec>,
) -> Option<String> {
    let selection = edit?.selection.as_deref()?;
    let (Some(schema), Some(call)) = (schema, &op.graphql) else {
        return Some(format!(
            "`{}`: a selection is for a GraphQL API's tools",
            edit?.operation
        ));
    };
    graphql::check_selection(schema, call, selection)
        .err()
        .map(|e| format!("`{}`: {e}", edit.map_or("", |t| &t.operation)))
}

/// The operations tools may be made of: the section's OpenAPI document's, else a GraphQL
/// API's root fields (with its schema, which checks a publisher's selections), else the
/// API's resources.
pub(crate) fn operations_of(
    spec: &McpSpec,
    api: &ApiSpec,
) -> Result<Operations, Vec<(String, String)>> {
    match (&spec.openapi, &api.graphql) {
        (Some(text), _) => openapi::operations(text)
            .map(|ops| (ops, None))
            .map_err(|ps| ps.into_iter().map(|p| (".openapi".into(), p)).collect()),
        (None, Some(g)) => graphql::operations(&g.schema)
            .map(|(ops, schema)| (ops, Some(schema)))
            .map_err(|e| vec![(String::new(), e)]),
        (None, None) => Ok((from_resources(api), None)),
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
                graphql: None,
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
    edit: Option<&McpToolSpec>,
) -> Result<ToolDef, String> {
    let description = edit.and_then(|e| e.description.as_deref());
    let plan = plan(op, edit.and_then(|e| e.selection.as_deref()))?;
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
    // A GraphQL query reads; a mutation may do anything.
    let read_only = match &op.graphql {
        Some(g) => g.kind == "query",
        None => matches!(op.method, Method::GET | Method::HEAD | Method::OPTIONS),
    };
    let idempotent = read_only || matches!(op.method, Method::PUT | Method::DELETE);
    tool.annotations = Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(op.method == Method::DELETE)
            .idempotent(idempotent),
    );
    Ok(ToolDef {
        tool,
        plan,
        scopes: edit.map(|e| e.scopes.clone().into()).unwrap_or_default(),
        throttling: edit.and_then(|e| e.throttling.as_deref().map(Box::from)),
    })
}

/// The operation's summary and description, or its method and path.
pub(crate) fn describe(op: &Operation) -> String {
    match (&op.summary, &op.description) {
        (Some(s), Some(d)) => format!("{s}\n\n{d}"),
        (Some(t), None) | (None, Some(t)) => t.clone(),
        (None, None) => format!("{} {}", op.method, op.path),
    }
}

fn plan(op: &Operation, selection: Option<&str>) -> Result<CallPlan, String> {
    let at = || format!("{} {}", op.method, op.path);
    let mut args: Vec<Arg> = Vec::with_capacity(op.params.len() + 1);
    for p in &op.params {
        let place = match p.location {
            Location::Path => Place::Path,
            Location::Query => Place::Query,
            Location::Variable => Place::Variable,
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
        let schema = with_description(&p.schema, p.description.as_deref());
        args.push(Arg::new(p.name.clone(), place, p.required, schema));
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
        let place = Place::Body { content_type, json };
        args.push(Arg::new(name.into(), place, b.required, schema));
    }
    let path = pieces(&op.path, &mut args);
    let bodiless =
        op.graphql.is_none() && !args.iter().any(|a| matches!(a.place, Place::Body { .. }));
    Ok(CallPlan {
        method: op.method.clone(),
        path_len: path
            .iter()
            .map(|p| match p {
                Piece::Literal(s) => s.len(),
                Piece::Arg(_) => 0,
            })
            .sum(),
        path,
        keys: args
            .iter()
            .map(|a| Expected::owned(a.name.clone()))
            .collect(),
        args,
        graphql: op.graphql.as_ref().map(|g| g.document(selection)),
        bodiless,
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
                let schema = serde_json::json!({"type": "string"});
                args.push(Arg::new(name.to_owned(), Place::Path, true, schema));
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
