//! WSDL 1.1 import: services, ports, SOAP 1.1 and 1.2 bindings (document and rpc style,
//! literal use), operations with their `soapAction`, and the message parts resolved into
//! the XSD [`TypeModel`]. Non-SOAP bindings and what cannot be mapped are listed as
//! [`ImportFinding`]s.

use std::collections::HashMap;

use roxmltree::Node;
use serde::Serialize;

use crate::docs::{self, Documents, Parsed, WSDL_NS};
use crate::error::{ImportError, ImportFinding};
use crate::xml::{self, QName};
use crate::xsd::index::Index;
use crate::xsd::link::Linker;
use crate::xsd::model::{Element, Occurs, Ty, TypeModel};

/// WSDL binding extension namespace for SOAP 1.1.
pub const WSDL_SOAP11_NS: &str = "http://schemas.xmlsoap.org/wsdl/soap/";
/// WSDL binding extension namespace for SOAP 1.2.
pub const WSDL_SOAP12_NS: &str = "http://schemas.xmlsoap.org/wsdl/soap12/";

/// SOAP protocol version of a binding or a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum SoapVersion {
    #[serde(rename = "1.1")]
    V11,
    #[serde(rename = "1.2")]
    V12,
}

impl SoapVersion {
    pub fn envelope_ns(self) -> &'static str {
        match self {
            SoapVersion::V11 => "http://schemas.xmlsoap.org/soap/envelope/",
            SoapVersion::V12 => "http://www.w3.org/2003/05/soap-envelope",
        }
    }

    /// The version whose envelope namespace is `ns`.
    pub fn from_envelope_ns(ns: &str) -> Option<SoapVersion> {
        [SoapVersion::V11, SoapVersion::V12]
            .into_iter()
            .find(|v| v.envelope_ns() == ns)
    }

    /// The media type of its messages.
    pub fn media_type(self) -> &'static str {
        match self {
            SoapVersion::V11 => "text/xml",
            SoapVersion::V12 => "application/soap+xml",
        }
    }
}

/// `document` or `rpc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    Document,
    Rpc,
}

/// An imported WSDL: every SOAP port with its operations, the types they use, and what
/// could not be mapped.
#[derive(Debug, Clone)]
pub struct Wsdl {
    pub target_namespace: Option<String>,
    pub ports: Vec<Port>,
    pub types: TypeModel,
    pub problems: Vec<ImportFinding>,
}

/// A SOAP port of a service.
#[derive(Debug, Clone)]
pub struct Port {
    pub service: String,
    pub name: String,
    pub binding: String,
    pub version: SoapVersion,
    /// `soap:address location`, as written.
    pub address: String,
    pub operations: Vec<Operation>,
}

/// One bound operation.
#[derive(Debug, Clone)]
pub struct Operation {
    pub name: String,
    /// `soapAction` ("" when the binding gives none).
    pub soap_action: String,
    pub style: Style,
    /// rpc style: the namespace of the wrapper elements (`soap:body namespace`).
    pub rpc_namespace: Option<String>,
    pub input: Message,
    /// None for one-way operations.
    pub output: Option<Message>,
    /// Names of the declared faults.
    pub faults: Vec<String>,
}

/// The body parts of a message.
#[derive(Debug, Clone)]
pub struct Message {
    pub parts: Vec<Part>,
}

/// A message part: its element (document style, or an element-typed rpc part) or a
/// type-typed part wrapped in an unqualified element of the part's name (rpc style).
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub element: Element,
}

impl Wsdl {
    /// The port named `port` of `service`, or with neither given the first SOAP port in
    /// document order.
    pub fn port(&self, service: Option<&str>, port: Option<&str>) -> Result<&Port, ImportError> {
        self.ports
            .iter()
            .find(|p| service.is_none_or(|s| s == p.service) && port.is_none_or(|n| n == p.name))
            .ok_or_else(|| match (service, port) {
                (None, None) => ImportError::NoSoapPort,
                (s, p) => ImportError::NoSuchPort {
                    service: s.unwrap_or("*").into(),
                    port: p.unwrap_or("*").into(),
                },
            })
    }
}

/// Imports the WSDL `root` of `set`.
pub fn import(set: &Documents, root: &str) -> Result<Wsdl, ImportError> {
    let mut problems = Vec::new();
    let files = docs::load(set, root, &mut problems)?;
    let Some(first) = files.first() else {
        return Err(ImportError::MissingFile(root.into()));
    };
    let root_el = first.doc.root_element();
    if root_el.tag_name().namespace() != Some(WSDL_NS) || root_el.tag_name().name() != "definitions"
    {
        return Err(ImportError::NotWsdl(first.name.clone()));
    }
    let target_namespace = root_el.attribute("targetNamespace").map(str::to_owned);
    let defs = Definitions::build(&files);
    let index = Index::build(&files);
    let mut linker = Linker::new(&index);
    let mut ports = Vec::new();
    for (service, port) in &defs.ports {
        if let Some(p) = import_port(&defs, &mut linker, service, *port, &mut problems) {
            ports.push(p);
        }
    }
    let (types, type_problems) = linker.finish();
    problems.extend(type_problems);
    if ports.is_empty() {
        return Err(ImportError::NoSoapPort);
    }
    Ok(Wsdl {
        target_namespace,
        ports,
        types,
        problems,
    })
}

