//! The operations of an OpenAPI 3 document, as the tools need them: method and path,
//! operationId, summary and description, parameters (path, query, header) and the JSON
//! request body's schema, local `$ref`s resolved inline. Hostile documents meet caps
//! on size, operations, `$ref` depth and schema size; a recursive schema is cut to
//! `{}` (any value) where it refers to itself.

use http::Method;
use serde_json::{Map, Value};

/// Largest OpenAPI document read (bytes of text).
pub const MAX_DOCUMENT_BYTES: usize = 4 << 20;
/// Most operations read from one document.
pub const MAX_OPERATIONS: usize = 1000;
/// Deepest chain of `$ref`s followed inside one schema.
const MAX_REF_DEPTH: usize = 16;
/// Most JSON nodes one tool's resolved schemas may hold.
const MAX_SCHEMA_NODES: usize = 20_000;

/// Where a parameter goes in the HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Path,
    Query,
    Header,
    /// A GraphQL variable (a GraphQL API's root field argument).
    Variable,
}

/// One parameter of an operation.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub location: Location,
    pub required: bool,
    pub description: Option<String>,
    /// The resolved JSON Schema (`{}` when the document gives none).
    pub schema: Value,
}

/// An operation's request body.
#[derive(Debug, Clone)]
pub struct Body {
    pub required: bool,
    pub content_type: String,
    pub schema: Value,
}

/// One operation of the document.
#[derive(Debug, Clone)]
pub struct Operation {
    pub method: Method,
    /// The path template as the document writes it (`/pets/{petId}`).
    pub path: String,
    pub operation_id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    /// A GraphQL API's root field: the document its call sends.
    pub graphql: Option<GraphqlCall>,
}

/// A GraphQL API's root field as an operation's call (`graphql.rs` builds it): its
/// operation type and the document's parts.
#[derive(Debug, Clone)]
pub struct GraphqlCall {
    /// `query` or `mutation`.
    pub kind: &'static str,
    pub field: String,
    /// `($episode: Episode, $review: ReviewInput!)`, or empty.
    pub variables: String,
    /// `(episode: $episode, review: $review)`, or empty.
    pub arguments: String,
    /// `{ id name }`, or empty for a scalar field.
    pub selection: String,
}

impl GraphqlCall {
    /// The document sent, with `selection` (the publisher's) in place of the generated.
    pub fn document(&self, selection: Option<&str>) -> String {
        let sel = selection.unwrap_or(&self.selection);
        format!(
            "{}{} {{ {}{} {sel} }}",
            self.kind, self.variables, self.field, self.arguments
        )
    }
}

const METHODS: [(&str, Method); 7] = [
    ("get", Method::GET),
    ("put", Method::PUT),
    ("post", Method::POST),
    ("delete", Method::DELETE),
    ("patch", Method::PATCH),
    ("head", Method::HEAD),
    ("options", Method::OPTIONS),
];

