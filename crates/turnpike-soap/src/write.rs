//! JSON -> SOAP: writes a message's body elements from a JSON document, walking the
//! type model in schema order. Every value is XML-escaped; values are checked against
//! their simple types (numbers in range, booleans, enumerations) and objects against
//! their fields (required present, no unknown property), so a bad request is a 400 with
//! the JSON path, never a malformed envelope upstream.

use serde_json::{Map, Value};

use crate::error::MapError;
use crate::wsdl::{Message, Operation, SoapVersion, Style};
use crate::xml::{escape_into, QName, XSI_NS};
use crate::xsd::model::*;

/// Writes a whole request envelope for `op` from `json`.
pub fn request_envelope(
    model: &TypeModel,
    op: &Operation,
    version: SoapVersion,
    json: &Value,
) -> Result<String, MapError> {
    let mut out = String::with_capacity(256);
    out.push_str("<soapenv:Envelope xmlns:soapenv=\"");
    out.push_str(version.envelope_ns());
    out.push_str("\"><soapenv:Body>");
    write_body(model, op, &op.input, json, &mut out)?;
    out.push_str("</soapenv:Body></soapenv:Envelope>");
    Ok(out)
}

/// Writes the body content of `message` (of `op`) from `json`: the single part's
/// content, or an object keyed by part name when there are several; rpc style wraps
/// the parts in the operation's element.
pub fn write_body(
    model: &TypeModel,
    op: &Operation,
    message: &Message,
    json: &Value,
    out: &mut String,
) -> Result<(), MapError> {
    let mut w = Writer { model, out };
    match op.style {
        Style::Document => w.parts(message, json, None),
        Style::Rpc => {
            let ns = op.rpc_namespace.as_deref().filter(|n| !n.is_empty());
            w.out.push('<');
            w.out.push_str(&op.name);
            if let Some(ns) = ns {
                w.attr("xmlns", ns);
            }
            w.out.push('>');
            w.parts(message, json, ns)?;
            w.out.push_str("</");
            w.out.push_str(&op.name);
            w.out.push('>');
            Ok(())
        }
    }
}

struct Writer<'m, 'o> {
    model: &'m TypeModel,
    out: &'o mut String,
}

impl Writer<'_, '_> {
    fn parts(&mut self, message: &Message, json: &Value, ns: Option<&str>) -> Result<(), MapError> {
        match message.parts.as_slice() {
            [] => Ok(()),
            [part] => self.element(&part.element, json, "", ns),
            parts => {
                let obj = json.as_object().ok_or_else(|| {
                    MapError::invalid("", "expected an object with one property per message part")
                })?;
                for key in obj.keys() {
                    if !parts.iter().any(|p| &p.name == key) {
                        return Err(MapError::invalid(key, "not a part of this message"));
                    }
                }
                for part in parts {
                    match obj.get(&part.name) {
                        Some(v) => self.element(&part.element, v, &part.name, ns)?,
                        None => return Err(MapError::invalid(&part.name, "required part missing")),
                    }
                }
                Ok(())
            }
        }
    }

    fn attr(&mut self, name: &str, value: &str) {
        self.out.push(' ');
        self.out.push_str(name);
        self.out.push_str("=\"");
        escape_into(self.out, value);
        self.out.push('"');
    }

    /// Opens `<local`, declaring the default namespace when it changes.
    fn open(&mut self, name: &QName, parent_ns: Option<&str>) {
        self.out.push('<');
        self.out.push_str(&name.local);
        if name.ns.as_deref() != parent_ns {
            self.attr("xmlns", name.ns.as_deref().unwrap_or(""));
        }
    }

    fn close(&mut self, name: &QName) {
        self.out.push_str("</");
        self.out.push_str(&name.local);
        self.out.push('>');
    }

    fn element(
        &mut self,
        e: &Element,
        v: &Value,
        path: &str,
        parent_ns: Option<&str>,
    ) -> Result<(), MapError> {
        if v.is_null() {
            if !e.nillable {
                return Err(MapError::invalid(
                    path,
                    "null is not allowed here (element is not nillable)",
                ));
            }
            self.open(&e.name, parent_ns);
            self.attr("xmlns:xsi", XSI_NS);
            self.out.push_str(" xsi:nil=\"true\"/>");
            return Ok(());
        }
        match &e.ty {
            Ty::Simple(s) => {
                self.open(&e.name, parent_ns);
                self.out.push('>');
                scalar_text(s, v, path, self.out)?;
                self.close(&e.name);
            }
            Ty::Any => {
                self.open(&e.name, parent_ns);
                self.out.push('>');
                match v {
                    Value::String(s) => escape_into(self.out, s),
                    Value::Number(_) | Value::Bool(_) => self.out.push_str(&v.to_string()),
                    _ => {
                        return Err(MapError::invalid(
                            path,
                            "expected a string (untyped element)",
                        ))
                    }
                }
                self.close(&e.name);
            }
            Ty::Complex(id) => {
                let obj = v
                    .as_object()
                    .ok_or_else(|| MapError::invalid(path, "expected an object"))?;
                self.open(&e.name, parent_ns);
                self.complex(*id, obj, path, e.name.ns.as_deref())?;
                self.close(&e.name);
            }
        }
        Ok(())
    }