/// The WSDL definitions of every file, by qualified name.
struct Definitions<'a, 'i> {
    messages: HashMap<QName, Node<'a, 'i>>,
    port_types: HashMap<QName, Node<'a, 'i>>,
    bindings: HashMap<QName, Node<'a, 'i>>,
    /// (service name, port) in document order.
    ports: Vec<(String, Node<'a, 'i>)>,
}

impl<'a, 'i> Definitions<'a, 'i> {
    fn build(files: &'a [Parsed<'i>]) -> Self {
        let mut d = Definitions {
            messages: HashMap::new(),
            port_types: HashMap::new(),
            bindings: HashMap::new(),
            ports: Vec::new(),
        };
        for file in files {
            let root = file.doc.root_element();
            if root.tag_name().namespace() != Some(WSDL_NS) {
                continue;
            }
            let tns = root.attribute("targetNamespace");
            for child in xml::elements(root).filter(|c| c.tag_name().namespace() == Some(WSDL_NS)) {
                let name = child.attribute("name").unwrap_or_default();
                let q = QName::new(tns, name);
                match child.tag_name().name() {
                    "message" => {
                        d.messages.entry(q).or_insert(child);
                    }
                    "portType" => {
                        d.port_types.entry(q).or_insert(child);
                    }
                    "binding" => {
                        d.bindings.entry(q).or_insert(child);
                    }
                    "service" => {
                        for port in xml::children_named(child, WSDL_NS, "port") {
                            d.ports.push((name.to_owned(), port));
                        }
                    }
                    _ => {}
                }
            }
        }
        d
    }
}

/// The SOAP extension element named `local` under `node`, with its version.
fn soap_ext<'a, 'i>(node: Node<'a, 'i>, local: &str) -> Option<(Node<'a, 'i>, SoapVersion)> {
    xml::elements(node).find_map(|c| {
        if c.tag_name().name() != local {
            return None;
        }
        match c.tag_name().namespace() {
            Some(WSDL_SOAP11_NS) => Some((c, SoapVersion::V11)),
            Some(WSDL_SOAP12_NS) => Some((c, SoapVersion::V12)),
            _ => None,
        }
    })
}

fn import_port(
    defs: &Definitions<'_, '_>,
    linker: &mut Linker<'_, '_, '_>,
    service: &str,
    port: Node<'_, '_>,
    problems: &mut Vec<ImportFinding>,
) -> Option<Port> {
    let port_name = port.attribute("name").unwrap_or_default().to_owned();
    let binding_q = port
        .attribute("binding")
        .and_then(|b| QName::resolve(port, b))?;
    let note = |problems: &mut Vec<ImportFinding>, why: String| {
        problems.push(ImportFinding {
            operation: None,
            subject: format!("port {service}/{port_name}"),
            why,
        })
    };
    let Some(binding) = defs.bindings.get(&binding_q) else {
        note(
            problems,
            format!("binding {binding_q} is not declared: port not imported"),
        );
        return None;
    };
    let Some((soap_binding, version)) = soap_ext(*binding, "binding") else {
        let kind = xml::elements(*binding)
            .find(|c| c.tag_name().name() == "binding")
            .and_then(|c| c.tag_name().namespace())
            .unwrap_or("no binding extension");
        note(
            problems,
            format!(
                "binding {} is not SOAP ({kind}): port not imported",
                binding_q.local
            ),
        );
        return None;
    };
    let address = soap_ext(port, "address")
        .and_then(|(a, _)| a.attribute("location"))
        .unwrap_or_default()
        .to_owned();
    let default_style = match soap_binding.attribute("style") {
        Some("rpc") => Style::Rpc,
        _ => Style::Document,
    };
    let port_type = binding
        .attribute("type")
        .and_then(|t| QName::resolve(*binding, t))
        .and_then(|q| defs.port_types.get(&q).copied());
    let Some(port_type) = port_type else {
        note(
            problems,
            format!(
                "binding {}: its portType is not declared: port not imported",
                binding_q.local
            ),
        );
        return None;
    };
    let mut operations = Vec::new();
    for bop in xml::children_named(*binding, WSDL_NS, "operation") {
        let name = bop.attribute("name").unwrap_or_default();
        linker.operation = Some(name.to_owned());
        match import_operation(defs, linker, bop, port_type, default_style) {
            Ok(op) => operations.push(op),
            Err(why) => problems.push(ImportFinding {
                operation: Some(name.to_owned()),
                subject: format!("binding {}", binding_q.local),
                why,
            }),
        }
        linker.operation = None;
    }
    Some(Port {
        service: service.to_owned(),
        name: port_name,
        binding: binding_q.local,
        version,
        address,
        operations,
    })
}