/// Reads the operations of `text` (YAML or JSON); `Err` lists every problem found.
pub fn operations(text: &str) -> Result<Vec<Operation>, Vec<String>> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(vec![format!(
            "the OpenAPI document is larger than {MAX_DOCUMENT_BYTES} bytes"
        )]);
    }
    let root: Value = serde_yaml::from_str(text)
        .map_err(|e| vec![format!("the OpenAPI document does not parse: {e}")])?;
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        return Err(vec!["the OpenAPI document has no `paths` object".into()]);
    };
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            problems.push(format!("paths.{path} is not an object"));
            continue;
        };
        let shared = item.get("parameters");
        for (key, method) in &METHODS {
            let Some(op) = item.get(*key).and_then(Value::as_object) else {
                continue;
            };
            if out.len() == MAX_OPERATIONS {
                problems.push(format!("more than {MAX_OPERATIONS} operations"));
                return Err(problems);
            }
            let r = Resolver {
                root: &root,
                budget: MAX_SCHEMA_NODES,
                active: Vec::new(),
            };
            match operation(r, path, method.clone(), op, shared) {
                Ok(o) => out.push(o),
                Err(e) => problems.push(format!("paths.{path}.{key}: {e}")),
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn operation<'a>(
    mut r: Resolver<'a>,
    path: &str,
    method: Method,
    op: &'a Map<String, Value>,
    shared: Option<&'a Value>,
) -> Result<Operation, String> {
    let text = |k: &str| op.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut params: Vec<Param> = Vec::new();
    // Operation-level parameters override path-level ones of the same name and place.
    for list in [op.get("parameters"), shared].into_iter().flatten() {
        let Some(list) = list.as_array() else {
            return Err("`parameters` is not a list".into());
        };
        for p in list {
            let p = r.resolve(p, 0)?;
            if let Some(param) = param(&p)? {
                let dup = params
                    .iter()
                    .any(|q| q.name == param.name && q.location == param.location);
                if !dup {
                    params.push(param);
                }
            }
        }
    }
    let body = match op.get("requestBody") {
        None => None,
        Some(b) => body(&r.resolve(b, 0)?),
    };
    Ok(Operation {
        method,
        path: path.to_owned(),
        operation_id: text("operationId"),
        summary: text("summary"),
        description: text("description"),
        params,
        body,
        graphql: None,
    })
}

/// A resolved parameter object; `None` for a cookie parameter (never sent).
fn param(p: &Value) -> Result<Option<Param>, String> {
    let name = p
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a parameter has no `name`")?;
    let location = match p.get("in").and_then(Value::as_str) {
        Some("path") => Location::Path,
        Some("query") => Location::Query,
        Some("header") => Location::Header,
        Some("cookie") => return Ok(None),
        other => return Err(format!("parameter `{name}`: `in` is {other:?}")),
    };
    Ok(Some(Param {
        name: name.to_owned(),
        location,
        required: location == Location::Path
            || p.get("required").and_then(Value::as_bool).unwrap_or(false),
        description: p
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        schema: p
            .get("schema")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    }))
}

/// A resolved request body: its JSON media type first, else the first one given.
fn body(b: &Value) -> Option<Body> {
    let content = b.get("content")?.as_object()?;
    let (content_type, media) = content
        .iter()
        .find(|(k, _)| is_json(k))
        .or_else(|| content.iter().next())?;
    Some(Body {
        required: b.get("required").and_then(Value::as_bool).unwrap_or(false),
        content_type: content_type.clone(),
        schema: media
            .get("schema")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// `application/json` and its `+json` relatives.
pub fn is_json(media_type: &str) -> bool {
    turnpike_policy::http::is_json(media_type.as_bytes())
}

/// Follows local `$ref`s (`#/components/...`) and inlines them, under the caps.
struct Resolver<'a> {
    root: &'a Value,
    /// JSON nodes this operation's schemas may still hold.
    budget: usize,
    /// The `$ref`s being inlined (a cycle stops at the second visit).
    active: Vec<&'a str>,
}

impl<'a> Resolver<'a> {
    fn resolve(&mut self, v: &'a Value, depth: usize) -> Result<Value, String> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or("its schemas are larger than the cap")?;
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    return self.follow(r, depth);
                }
                let mut out = Map::with_capacity(m.len());
                for (k, x) in m {
                    out.insert(k.clone(), self.resolve(x, depth)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(a) => a
                .iter()
                .map(|x| self.resolve(x, depth))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn follow(&mut self, r: &'a str, depth: usize) -> Result<Value, String> {
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(format!(
                "`$ref: {r}`: only references inside the document are read"
            ));
        };
        if depth == MAX_REF_DEPTH || self.active.contains(&r) {
            // A recursive schema: any value where it refers to itself.
            return Ok(Value::Object(Map::new()));
        }
        let target = self
            .root
            .pointer(pointer)
            .ok_or_else(|| format!("`$ref: {r}` names nothing in the document"))?;
        self.active.push(r);
        let out = self.resolve(target, depth + 1);
        self.active.pop();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_parameters_bodies_and_refs() {
        let doc = r##"
openapi: 3.0.3
paths:
  /pets/{petId}:
    parameters:
      - { name: petId, in: path, schema: { type: integer } }
    get:
      operationId: getPet
      summary: One pet
      parameters:
        - { name: verbose, in: query, schema: { type: boolean } }
        - { name: session, in: cookie }
  /pets:
    post:
      operationId: addPet
      requestBody:
        required: true
        content:
          application/json:
            schema: { $ref: '#/components/schemas/Pet' }
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: { type: string }
        parent: { $ref: '#/components/schemas/Pet' }
"##;
        let ops = operations(doc).expect("parses");
        let get = ops.iter().find(|o| o.method == Method::GET).expect("get");
        assert_eq!(get.operation_id.as_deref(), Some("getPet"));
        let names: Vec<_> = get.params.iter().map(|p| (&*p.name, p.location)).collect();
        assert_eq!(
            names,
            [("verbose", Location::Query), ("petId", Location::Path)]
        );
        let post = ops.iter().find(|o| o.method == Method::POST).expect("post");
        let body = post.body.as_ref().expect("body");
        assert!(body.required);
        assert_eq!(body.schema["properties"]["name"]["type"], "string");
        // The recursive `parent` is cut where Pet refers to itself: any value.
        assert_eq!(body.schema["properties"]["parent"], serde_json::json!({}));
    }

    #[test]
    fn names_every_problem() {
        let doc = r##"{"paths": {"/a": {"get": {"parameters": [{"$ref": "#/nope"}]},
            "post": {"requestBody": {"$ref": "other.yaml#/x"}}}}}"##;
        let problems = operations(doc).expect_err("bad refs");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(operations("paths: 3").is_err());
        assert!(operations(&"#".repeat(MAX_DOCUMENT_BYTES + 1)).is_err());
    }
}
