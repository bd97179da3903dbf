//! OpenAPI 3 / JSON Schema from the type model: typed numbers, booleans and dates,
//! arrays wherever an element repeats, `oneOf` for choices, `allOf` for extensions,
//! `required` from `minOccurs`, enumerations and length facets. Named complex types (and
//! global elements' anonymous types) become `components/schemas` entries, so recursive
//! types are `$ref` cycles.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::wsdl::{Message, Port};
use crate::xml::QName;
use crate::xsd::model::*;

/// Builds schemas into one `components/schemas` map.
#[derive(Default)]
pub struct SchemaBuilder {
    components: Map<String, Value>,
    names: HashMap<ComplexId, String>,
}

impl SchemaBuilder {
    pub fn components(self) -> Map<String, Value> {
        self.components
    }

    /// The schema of a message's JSON document (see [`crate::write::write_body`]).
    pub fn message(&mut self, model: &TypeModel, message: &Message) -> Value {
        match message.parts.as_slice() {
            [] => json!({"type": "object", "additionalProperties": false}),
            [part] => self.element(model, &part.element),
            parts => {
                let props: Map<String, Value> = parts
                    .iter()
                    .map(|p| (p.name.clone(), self.element(model, &p.element)))
                    .collect();
                // A repeated part name (rpc/literal WSDLs have them) is one property.
                let mut required: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
                required.sort_unstable();
                required.dedup();
                json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
            }
        }
    }

    fn element(&mut self, model: &TypeModel, e: &Element) -> Value {
        let mut s = match &e.ty {
            Ty::Simple(t) => simple(t),
            Ty::Any => {
                json!({"type": "string", "description": "untyped (xs:anyType): carried as text"})
            }
            Ty::Complex(id) => self.complex_ref(model, *id),
        };
        if e.nillable {
            s = nullable(s);
        }
        s
    }

    fn field(&mut self, model: &TypeModel, f: &Field) -> Value {
        let item = self.element(model, &f.element);
        if !f.array {
            return item;
        }
        let mut arr = json!({"type": "array", "items": item});
        if f.element.occurs.min > 1 {
            arr["minItems"] = json!(f.element.occurs.min);
        }
        if let Some(max) = f.element.occurs.max.filter(|m| *m > 1) {
            arr["maxItems"] = json!(max);
        }
        arr
    }

    /// A `$ref` for named types (built once), the schema inline for anonymous ones.
    fn complex_ref(&mut self, model: &TypeModel, id: ComplexId) -> Value {
        let ct = model.get(id);
        let Some(q) = ct.name.as_ref().or(ct.element_name.as_ref()) else {
            return self.complex(model, id);
        };
        if let Some(name) = self.names.get(&id) {
            return json!({"$ref": format!("#/components/schemas/{name}")});
        }
        let name = self.unique_name(q);
        self.names.insert(id, name.clone());
        // Reserve the slot before building, so recursion finds the name.
        self.components.insert(name.clone(), Value::Null);
        let schema = self.complex(model, id);
        self.components.insert(name.clone(), schema);
        json!({"$ref": format!("#/components/schemas/{name}")})
    }