fn import_operation(
    defs: &Definitions<'_, '_>,
    linker: &mut Linker<'_, '_, '_>,
    bop: Node<'_, '_>,
    port_type: Node<'_, '_>,
    default_style: Style,
) -> Result<Operation, String> {
    let name = bop.attribute("name").unwrap_or_default();
    let soap_op = soap_ext(bop, "operation").map(|(n, _)| n);
    let style = match soap_op.and_then(|o| o.attribute("style")) {
        Some("rpc") => Style::Rpc,
        Some("document") => Style::Document,
        _ => default_style,
    };
    let soap_action = soap_op
        .and_then(|o| o.attribute("soapAction"))
        .unwrap_or_default()
        .to_owned();
    let pop = xml::children_named(port_type, WSDL_NS, "operation")
        .find(|o| o.attribute("name") == Some(name))
        .ok_or_else(|| "not declared in the portType: not imported".to_owned())?;
    let bound_in = xml::children_named(bop, WSDL_NS, "input").next();
    let input_body = bound_in.and_then(|i| soap_ext(i, "body")).map(|(b, _)| b);
    if input_body.and_then(|b| b.attribute("use")) == Some("encoded") {
        return Err("use=\"encoded\" (SOAP encoding) is not supported: not imported".into());
    }
    let rpc_namespace = input_body
        .and_then(|b| b.attribute("namespace"))
        .map(str::to_owned);
    let message = |dir: &str, bound: Option<Node<'_, '_>>, linker: &mut Linker<'_, '_, '_>| {
        let abstract_msg = xml::children_named(pop, WSDL_NS, dir).next()?;
        let q = abstract_msg
            .attribute("message")
            .and_then(|m| QName::resolve(abstract_msg, m))?;
        let Some(msg) = defs.messages.get(&q) else {
            linker.problem(format!("message {q} is not declared: {dir} has no body"));
            return Some(Message { parts: Vec::new() });
        };
        Some(parts(*msg, bound, style, linker))
    };
    let input = message("input", bound_in, linker).ok_or("no input message: not imported")?;
    let bound_out = xml::children_named(bop, WSDL_NS, "output").next();
    let output = message("output", bound_out, linker);
    let faults = xml::children_named(pop, WSDL_NS, "fault")
        .filter_map(|f| f.attribute("name").map(str::to_owned))
        .collect();
    Ok(Operation {
        name: name.to_owned(),
        soap_action,
        style,
        rpc_namespace,
        input,
        output,
        faults,
    })
}

/// The body parts of `msg` as bound: `soap:body parts` selects, `soap:header` parts are
/// left out of the body (and named as a problem).
fn parts(
    msg: Node<'_, '_>,
    bound: Option<Node<'_, '_>>,
    style: Style,
    linker: &mut Linker<'_, '_, '_>,
) -> Message {
    let body = bound.and_then(|b| soap_ext(b, "body")).map(|(b, _)| b);
    let selected: Option<Vec<&str>> = body
        .and_then(|b| b.attribute("parts"))
        .map(|p| p.split_whitespace().collect());
    let headers: Vec<String> = bound
        .map(|b| {
            xml::elements(b)
                .filter(|h| h.tag_name().name() == "header")
                .filter_map(|h| h.attribute("part").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for part in xml::children_named(msg, WSDL_NS, "part") {
        let name = part.attribute("name").unwrap_or_default();
        if headers.iter().any(|h| h == name) {
            linker.problem(format!(
                "part {name} is a SOAP header: not mapped (pass-through forwards it)"
            ));
            continue;
        }
        if selected.as_ref().is_some_and(|s| !s.contains(&name)) {
            continue;
        }
        let element = if let Some(q) = part
            .attribute("element")
            .and_then(|e| QName::resolve(part, e))
        {
            linker.global_element(&q).unwrap_or_else(|| {
                linker.problem(format!(
                    "element {q} of part {name} is not declared: carried as text"
                ));
                Element {
                    name: q,
                    ty: Ty::Any,
                    occurs: Occurs::ONE,
                    nillable: false,
                }
            })
        } else {
            let ty = match part.attribute("type").and_then(|t| QName::resolve(part, t)) {
                Some(q) => linker.type_named(&q),
                None => Ty::Any,
            };
            if style == Style::Document {
                linker.problem(format!(
                    "document-style part {name} names a type, not an element: sent as an element named {name}"
                ));
            }
            Element {
                name: QName::new(None, name),
                ty,
                occurs: Occurs::ONE,
                nillable: false,
            }
        };
        out.push(Part {
            name: name.to_owned(),
            element,
        });
    }
    Message { parts: out }
}