    /// Attributes, `>`, then the content of complex type `id`.
    fn complex(
        &mut self,
        id: ComplexId,
        obj: &Map<String, Value>,
        path: &str,
        ns: Option<&str>,
    ) -> Result<(), MapError> {
        let model = self.model;
        let ct = model.get(id);
        let fields = model.fields(id);
        let attrs = attributes(model, id);
        for key in obj.keys() {
            let known = fields.iter().any(|f| &f.key == key)
                || attrs.iter().any(|a| &a.key == key)
                || (ct.text.is_some() && key == TEXT_KEY);
            if !known {
                return Err(MapError::invalid(&join(path, key), "unknown property"));
            }
        }
        for f in fields.iter().filter(|f| f.required) {
            if !obj.contains_key(&f.key) {
                return Err(MapError::invalid(
                    &join(path, &f.key),
                    "required property missing",
                ));
            }
        }
        for (i, a) in attrs.iter().enumerate() {
            match obj.get(&a.key) {
                Some(v) => {
                    let mut text = String::new();
                    scalar_text(&a.ty, v, &join(path, &a.key), &mut text)?;
                    self.out.push(' ');
                    if let Some(ans) = &a.name.ns {
                        self.out.push_str(&format!("xmlns:a{i}=\""));
                        escape_into(self.out, ans);
                        self.out.push_str(&format!("\" a{i}:"));
                    }
                    self.out.push_str(&a.name.local);
                    self.out.push_str("=\"");
                    self.out.push_str(&text);
                    self.out.push('"');
                }
                None if a.required => {
                    return Err(MapError::invalid(
                        &join(path, &a.key),
                        "required attribute missing",
                    ))
                }
                None => {}
            }
        }
        self.out.push('>');
        if let Some(text) = &ct.text {
            if let Some(v) = obj.get(TEXT_KEY) {
                scalar_text(text, v, &join(path, TEXT_KEY), self.out)?;
            }
        }
        let mut written: Vec<&str> = Vec::new();
        self.content(id, fields, obj, path, ns, &mut written, 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn content<'j>(
        &mut self,
        id: ComplexId,
        fields: &[Field],
        obj: &'j Map<String, Value>,
        path: &str,
        ns: Option<&str>,
        written: &mut Vec<&'j str>,
        depth: usize,
    ) -> Result<(), MapError> {
        let model = self.model;
        let ct = model.get(id);
        if let (Some(base), true) = (ct.base, depth < 64) {
            self.content(base, fields, obj, path, ns, written, depth + 1)?;
        }
        if let Some(g) = &ct.content {
            self.group(g, fields, obj, path, ns, written)?;
        }
        Ok(())
    }

    fn group<'j>(
        &mut self,
        g: &Group,
        fields: &[Field],
        obj: &'j Map<String, Value>,
        path: &str,
        ns: Option<&str>,
        written: &mut Vec<&'j str>,
    ) -> Result<(), MapError> {
        if g.kind == GroupKind::Choice && g.occurs.min >= 1 && !g.occurs.repeats() {
            let present = g.items.iter().filter(|p| particle_present(p, obj)).count();
            if present > 1 {
                return Err(MapError::invalid(
                    path,
                    "more than one alternative of a choice given",
                ));
            }
            if present == 0 && g.items.iter().all(particle_required) {
                return Err(MapError::invalid(
                    path,
                    "one alternative of a choice is required",
                ));
            }
        }
        for item in &g.items {
            match item {
                Particle::Element(e) => {
                    let key = e.name.local.as_str();
                    if written.contains(&key) {
                        continue;
                    }
                    let Some(v) = obj.get(key) else { continue };
                    let p = join(path, key);
                    let array = fields.iter().any(|f| f.key == key && f.array);
                    match v {
                        Value::Array(items) if array => {
                            for (i, item) in items.iter().enumerate() {
                                self.element(e, item, &format!("{p}[{i}]"), ns)?;
                            }
                        }
                        v => self.element(e, v, &p, ns)?,
                    }
                    written.push(obj.get_key_value(key).map_or("", |(k, _)| k.as_str()));
                }
                Particle::Group(inner) => self.group(inner, fields, obj, path, ns, written)?,
                Particle::Any => {}
            }
        }
        Ok(())
    }
}

