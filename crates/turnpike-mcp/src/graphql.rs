//! A GraphQL API's root fields as operations: one per `Query` and `Mutation` field, its
//! arguments as the tool's arguments (JSON Schema from the GraphQL types: scalars, enums,
//! lists, input objects to [`MAX_INPUT_DEPTH`]), and a document that sends them as
//! variables with a selection set generated to [`SELECTION_DEPTH`] levels (or the
//! publisher's `tools[].selection`). The call is a `POST /` of `{query, variables}`
//! through the API's chain, so the GraphQL policy's depth, complexity and field rules
//! apply to it as to any client's query.

use apollo_compiler::schema::{ExtendedType, FieldDefinition, InputValueDefinition, Type};
use apollo_compiler::{ExecutableDocument, Name, Schema};
use http::Method;
use serde_json::{json, Map, Value};

use crate::openapi::{GraphqlCall, Location, Operation, Param};

/// How deep a generated selection goes below the root field: its own fields (1) and
/// those of the objects it holds (2); deeper objects are left out.
pub const SELECTION_DEPTH: usize = 2;
/// How deep an input object's JSON Schema is spelled out (deeper: any value, `{}`).
pub const MAX_INPUT_DEPTH: usize = 5;
/// Most fields one generated selection holds.
const MAX_SELECTED: usize = 500;

/// The schema's root fields, or why the schema is unusable.
pub fn operations(sdl: &str) -> Result<(Vec<Operation>, Schema), String> {
    let schema = Schema::parse_and_validate(sdl, "schema.graphql")
        .map_err(|e| format!("the GraphQL schema: {}", e.errors))?
        .into_inner();
    let mut ops = Vec::new();
    let roots = [
        ("query", schema.schema_definition.query.clone()),
        ("mutation", schema.schema_definition.mutation.clone()),
    ];
    for (kind, root) in roots {
        let Some(ExtendedType::Object(obj)) = root.and_then(|r| schema.types.get(&r.name)) else {
            continue;
        };
        for field in obj.fields.values() {
            ops.push(operation(&schema, kind, field));
        }
    }
    Ok((ops, schema))
}

/// Whether `selection` (a publisher's) makes a valid document for `call`.
pub fn check_selection(schema: &Schema, call: &GraphqlCall, selection: &str) -> Result<(), String> {
    let valid = schema
        .clone()
        .validate()
        .map_err(|e| e.errors.to_string())?;
    ExecutableDocument::parse_and_validate(&valid, call.document(Some(selection)), "tool.graphql")
        .map(|_| ())
        .map_err(|e| format!("selection: {}", e.errors))
}

fn operation(schema: &Schema, kind: &'static str, field: &FieldDefinition) -> Operation {
    let mut params = Vec::with_capacity(field.arguments.len());
    let (mut vars, mut args) = (Vec::new(), Vec::new());
    for a in &field.arguments {
        params.push(Param {
            name: a.name.to_string(),
            location: Location::Variable,
            required: a.ty.is_non_null() && a.default_value.is_none(),
            description: a.description.as_ref().map(|d| d.to_string()),
            schema: input_schema(schema, &a.ty, 0),
        });
        vars.push(format!("${}: {}", a.name, a.ty));
        args.push(format!("{0}: ${0}", a.name));
    }
    let wrap = |items: Vec<String>| match items.is_empty() {
        true => String::new(),
        false => format!("({})", items.join(", ")),
    };
    let mut budget = MAX_SELECTED;
    let call = GraphqlCall {
        kind,
        field: field.name.to_string(),
        variables: wrap(vars),
        arguments: wrap(args),
        selection: selection(schema, field.ty.inner_named_type(), 1, &mut budget),
    };
    Operation {
        method: Method::POST,
        path: "/".into(),
        operation_id: Some(field.name.to_string()),
        summary: None,
        description: Some(match &field.description {
            Some(d) => d.to_string(),
            None => format!("GraphQL {kind} `{}`", field.name),
        }),
        params,
        body: None,
        graphql: Some(call),
    }
}

