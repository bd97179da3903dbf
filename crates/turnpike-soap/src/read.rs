//! SOAP -> JSON: reads a SOAP message and types every value by the schema: numbers and
//! booleans as JSON numbers and booleans, repeating elements always as arrays (also when
//! one item came), nil as null, attributes as properties. A SOAP Fault becomes a
//! [`Fault`] value, for the caller to answer with an error. Messages are read through
//! the light [`Tree`] (one checked pass, text borrowed); a Fault, the rare case, through
//! the DOM.

use serde_json::{Map, Number, Value};

use crate::error::MapError;
use crate::tree::{Node, Tree};
use crate::write::attributes;
use crate::wsdl::{Message, Operation, SoapVersion, Style};
use crate::xml::{self, Limits, XSI_NS};
use crate::xsd::model::*;

/// A SOAP Fault, in either version's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub version: SoapVersion,
    /// `faultcode` (1.1) or `Code/Value` (1.2), local part: `Client`, `Server`, `Sender`,
    /// `Receiver`, `VersionMismatch`, `MustUnderstand`...
    pub code: String,
    /// `faultstring` (1.1) or the first `Reason/Text` (1.2).
    pub reason: String,
    /// `detail` / `Detail`, when given, kept structured ([`detail_json`]): an object of
    /// its child elements, or its text when it holds no element.
    pub detail: Option<Value>,
}

impl Fault {
    /// Whether the fault blames the caller (`Client` / `Sender`).
    pub fn is_client(&self) -> bool {
        matches!(self.code.as_str(), "Client" | "Sender") || self.code.starts_with("Client.")
    }
}

/// What a SOAP response was.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Data(Value),
    Fault(Fault),
}

/// The envelope's version and its `Body` element.
pub fn envelope_body<'t, 'a>(tree: &'t Tree<'a>) -> Result<(SoapVersion, Node<'t, 'a>), MapError> {
    let env = tree.root();
    let version = env
        .namespace()
        .and_then(SoapVersion::from_envelope_ns)
        .filter(|_| env.name() == "Envelope")
        .ok_or_else(|| {
            MapError::NotEnvelope("the root is not a SOAP 1.1 or 1.2 Envelope".into())
        })?;
    let body = env
        .elements()
        .find(|e| e.is(version.envelope_ns(), "Body"))
        .ok_or_else(|| MapError::NotEnvelope("no Body".into()))?;
    Ok((version, body))
}

/// Reads the response to `op` from the envelope text `xml_text`.
pub fn response_json(model: &TypeModel, op: &Operation, xml_text: &str) -> Result<Reply, MapError> {
    let tree = Tree::parse(xml_text, Limits::MESSAGES)?;
    let (version, body) = envelope_body(&tree)?;
    if let Some(first) = body.elements().next() {
        if first.is(version.envelope_ns(), "Fault") {
            return fault(version, xml_text).map(Reply::Fault);
        }
    }
    let Some(message) = &op.output else {
        return Ok(Reply::Data(Value::Null));
    };
    read_body(model, op, message, body).map(Reply::Data)
}

/// The Fault of a response already checked by the tree's pass.
fn fault(version: SoapVersion, xml_text: &str) -> Result<Fault, MapError> {
    let doc = xml::parse(xml_text, Limits::MESSAGES)?;
    let fault = xml::children_named(doc.root_element(), version.envelope_ns(), "Body")
        .next()
        .and_then(|b| xml::elements(b).next())
        .ok_or_else(|| MapError::NotEnvelope("no Body".into()))?;
    Ok(read_fault(version, fault))
}

fn read_fault(version: SoapVersion, fault: roxmltree::Node<'_, '_>) -> Fault {
    let child = |name: &str| xml::elements(fault).find(|c| c.tag_name().name() == name);
    let local = |s: String| s.rsplit(':').next().unwrap_or_default().trim().to_owned();
    let (code, reason, detail) = match version {
        SoapVersion::V11 => (
            child("faultcode").map(|c| local(xml::text_of(c))),
            child("faultstring").map(xml::text_of),
            child("detail"),
        ),
        SoapVersion::V12 => (
            child("Code")
                .and_then(|c| xml::elements(c).find(|v| v.tag_name().name() == "Value"))
                .map(|v| local(xml::text_of(v))),
            child("Reason")
                .and_then(|r| xml::elements(r).find(|t| t.tag_name().name() == "Text"))
                .map(xml::text_of),
            child("Detail"),
        ),
    };
    Fault {
        version,
        code: code.unwrap_or_default(),
        reason: reason.unwrap_or_default(),
        detail: detail.map(detail_json).filter(|d| match d {
            Value::String(s) => !s.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        }),
    }
}

