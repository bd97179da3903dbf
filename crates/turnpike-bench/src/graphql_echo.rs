//! `turnpike echo --graphql`: a GraphQL back end for the bench kit. With a
//! `query-number: N` header (1-3) it answers WSO2's canned Star Wars response N and
//! echoes the request's Content-Type, as the seed's Netty back end does. Otherwise it
//! parses the request (POST JSON, POST `application/graphql`, GET `?query=`), validates
//! the query against the schema and answers `{"data": ...}` shaped to the query:
//! deterministic values per scalar type, lists of `first` items (3 when absent), the
//! first possible type of an interface or union that the query has a fragment for.
//! Invalid queries get `{"errors": [...]}`.

use apollo_compiler::executable::{Field, Selection, SelectionSet};
use apollo_compiler::schema::{ExtendedType, Type};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Name, Schema};
use bytes::Bytes;
use serde_json::{Map, Value};

/// The bundled Star Wars schema (WSO2's GraphQL performance test).
pub const STARWARS_SCHEMA: &str =
    include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");
/// WSO2's canned responses for its queries 1-3.
pub const CANNED: [&str; 3] = [
    include_str!("../../../bench/graphql/starwars/query1_response.json"),
    include_str!("../../../bench/graphql/starwars/query2_response.json"),
    include_str!("../../../bench/graphql/starwars/query3_response.json"),
];
/// WSO2's three queries, as its load test sends them (one line each).
pub const QUERIES: [&str; 3] = [
    include_str!("../../../bench/graphql/starwars/query1.oneline.graphql"),
    include_str!("../../../bench/graphql/starwars/query2.oneline.graphql"),
    include_str!("../../../bench/graphql/starwars/query3.oneline.graphql"),
];

/// The body WSO2's load test sends for query `n` (1-3):
/// `{"operationName":null,"query":"<one-line query>"}`.
pub fn request_body(n: u8) -> Bytes {
    let query = QUERIES[usize::from(n.clamp(1, 3)) - 1];
    Bytes::from(serde_json::json!({ "operationName": null, "query": query }).to_string())
}

/// Most values generated for one response (lists stop growing past it).
const MAX_NODES: usize = 100_000;

/// A schema to answer queries against, validated once.
pub struct GraphqlBackend {
    schema: Valid<Schema>,
    canned: [Bytes; 3],
}

impl std::fmt::Debug for GraphqlBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphqlBackend").finish_non_exhaustive()
    }
}

impl GraphqlBackend {
    /// The bundled Star Wars schema, or `sdl`.
    pub fn new(sdl: Option<&str>) -> Result<Self, String> {
        let schema = Schema::parse_and_validate(sdl.unwrap_or(STARWARS_SCHEMA), "schema.graphql")
            .map_err(|e| format!("invalid schema: {}", e.errors))?;
        Ok(GraphqlBackend {
            schema,
            canned: CANNED.map(|s| Bytes::from_static(s.as_bytes())),
        })
    }

    /// The canned response for a `query-number` header value, if it names one.
    pub fn canned(&self, query_number: &[u8]) -> Option<Bytes> {
        let n: usize = std::str::from_utf8(query_number)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        self.canned.get(n.checked_sub(1)?).cloned()
    }

    /// Answers one request: `method`, `Content-Type`, query string, body.
    pub fn answer(
        &self,
        method: &str,
        content_type: Option<&str>,
        qs: Option<&str>,
        body: &[u8],
    ) -> Bytes {
        let value = match request(method, content_type, qs, body) {
            Ok((query, op, vars)) => self.execute(&query, op.as_deref(), &vars),
            Err(msg) => errors(&msg),
        };
        Bytes::from(value.to_string())
    }

    fn execute(&self, query: &str, op: Option<&str>, vars: &Map<String, Value>) -> Value {
        let doc = match ExecutableDocument::parse_and_validate(&self.schema, query, "query.graphql")
        {
            Ok(d) => d,
            Err(e) => {
                let list: Vec<Value> = e
                    .errors
                    .iter()
                    .map(|d| serde_json::to_value(d.to_json()).unwrap_or(Value::Null))
                    .collect();
                return serde_json::json!({ "errors": list });
            }
        };
        let Ok(operation) = doc.operations.get(op) else {
            return errors("operationName names no operation of the document");
        };
        let mut gen = Gen {
            schema: &self.schema,
            doc: &doc,
            vars,
            nodes: 0,
        };
        let data = gen.object(&operation.selection_set, &operation.selection_set.ty);
        serde_json::json!({ "data": data })
    }
}

fn errors(message: &str) -> Value {
    serde_json::json!({ "errors": [{ "message": message }] })
}

type Parsed = (String, Option<String>, Map<String, Value>);