/// The selection of a field of type `ty` at `depth` (1: the root field's own fields):
/// every scalar and enum field without required arguments, and, above
/// [`SELECTION_DEPTH`], each such object field with its own selection; `__typename`
/// for abstract types, with an inline fragment per member of a union.
fn selection(schema: &Schema, ty: &Name, depth: usize, budget: &mut usize) -> String {
    let fields = match schema.types.get(ty) {
        Some(ExtendedType::Object(o)) => &o.fields,
        Some(ExtendedType::Interface(i)) => &i.fields,
        Some(ExtendedType::Union(u)) => {
            let mut out = String::from("{ __typename");
            for member in &u.members {
                let inner = selection(schema, &member.name, depth, budget);
                if !inner.is_empty() {
                    out.push_str(&format!(" ... on {} {inner}", member.name));
                }
            }
            out.push_str(" }");
            return out;
        }
        _ => return String::new(),
    };
    let mut out = Vec::new();
    if matches!(schema.types.get(ty), Some(ExtendedType::Interface(_))) {
        out.push("__typename".to_owned());
    }
    for f in fields.values() {
        if *budget == 0
            || f.arguments
                .iter()
                .any(|a| a.ty.is_non_null() && a.default_value.is_none())
        {
            continue;
        }
        let inner = f.ty.inner_named_type();
        let leaf = matches!(
            schema.types.get(inner),
            Some(ExtendedType::Scalar(_) | ExtendedType::Enum(_))
        );
        if leaf {
            *budget -= 1;
            out.push(f.name.to_string());
        } else if depth < SELECTION_DEPTH {
            let sub = selection(schema, inner, depth + 1, budget);
            if !sub.is_empty() {
                *budget = budget.saturating_sub(1);
                out.push(format!("{} {sub}", f.name));
            }
        }
    }
    match out.is_empty() {
        true => String::new(),
        false => format!("{{ {} }}", out.join(" ")),
    }
}

/// The JSON Schema of an input of GraphQL type `ty`.
fn input_schema(schema: &Schema, ty: &Type, depth: usize) -> Value {
    if ty.is_list() {
        return json!({"type": "array", "items": input_schema(schema, ty.item_type(), depth)});
    }
    let named = ty.inner_named_type();
    match named.as_str() {
        "Int" => return json!({"type": "integer"}),
        "Float" => return json!({"type": "number"}),
        "String" => return json!({"type": "string"}),
        "Boolean" => return json!({"type": "boolean"}),
        "ID" => return json!({"type": ["string", "integer"]}),
        _ => {}
    }
    match schema.types.get(named) {
        Some(ExtendedType::Enum(e)) => {
            let values: Vec<Value> = e.values.keys().map(|v| v.as_str().into()).collect();
            json!({"type": "string", "enum": values})
        }
        Some(ExtendedType::InputObject(o)) if depth < MAX_INPUT_DEPTH => {
            object_schema(schema, o.fields.values().map(|f| &***f), depth + 1)
        }
        // Custom scalars, and input objects nested deeper: any value (the back end checks).
        _ => json!({}),
    }
}

fn object_schema<'a>(
    schema: &Schema,
    fields: impl Iterator<Item = &'a InputValueDefinition>,
    depth: usize,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for f in fields {
        let mut s = input_schema(schema, &f.ty, depth);
        if let (Some(d), Value::Object(m)) = (&f.description, &mut s) {
            m.insert("description".into(), d.to_string().into());
        }
        properties.insert(f.name.to_string(), s);
        if f.ty.is_non_null() && f.default_value.is_none() {
            required.push(Value::String(f.name.to_string()));
        }
    }
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDL: &str = "type Query { hero(episode: Episode): Character  version: String }\n\
        type Mutation { review(input: ReviewInput!): Review }\n\
        enum Episode { NEWHOPE JEDI }\n\
        interface Character { id: ID! name: String! friends: [Character] }\n\
        type Human implements Character { id: ID! name: String! friends: [Character] height(unit: String!): Float }\n\
        type Review { stars: Int! commentary: String }\n\
        input ReviewInput { stars: Int! commentary: String tags: [String!] }";

    #[test]
    fn root_fields_become_operations_with_variables_and_a_bounded_selection() {
        let (ops, schema) = operations(SDL).expect("schema");
        let names: Vec<_> = ops
            .iter()
            .filter_map(|o| o.operation_id.as_deref())
            .collect();
        assert_eq!(names, ["hero", "version", "review"]);
        let hero = ops[0].graphql.as_ref().expect("graphql");
        assert_eq!(
            hero.document(None),
            "query($episode: Episode) { hero(episode: $episode) \
             { __typename id name friends { __typename id name } } }"
        );
        assert_eq!(
            ops[0].params[0].schema,
            json!({"type": "string", "enum": ["NEWHOPE", "JEDI"]})
        );
        assert_eq!(
            ops[1].graphql.as_ref().map(|g| g.document(None)).as_deref(),
            Some("query { version  }")
        );
        let review = &ops[2];
        assert!(review.params[0].required);
        assert_eq!(review.params[0].schema["required"], json!(["stars"]));
        assert_eq!(
            review.params[0].schema["properties"]["tags"]["items"]["type"],
            "string"
        );
        assert!(check_selection(&schema, hero, "{ name }").is_ok());
        assert!(check_selection(&schema, hero, "{ nope }").is_err());
    }
}
