//! A tool call's arguments checked against the tool's input schema (the subset every
//! tool's schema is made of: known names, required ones present, each value's JSON
//! type and `enum`) and turned into the operation's HTTP request: the path with its
//! parameters filled in and percent-encoded, the query, header parameters and the body.

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use rmcp::model::JsonObject;
use serde_json::Value;

use crate::tools::{Arg, CallPlan, Piece, Place};

/// Everything but RFC 3986's unreserved characters is encoded, in a path segment as in
/// a query component: a value never adds a `/`, `?`, `&` or `=` of its own.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The HTTP request a call becomes.
#[derive(Debug)]
pub struct HttpCall {
    /// The upstream path below the API (`/pets/42`).
    pub path: String,
    pub query: Option<String>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body and its media type.
    pub body: Option<(HeaderValue, Bytes)>,
}

/// The request for `args`, or why they do not fit the tool (an `Invalid params`).
pub fn request(plan: &CallPlan, args: Option<&JsonObject>) -> Result<HttpCall, String> {
    let empty = JsonObject::new();
    let args = args.unwrap_or(&empty);
    if let Some(unknown) = args
        .keys()
        .find(|k| !plan.args.iter().any(|a| &a.name == *k))
    {
        return Err(format!("unknown argument `{unknown}`"));
    }
    let mut values: Vec<Option<&Value>> = Vec::with_capacity(plan.args.len());
    for a in &plan.args {
        let v = args.get(&a.name).filter(|v| !v.is_null());
        match v {
            None if a.required => return Err(format!("argument `{}` is required", a.name)),
            Some(v) => check(a, v)?,
            None => {}
        }
        values.push(v);
    }
    let mut call = HttpCall {
        path: String::new(),
        query: None,
        headers: Vec::new(),
        body: None,
    };
    for piece in &plan.path {
        match piece {
            Piece::Literal(s) => call.path.push_str(s),
            Piece::Arg(i) => {
                let (a, v) = (&plan.args[*i], values[*i]);
                call.path.push_str(&segment(a, v)?);
            }
        }
    }
    for (a, v) in plan.args.iter().zip(&values) {
        if let Some(v) = v {
            place(a, v, &mut call)?;
        }
    }
    if let Some(document) = &plan.graphql {
        let variables: JsonObject = plan
            .args
            .iter()
            .zip(values)
            .filter_map(|(a, v)| Some((a.name.clone(), v?.clone())))
            .collect();
        let body = serde_json::json!({"query": document, "variables": variables});
        let json = HeaderValue::from_static("application/json");
        call.body = Some((json, Bytes::from(body.to_string())));
    }
    Ok(call)
}

/// One path parameter's encoded value (a scalar, neither empty nor a dot segment).
fn segment(a: &Arg, v: Option<&Value>) -> Result<String, String> {
    let text = v
        .and_then(scalar)
        .ok_or_else(|| format!("argument `{}` must be a string, number or boolean", a.name))?;
    if text.is_empty() || text == "." || text == ".." {
        return Err(format!("argument `{}` may not be `{text}`", a.name));
    }
    Ok(utf8_percent_encode(&text, COMPONENT).to_string())
}

fn place(a: &Arg, v: &Value, call: &mut HttpCall) -> Result<(), String> {
    match &a.place {
        Place::Path | Place::Variable => {}
        Place::Query => {
            let q = call.query.get_or_insert_with(String::new);
            let items: &[Value] = match v {
                Value::Array(items) => items,
                one => std::slice::from_ref(one),
            };
            for item in items {
                let text = scalar(item).unwrap_or_else(|| item.to_string());
                if !q.is_empty() {
                    q.push('&');
                }
                q.extend(utf8_percent_encode(&a.name, COMPONENT));
                q.push('=');
                q.extend(utf8_percent_encode(&text, COMPONENT));
            }
        }
        Place::Header(name) => {
            let text = scalar(v).unwrap_or_else(|| v.to_string());
            let value = HeaderValue::from_str(&text)
                .map_err(|_| format!("argument `{}` is not a valid header value", a.name))?;
            call.headers.push((name.clone(), value));
        }
        Place::Body { content_type, json } => {
            let bytes = match (json, v) {
                (true, v) => Bytes::from(v.to_string()),
                (false, Value::String(s)) => Bytes::from(s.clone()),
                (false, _) => return Err(format!("argument `{}` must be a string", a.name)),
            };
            call.body = Some((content_type.clone(), bytes));
        }
    }
    Ok(())
}

/// A string, number or boolean as text.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The value's JSON type and `enum` against the argument's schema.
fn check(a: &Arg, v: &Value) -> Result<(), String> {
    let types: Vec<&str> = match a.schema.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| is_type(v, t)) {
        return Err(format!(
            "argument `{}` must be of type {}",
            a.name,
            types.join(" or ")
        ));
    }
    if let Some(Value::Array(allowed)) = a.schema.get("enum") {
        if !allowed.contains(v) {
            return Err(format!(
                "argument `{}` is not one of its allowed values",
                a.name
            ));
        }
    }
    Ok(())
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}