fn particle_present(p: &Particle, obj: &Map<String, Value>) -> bool {
    match p {
        Particle::Element(e) => obj.contains_key(&e.name.local),
        Particle::Group(g) => g.items.iter().any(|i| particle_present(i, obj)),
        Particle::Any => false,
    }
}

fn particle_required(p: &Particle) -> bool {
    match p {
        Particle::Element(e) => e.occurs.min >= 1,
        Particle::Group(g) => g.occurs.min >= 1 && g.items.iter().any(particle_required),
        Particle::Any => false,
    }
}

/// Attributes of `id` and of its extension bases.
pub(crate) fn attributes(model: &TypeModel, id: ComplexId) -> Vec<&Attribute> {
    let mut out = Vec::new();
    let mut cur = Some(id);
    let mut hops = 0;
    while let Some(c) = cur {
        out.extend(model.get(c).attributes.iter());
        cur = model.get(c).base;
        hops += 1;
        if hops > 64 {
            break;
        }
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A string value against its type's length and pattern facets (what the generated
/// OpenAPI's `minLength`, `maxLength` and `pattern` say).
fn string_facets(t: &SimpleType, s: &str, path: &str) -> Result<(), MapError> {
    let chars = s.chars().count() as u64;
    if t.min_length.is_some_and(|m| chars < m) || t.max_length.is_some_and(|m| chars > m) {
        return Err(MapError::invalid(
            path,
            format!(
                "length {chars} outside {}..={}",
                t.min_length.unwrap_or(0),
                t.max_length.map_or("".into(), |m| m.to_string())
            ),
        ));
    }
    if let Some(p) = &t.pattern_re {
        if !p.matches(s) {
            let written = t.pattern.as_deref().unwrap_or_default();
            return Err(MapError::invalid(
                path,
                format!("does not match the pattern {written}"),
            ));
        }
    }
    Ok(())
}

/// Writes the XML text of a simple value, checked against its type.
fn scalar_text(t: &SimpleType, v: &Value, path: &str, out: &mut String) -> Result<(), MapError> {
    if t.list {
        let items = v
            .as_array()
            .ok_or_else(|| MapError::invalid(path, "expected an array (xs:list)"))?;
        let item_t = SimpleType {
            list: false,
            ..t.clone()
        };
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            scalar_text(&item_t, item, &format!("{path}[{i}]"), out)?;
        }
        return Ok(());
    }
    let start = out.len();
    match t.builtin {
        Builtin::Boolean => match v {
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::String(s) if matches!(s.as_str(), "true" | "false" | "1" | "0") => {
                out.push_str(if s == "true" || s == "1" {
                    "true"
                } else {
                    "false"
                })
            }
            _ => return Err(MapError::invalid(path, "expected a boolean")),
        },
        Builtin::Integer { min, max, .. } => {
            let n: Option<i128> = match v {
                Value::Number(n) => n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from)),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            match n {
                Some(n) if n >= min && n <= max => out.push_str(&n.to_string()),
                Some(_) => {
                    return Err(MapError::invalid(
                        path,
                        format!("out of range {min}..={max}"),
                    ))
                }
                None => return Err(MapError::invalid(path, "expected an integer")),
            }
        }
        Builtin::Decimal | Builtin::Float | Builtin::Double => match v {
            Value::Number(n) => out.push_str(&n.to_string()),
            Value::String(s) if s.trim().parse::<f64>().is_ok() => escape_into(out, s.trim()),
            _ => return Err(MapError::invalid(path, "expected a number")),
        },
        // A string type takes JSON strings only, as the generated OpenAPI says.
        _ => match v {
            Value::String(s) => {
                string_facets(t, s, path)?;
                escape_into(out, s)
            }
            _ => return Err(MapError::invalid(path, "expected a string")),
        },
    }
    if !t.enumeration.is_empty()
        && !t
            .enumeration
            .iter()
            .any(|e| crate::xml::escape(e) == out[start..])
    {
        return Err(MapError::invalid(
            path,
            format!("must be one of {:?}", t.enumeration),
        ));
    }
    Ok(())
}