fn request(
    method: &str,
    content_type: Option<&str>,
    qs: Option<&str>,
    body: &[u8],
) -> Result<Parsed, String> {
    if method == "GET" {
        let mut query = None;
        let mut op = None;
        let mut vars = Map::new();
        for (k, v) in form_urlencoded::parse(qs.unwrap_or_default().as_bytes()) {
            match k.as_ref() {
                "query" => query = Some(v.into_owned()),
                "operationName" if !v.is_empty() => op = Some(v.into_owned()),
                "variables" if !v.is_empty() => {
                    vars = serde_json::from_str(&v).map_err(|e| format!("variables: {e}"))?
                }
                _ => {}
            }
        }
        return Ok((query.ok_or("no query")?, op, vars));
    }
    if content_type.is_some_and(|c| c.starts_with("application/graphql")) {
        let q = std::str::from_utf8(body).map_err(|_| "query is not UTF-8")?;
        return Ok((q.to_owned(), None, Map::new()));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("body: {e}"))?;
    let query = v["query"].as_str().ok_or("no query")?.to_owned();
    let op = v["operationName"].as_str().map(str::to_owned);
    let vars = v["variables"].as_object().cloned().unwrap_or_default();
    Ok((query, op, vars))
}

struct Gen<'a> {
    schema: &'a Schema,
    doc: &'a ExecutableDocument,
    vars: &'a Map<String, Value>,
    nodes: usize,
}

impl<'a> Gen<'a> {
    /// An object of concrete type `ty` for `set`.
    fn object(&mut self, set: &'a SelectionSet, ty: &Name) -> Value {
        let mut out = Map::new();
        let mut fields = Vec::new();
        self.collect(set, ty, &mut fields, 0);
        for f in fields {
            let key = f.response_key().to_string();
            if out.contains_key(&key) {
                continue;
            }
            self.nodes += 1;
            let v = if f.name == "__typename" {
                Value::String(ty.to_string())
            } else {
                self.value(f, &f.definition.ty, out.len())
            };
            out.insert(key, v);
        }
        Value::Object(out)
    }

    /// The fields of `set` that apply to concrete type `ty`, fragments expanded.
    fn collect(&self, set: &'a SelectionSet, ty: &Name, out: &mut Vec<&'a Field>, depth: usize) {
        if depth > 64 {
            return;
        }
        for sel in &set.selections {
            match sel {
                Selection::Field(f) => out.push(f),
                Selection::InlineFragment(i) => {
                    let applies = i
                        .type_condition
                        .as_ref()
                        .is_none_or(|c| c == ty || self.schema.is_subtype(c, ty));
                    if applies {
                        self.collect(&i.selection_set, ty, out, depth + 1);
                    }
                }
                Selection::FragmentSpread(s) => {
                    if let Some(frag) = self.doc.fragments.get(&s.fragment_name) {
                        let c = frag.type_condition();
                        if c == ty || self.schema.is_subtype(c, ty) {
                            self.collect(&frag.selection_set, ty, out, depth + 1);
                        }
                    }
                }
            }
        }
    }

    fn value(&mut self, f: &'a Field, ty: &Type, n: usize) -> Value {
        if ty.is_list() {
            let count = self.list_len(f);
            let item = ty.item_type();
            let mut items = Vec::with_capacity(count);
            for i in 0..count {
                if self.nodes >= MAX_NODES {
                    break;
                }
                self.nodes += 1;
                items.push(self.value(f, item, n + i));
            }
            return Value::Array(items);
        }
        let named = ty.inner_named_type();
        match self.schema.types.get(named) {
            Some(ExtendedType::Object(_)) => self.object(&f.selection_set, named),
            Some(ExtendedType::Interface(_) | ExtendedType::Union(_)) => {
                let concrete = self.pick(&f.selection_set, named);
                self.object(&f.selection_set, &concrete)
            }
            Some(ExtendedType::Enum(e)) => e
                .values
                .keys()
                .nth(n % e.values.len().max(1))
                .map_or(Value::Null, |v| Value::String(v.to_string())),
            _ => scalar(named.as_str(), f.name.as_str(), n),
        }
    }

    /// `first` (literal or variable), else 3; at most 100.
    fn list_len(&self, f: &Field) -> usize {
        use apollo_compiler::ast::Value as V;
        let n = match f.specified_argument_by_name("first").map(|v| v.as_ref()) {
            Some(V::Int(i)) => i.try_to_i32().ok().map(i64::from),
            Some(V::Variable(v)) => self.vars.get(v.as_str()).and_then(Value::as_i64),
            _ => None,
        };
        n.unwrap_or(3).clamp(0, 100) as usize
    }

    /// The concrete type for an abstract one: the first possible type the query has a
    /// fragment for, else the first possible type.
    fn pick(&self, set: &SelectionSet, abstract_ty: &Name) -> Name {
        let possible: Vec<Name> = self
            .schema
            .types
            .iter()
            .filter(|(n, t)| {
                matches!(t, ExtendedType::Object(_)) && self.schema.is_subtype(abstract_ty, n)
            })
            .map(|(n, _)| n.clone())
            .collect();
        let wanted = set.selections.iter().find_map(|s| match s {
            Selection::InlineFragment(i) => {
                i.type_condition.clone().filter(|c| possible.contains(c))
            }
            _ => None,
        });
        wanted
            .or_else(|| possible.first().cloned())
            .unwrap_or_else(|| abstract_ty.clone())
    }
}

fn scalar(ty: &str, field: &str, n: usize) -> Value {
    match ty {
        "ID" => Value::String(format!("{}", 1000 + n)),
        "Int" => Value::from(n as u64 + 1),
        "Float" => Value::from(1.72 + n as f64),
        "Boolean" => Value::Bool(n.is_multiple_of(2)),
        _ => Value::String(format!("{field} {}", n + 1)),
    }
}