    fn unique_name(&self, q: &QName) -> String {
        let base: String = q
            .local
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = base.clone();
        let mut n = 2;
        while self.components.contains_key(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    fn complex(&mut self, model: &TypeModel, id: ComplexId) -> Value {
        let ct = model.get(id);
        let base_len = ct.base.map_or(0, |b| model.fields(b).len());
        let own = model
            .fields(id)
            .get(base_len..)
            .unwrap_or_default()
            .to_vec();
        let mut props = Map::new();
        let mut required = Vec::new();
        for a in &ct.attributes {
            let mut s = simple(&a.ty);
            s["xml"] = json!({"attribute": true, "name": a.name.local});
            props.insert(a.key.clone(), s);
            if a.required {
                required.push(a.key.clone());
            }
        }
        if let Some(t) = &ct.text {
            props.insert(TEXT_KEY.into(), simple(t));
        }
        for f in &own {
            let s = self.field(model, f);
            props.insert(f.key.clone(), s);
            if f.required {
                required.push(f.key.clone());
            }
        }
        let mut obj = json!({"type": "object", "properties": props, "additionalProperties": false});
        if !required.is_empty() {
            obj["required"] = json!(required);
        }
        let choices: Vec<Value> = ct.content.iter().flat_map(choice_constraints).collect();
        match choices.len() {
            0 => {}
            1 => {
                if let Some(c) = choices.into_iter().next() {
                    obj["oneOf"] = c;
                }
            }
            _ => {
                obj["allOf"] =
                    Value::Array(choices.into_iter().map(|c| json!({"oneOf": c})).collect());
            }
        }
        match ct.base {
            Some(b) => {
                // An extension: the base's properties plus these; additionalProperties
                // cannot be closed per part under allOf, so it is left open here.
                obj.as_object_mut()
                    .map(|o| o.remove("additionalProperties"));
                let base = self.complex_ref(model, b);
                json!({"allOf": [base, obj]})
            }
            None => obj,
        }
    }
}

/// `oneOf` lists, one per required choice, each branch naming what it requires.
fn choice_constraints(g: &Group) -> Vec<Value> {
    let mut out = Vec::new();
    collect_choices(g, true, &mut out);
    out
}

fn collect_choices(g: &Group, required: bool, out: &mut Vec<Value>) {
    let required = required && g.occurs.min >= 1 && !g.occurs.repeats();
    if g.kind == GroupKind::Choice && required {
        let branches: Vec<Vec<String>> = g.items.iter().map(branch_required).collect();
        if branches.iter().all(|b| !b.is_empty()) {
            out.push(Value::Array(
                branches
                    .into_iter()
                    .map(|b| json!({"required": b}))
                    .collect(),
            ));
        }
        return;
    }
    for item in &g.items {
        if let Particle::Group(inner) = item {
            collect_choices(inner, required && g.kind != GroupKind::Choice, out);
        }
    }
}

fn branch_required(p: &Particle) -> Vec<String> {
    match p {
        Particle::Element(e) if e.occurs.min >= 1 => vec![e.name.local.clone()],
        Particle::Group(g) if g.occurs.min >= 1 && g.kind != GroupKind::Choice => {
            g.items.iter().flat_map(branch_required).collect()
        }
        _ => Vec::new(),
    }
}

fn nullable(mut s: Value) -> Value {
    if s.get("$ref").is_some() {
        return json!({"allOf": [s], "nullable": true});
    }
    s["nullable"] = json!(true);
    s
}

/// The schema of a simple type.
pub fn simple(t: &SimpleType) -> Value {
    if t.list {
        let item = SimpleType {
            list: false,
            ..t.clone()
        };
        return json!({"type": "array", "items": simple(&item), "xml": {"list": true}});
    }
    let mut s = match t.builtin {
        Builtin::String => json!({"type": "string"}),
        Builtin::Boolean => json!({"type": "boolean"}),
        Builtin::Decimal => json!({"type": "number"}),
        Builtin::Float => json!({"type": "number", "format": "float"}),
        Builtin::Double => json!({"type": "number", "format": "double"}),
        Builtin::Integer { min, max, format } => {
            let mut s = json!({"type": "integer"});
            if let Some(f) = format {
                s["format"] = json!(f);
            }
            if min > i128::from(i64::MIN) {
                s["minimum"] = json!(min as i64);
            }
            if max < i128::from(i64::MAX) {
                s["maximum"] = json!(max as i64);
            }
            s
        }
        Builtin::Date => json!({"type": "string", "format": "date"}),
        Builtin::DateTime => json!({"type": "string", "format": "date-time"}),
        Builtin::Time => json!({"type": "string", "format": "time"}),
        Builtin::Duration => json!({"type": "string", "format": "duration"}),
        Builtin::Base64Binary => json!({"type": "string", "format": "byte"}),
        Builtin::HexBinary => json!({"type": "string", "pattern": "^([0-9a-fA-F]{2})*$"}),
        Builtin::AnyUri => json!({"type": "string", "format": "uri"}),
    };
    if !t.enumeration.is_empty() {
        s["enum"] = json!(t.enumeration);
    }
    if let Some(n) = t.min_length {
        s["minLength"] = json!(n);
    }
    if let Some(n) = t.max_length {
        s["maxLength"] = json!(n);
    }
    if let Some(p) = &t.pattern {
        s["pattern"] = json!(format!("^(?:{p})$"));
    }
    for (key, v) in [("minimum", &t.min_inclusive), ("maximum", &t.max_inclusive)] {
        if let Some(n) = v.as_deref().and_then(|v| v.parse::<f64>().ok()) {
            s[key] = json!(n);
        }
    }
    s
}

/// An OpenAPI 3.0 document for a SOAP-to-REST API over `port`: one `POST /{operation}`
/// per operation (request and response schemas from the XSD, the error shape for
/// faults).
pub fn openapi(model: &TypeModel, port: &Port, title: &str, version: &str) -> Value {
    let mut b = SchemaBuilder::default();
    let mut paths = Map::new();
    for op in &port.operations {
        let request = b.message(model, &op.input);
        let mut responses = Map::new();
        match &op.output {
            Some(out) => {
                let s = b.message(model, out);
                responses.insert("200".into(), json!({"description": "the operation's response", "content": {"application/json": {"schema": s}}}));
            }
            None => {
                responses.insert(
                    "202".into(),
                    json!({"description": "one-way operation: accepted"}),
                );
            }
        }
        responses.insert("default".into(), json!({"description": "a SOAP Fault or a gateway error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}));
        paths.insert(
            format!("/{}", op.name),
            json!({"post": {
                "operationId": op.name,
                "summary": format!("SOAP operation {} (soapAction {:?})", op.name, op.soap_action),
                "requestBody": {"required": true, "content": {"application/json": {"schema": request}}},
                "responses": responses,
            }}),
        );
    }
    let mut components = b.components();
    components.insert(
        "Error".into(),
        json!({"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}, "request_id": {"type": "string"}}}),
    );
    json!({
        "openapi": "3.0.3",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {"schemas": components},
    })
}