/// An element of a Fault's detail as JSON, schema-less: an element with no child element
/// is its trimmed text (with its attributes, an object of `@name`s and `#text`); one with
/// children is an object keyed by their local names, a repeated name an array. The
/// document was read under `Limits::MESSAGES` (size, depth and node caps), which bound it.
pub fn detail_json(e: roxmltree::Node<'_, '_>) -> Value {
    let attrs = e.attributes().map(|a| {
        (
            format!("@{}", a.name()),
            Value::String(a.value().to_owned()),
        )
    });
    let mut children = xml::elements(e).peekable();
    if children.peek().is_none() {
        let text = Value::String(xml::text_of(e).trim().to_owned());
        if e.attributes().len() == 0 {
            return text;
        }
        let mut o: serde_json::Map<String, Value> = attrs.collect();
        o.insert("#text".into(), text);
        return Value::Object(o);
    }
    let mut o: serde_json::Map<String, Value> = attrs.collect();
    for c in children {
        let v = detail_json(c);
        match o.get_mut(c.tag_name().name()) {
            Some(Value::Array(items)) => items.push(v),
            Some(prev) => {
                let first = prev.take();
                *prev = Value::Array(vec![first, v]);
            }
            None => {
                o.insert(c.tag_name().name().to_owned(), v);
            }
        }
    }
    Value::Object(o)
}

/// Reads the parts of `message` from a `Body` element.
pub fn read_body(
    model: &TypeModel,
    op: &Operation,
    message: &Message,
    body: Node<'_, '_>,
) -> Result<Value, MapError> {
    let container = match op.style {
        Style::Document => body,
        Style::Rpc => body
            .elements()
            .next()
            .ok_or_else(|| MapError::invalid("", "rpc response has no wrapper element"))?,
    };
    let children: Vec<Node<'_, '_>> = container.elements().collect();
    match message.parts.as_slice() {
        [] => Ok(Value::Null),
        [part] => {
            let node = children
                .iter()
                .find(|c| c.name() == part.element.name.local)
                .ok_or_else(|| {
                    MapError::invalid(
                        "",
                        format!("element {} missing from the body", part.element.name.local),
                    )
                })?;
            read_element(model, &part.element, *node, "")
        }
        parts => {
            let mut obj = Map::new();
            for part in parts {
                if let Some(node) = children
                    .iter()
                    .find(|c| c.name() == part.element.name.local)
                {
                    obj.insert(
                        part.name.clone(),
                        read_element(model, &part.element, *node, &part.name)?,
                    );
                }
            }
            Ok(Value::Object(obj))
        }
    }
}

fn read_element(
    model: &TypeModel,
    e: &Element,
    node: Node<'_, '_>,
    path: &str,
) -> Result<Value, MapError> {
    if node
        .attribute(Some(XSI_NS), "nil")
        .is_some_and(|v| v == "true" || v == "1")
    {
        return Ok(Value::Null);
    }
    match &e.ty {
        Ty::Simple(s) => typed(s, node.text(), path),
        Ty::Any => Ok(Value::String(node.text().to_owned())),
        Ty::Complex(id) => read_complex(model, *id, node, path),
    }
}

fn read_complex(
    model: &TypeModel,
    id: ComplexId,
    node: Node<'_, '_>,
    path: &str,
) -> Result<Value, MapError> {
    let mut obj = Map::new();
    for a in attributes(model, id) {
        let v = node.attribute(a.name.ns.as_deref(), &a.name.local);
        if let Some(v) = v {
            obj.insert(a.key.clone(), typed(&a.ty, v, path)?);
        }
    }
    if let Some(t) = &model.get(id).text {
        obj.insert(TEXT_KEY.to_owned(), typed(t, node.text(), path)?);
    }
    let fields = model.fields(id);
    for child in node.elements() {
        let name = child.name();
        let Some(f) = fields.iter().find(|f| f.key == name) else {
            // Elements the schema does not declare (xs:any, newer back ends) are skipped.
            continue;
        };
        let p = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        let v = read_element(model, &f.element, child, &p)?;
        if f.array {
            match obj
                .entry(f.key.clone())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => items.push(v),
                _ => return Err(MapError::invalid(&p, "element and attribute share a name")),
            }
        } else if obj.insert(f.key.clone(), v).is_some() {
            return Err(MapError::invalid(
                &p,
                "element occurs more than once but the schema allows one",
            ));
        }
    }
    Ok(Value::Object(obj))
}

/// The JSON value of simple-typed text.
fn typed(t: &SimpleType, text: &str, path: &str) -> Result<Value, MapError> {
    if t.list {
        let item_t = SimpleType {
            list: false,
            ..t.clone()
        };
        return text
            .split_whitespace()
            .map(|w| typed(&item_t, w, path))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    let bad = |what: &str| MapError::invalid(path, format!("not {what}: {:?}", truncate(text)));
    Ok(match t.builtin {
        Builtin::Boolean => match text.trim() {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => return Err(bad("a boolean")),
        },
        Builtin::Integer { .. } => {
            let s = text.trim();
            let s = s.strip_prefix('+').unwrap_or(s);
            if let Ok(n) = s.parse::<i64>() {
                Value::from(n)
            } else if let Ok(n) = s.parse::<u64>() {
                Value::from(n)
            } else {
                return Err(bad("an integer"));
            }
        }
        Builtin::Decimal | Builtin::Float | Builtin::Double => {
            let s = text.trim();
            if let Ok(n) = s.parse::<i64>() {
                Value::from(n)
            } else {
                let f: f64 = s.parse().map_err(|_| bad("a number"))?;
                Value::Number(Number::from_f64(f).ok_or_else(|| bad("a finite number"))?)
            }
        }
        _ => Value::String(text.to_owned()),
    })
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
