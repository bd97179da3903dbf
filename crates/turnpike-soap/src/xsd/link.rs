//! Resolves XSD declarations into the [`TypeModel`]: named complex types are built once
//! (their arena index is reserved before their content, so recursion terminates), group
//! and attribute-group references are inlined, element and attribute references point at
//! their global declarations. Whatever cannot be mapped becomes a [`ImportFinding`].

use std::collections::HashMap;

use roxmltree::Node;

use super::index::{Index, SchemaInfo};
use super::model::*;
use crate::error::ImportFinding;
use crate::xml::{self, QName, XSD_NS};

/// Namespace of SOAP 1.1 encoding (`soapenc:Array`, `soapenc:string`).
pub const SOAP_ENC_NS: &str = "http://schemas.xmlsoap.org/soap/encoding/";

/// Deepest chain of group, attribute-group, simple-type or base references followed.
const MAX_CHAIN: usize = 64;

pub(crate) struct Linker<'x, 'a, 'i> {
    index: &'x Index<'a, 'i>,
    model: TypeModel,
    named: HashMap<QName, ComplexId>,
    element_types: HashMap<QName, ComplexId>,
    simple_named: HashMap<QName, SimpleType>,
    problems: Vec<ImportFinding>,
    /// The operation being imported, named in problems.
    pub operation: Option<String>,
    /// Names of the declarations being linked, innermost last (the problem's subject).
    context: Vec<String>,
    chain: usize,
}

enum Register {
    Named(QName),
    Element(QName),
}

fn xsd_children<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    xml::elements(node).filter(|c| c.tag_name().namespace() == Some(XSD_NS))
}

impl<'x, 'a, 'i> Linker<'x, 'a, 'i> {
    pub fn new(index: &'x Index<'a, 'i>) -> Self {
        Linker {
            index,
            model: TypeModel::default(),
            named: HashMap::new(),
            element_types: HashMap::new(),
            simple_named: HashMap::new(),
            problems: Vec::new(),
            operation: None,
            context: Vec::new(),
            chain: 0,
        }
    }

    pub fn problem(&mut self, why: impl Into<String>) {
        let subject = self
            .context
            .last()
            .cloned()
            .unwrap_or_else(|| "schema".into());
        self.problems.push(ImportFinding {
            operation: self.operation.clone(),
            subject,
            why: why.into(),
        });
    }

    /// The global element `q`, or None when no uploaded schema declares it.
    pub fn global_element(&mut self, q: &QName) -> Option<Element> {
        let decl = self.index.decl(&self.index.elements, q)?;
        self.context.push(format!("element {}", q.local));
        let ty = self.element_type(decl.node, decl.info, Some(q));
        self.context.pop();
        Some(Element {
            name: q.clone(),
            ty,
            occurs: Occurs::ONE,
            nillable: decl.node.attribute("nillable") == Some("true"),
        })
    }

    fn element_type(
        &mut self,
        node: Node<'a, 'i>,
        info: &'x SchemaInfo,
        global: Option<&QName>,
    ) -> Ty {
        if let Some(t) = node.attribute("type") {
            return match QName::resolve(node, t) {
                Some(q) => self.type_named(&q),
                None => {
                    self.problem(format!(
                        "type {t:?} has an undeclared prefix: carried as text"
                    ));
                    Ty::Any
                }
            };
        }
        for child in xsd_children(node) {
            match child.tag_name().name() {
                "complexType" => {
                    if let Some(&id) = global.and_then(|g| self.element_types.get(g)) {
                        return Ty::Complex(id);
                    }
                    let reg = global.map(|g| Register::Element(g.clone()));
                    return Ty::Complex(self.complex_type(child, info, reg));
                }
                "simpleType" => return Ty::Simple(self.simple_type(child, info)),
                _ => {}
            }
        }
        self.problem("no type given (xs:anyType): carried as text");
        Ty::Any
    }

    /// A type by name: a built-in, or a declared simple or complex type.
    pub fn type_named(&mut self, q: &QName) -> Ty {
        match q.ns.as_deref() {
            Some(XSD_NS) | Some(SOAP_ENC_NS) => {
                if let Some(b) = Builtin::from_name(&q.local) {
                    return Ty::Simple(SimpleType::of(b));
                }
                self.problem(format!("{}: not mapped, carried as text", q.local));
                return Ty::Any;
            }
            _ => {}
        }
        if let Some(&id) = self.named.get(q) {
            return Ty::Complex(id);
        }
        if let Some(s) = self.simple_named.get(q) {
            return Ty::Simple(s.clone());
        }
        let Some(decl) = self.index.decl(&self.index.types, q) else {
            self.problem(format!(
                "type {q} is not declared in the uploaded files: carried as text"
            ));
            return Ty::Any;
        };
        if self.chain > MAX_CHAIN {
            self.problem(format!("type {q}: reference chain too deep"));
            return Ty::Any;
        }
        self.context.push(format!("type {}", q.local));
        self.chain += 1;
        let ty = if decl.node.tag_name().name() == "complexType" {
            Ty::Complex(self.complex_type(decl.node, decl.info, Some(Register::Named(q.clone()))))
        } else {
            let s = self.simple_type(decl.node, decl.info);
            self.simple_named.insert(q.clone(), s.clone());
            Ty::Simple(s)
        };
        self.chain -= 1;
        self.context.pop();
        ty
    }

    fn simple_type(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo) -> SimpleType {
        if self.chain > MAX_CHAIN {
            self.problem("simple type chain too deep: carried as a string");
            return SimpleType::default();
        }
        self.chain += 1;
        let mut out = SimpleType::default();
        for child in xsd_children(node) {
            match child.tag_name().name() {
                "restriction" => {
                    out = self.restriction_base(child, info);
                    facets(child, &mut out);
                }
                "list" => {
                    let item = match child
                        .attribute("itemType")
                        .and_then(|t| QName::resolve(child, t))
                    {
                        Some(q) => self.type_named(&q),
                        None => xsd_children(child)
                            .find(|c| c.tag_name().name() == "simpleType")
                            .map_or(Ty::Any, |c| Ty::Simple(self.simple_type(c, info))),
                    };
                    out = match item {
                        Ty::Simple(s) => s,
                        _ => SimpleType::default(),
                    };
                    out.list = true;
                }
                "union" => {
                    self.problem("xs:union: carried as a string");
                    out = SimpleType::default();
                }
                _ => {}
            }
        }
        self.chain -= 1;
        out
    }

    /// The simple type a `restriction` (or simpleContent extension) starts from.
    fn restriction_base(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo) -> SimpleType {
        if let Some(q) = node.attribute("base").and_then(|b| QName::resolve(node, b)) {
            return match self.type_named(&q) {
                Ty::Simple(s) => s,
                Ty::Complex(id) => self.model.complex[id].text.clone().unwrap_or_default(),
                Ty::Any => SimpleType::default(),
            };
        }
        xsd_children(node)
            .find(|c| c.tag_name().name() == "simpleType")
            .map_or_else(SimpleType::default, |c| self.simple_type(c, info))
    }

    fn complex_type(
        &mut self,
        node: Node<'a, 'i>,
        info: &'x SchemaInfo,
        reg: Option<Register>,
    ) -> ComplexId {
        let id = self.model.complex.len();
        let mut ct = ComplexType::default();
        match reg {
            Some(Register::Named(q)) => {
                ct.name = Some(q.clone());
                self.named.insert(q, id);
            }
            Some(Register::Element(q)) => {
                ct.element_name = Some(q.clone());
                self.element_types.insert(q, id);
            }
            None => {}
        }
        self.model.complex.push(ct.clone());
        if node.attribute("mixed") == Some("true") {
            self.problem("mixed content: text between child elements is not mapped");
        }
        for child in xsd_children(node) {
            match child.tag_name().name() {
                "sequence" | "choice" | "all" => ct.content = Some(self.group(child, info)),
                "group" => ct.content = Some(self.group_ref(child)),
                "attribute" | "attributeGroup" => self.attributes(child, info, &mut ct.attributes),
                "anyAttribute" => self.problem("xs:anyAttribute: other attributes are not mapped"),
                "simpleContent" => self.simple_content(child, info, &mut ct),
                "complexContent" => self.complex_content(child, info, &mut ct),
                _ => {}
            }
        }
        self.model.complex[id] = ct;
        id
    }

    fn complex_content(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo, ct: &mut ComplexType) {
        if node.attribute("mixed") == Some("true") {
            self.problem("mixed content: text between child elements is not mapped");
        }
        for d in xsd_children(node) {
            let extension = match d.tag_name().name() {
                "extension" => true,
                "restriction" => false,
                _ => continue,
            };
            let base = d.attribute("base").and_then(|b| QName::resolve(d, b));
            if let Some(base) = &base {
                if base.ns.as_deref() == Some(SOAP_ENC_NS) {
                    self.problem(format!(
                        "restriction of soapenc:{} (SOAP encoding, rpc/encoded): mapped from its own content only",
                        base.local
                    ));
                } else if extension {
                    match self.type_named(base) {
                        Ty::Complex(b) => ct.base = Some(b),
                        Ty::Any => {}
                        Ty::Simple(_) => self.problem(format!(
                            "complexContent extension of simple type {}: the base is not mapped",
                            base.local
                        )),
                    }
                }
            }
            for child in xsd_children(d) {
                match child.tag_name().name() {
                    "sequence" | "choice" | "all" => ct.content = Some(self.group(child, info)),
                    "group" => ct.content = Some(self.group_ref(child)),
                    "attribute" | "attributeGroup" => {
                        self.attributes(child, info, &mut ct.attributes)
                    }
                    _ => {}
                }
            }
        }
    }

    fn simple_content(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo, ct: &mut ComplexType) {
        for d in xsd_children(node) {
            if !matches!(d.tag_name().name(), "extension" | "restriction") {
                continue;
            }
            if let Some(q) = d.attribute("base").and_then(|b| QName::resolve(d, b)) {
                if let Ty::Complex(b) = self.type_named(&q) {
                    let inherited = self.model.complex[b].attributes.clone();
                    ct.attributes.extend(inherited);
                }
            }
            let mut text = self.restriction_base(d, info);
            facets(d, &mut text);
            ct.text = Some(text);
            for child in xsd_children(d) {
                if matches!(child.tag_name().name(), "attribute" | "attributeGroup") {
                    self.attributes(child, info, &mut ct.attributes);
                }
            }
        }
    }

    fn group(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo) -> Group {
        let kind = match node.tag_name().name() {
            "choice" => GroupKind::Choice,
            "all" => GroupKind::All,
            _ => GroupKind::Sequence,
        };
        let occurs = self.occurs(node);
        let mut items = Vec::new();
        if self.chain > MAX_CHAIN {
            self.problem("model groups nested too deep: inner content not mapped");
            return Group {
                kind,
                occurs,
                items,
            };
        }
        self.chain += 1;
        for child in xsd_children(node) {
            match child.tag_name().name() {
                "element" => {
                    items.push(Particle::Element(Box::new(self.local_element(child, info))))
                }
                "sequence" | "choice" | "all" => {
                    items.push(Particle::Group(self.group(child, info)))
                }
                "group" => items.push(Particle::Group(self.group_ref(child))),
                "any" => {
                    self.problem("xs:any: elements it allows are not mapped");
                    items.push(Particle::Any);
                }
                _ => {}
            }
        }
        self.chain -= 1;
        Group {
            kind,
            occurs,
            items,
        }
    }

    fn group_ref(&mut self, node: Node<'a, 'i>) -> Group {
        let occurs = self.occurs(node);
        let empty = Group {
            kind: GroupKind::Sequence,
            occurs,
            items: Vec::new(),
        };
        let Some(q) = node.attribute("ref").and_then(|r| QName::resolve(node, r)) else {
            self.problem("xs:group without a resolvable ref: not mapped");
            return empty;
        };
        let Some(decl) = self.index.decl(&self.index.groups, &q) else {
            self.problem(format!(
                "group {q} is not declared in the uploaded files: not mapped"
            ));
            return empty;
        };
        if self.chain > MAX_CHAIN {
            self.problem(format!("group {q}: reference chain too deep"));
            return empty;
        }
        self.chain += 1;
        let inner = xsd_children(decl.node)
            .find(|c| matches!(c.tag_name().name(), "sequence" | "choice" | "all"))
            .map(|c| self.group(c, decl.info));
        self.chain -= 1;
        match inner {
            Some(mut g) => {
                // A group definition's particle occurs once; the reference says how often.
                g.occurs = occurs;
                g
            }
            None => empty,
        }
    }

    fn local_element(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo) -> Element {
        let occurs = self.occurs(node);
        let nillable = node.attribute("nillable") == Some("true");
        if let Some(r) = node.attribute("ref") {
            let q = QName::resolve(node, r).unwrap_or_else(|| QName::new(None, r));
            return match self.global_element(&q) {
                Some(e) => Element { occurs, ..e },
                None => {
                    self.problem(format!(
                        "element {q} is not declared in the uploaded files: carried as text"
                    ));
                    Element {
                        name: q,
                        ty: Ty::Any,
                        occurs,
                        nillable,
                    }
                }
            };
        }
        let local = node.attribute("name").unwrap_or_default();
        let qualified = match node.attribute("form") {
            Some("qualified") => true,
            Some("unqualified") => false,
            _ => info.qualified_elements,
        };
        let name = QName::new(if qualified { info.tns.as_deref() } else { None }, local);
        self.context.push(format!("element {local}"));
        let ty = self.element_type(node, info, None);
        self.context.pop();
        Element {
            name,
            ty,
            occurs,
            nillable,
        }
    }

    fn attributes(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo, out: &mut Vec<Attribute>) {
        if self.chain > MAX_CHAIN {
            self.problem("attribute group chain too deep");
            return;
        }
        self.chain += 1;
        match node.tag_name().name() {
            "attribute" => {
                if let Some(a) = self.attribute(node, info) {
                    out.push(a);
                }
            }
            "attributeGroup" => {
                let q = node.attribute("ref").and_then(|r| QName::resolve(node, r));
                match q
                    .as_ref()
                    .and_then(|q| self.index.decl(&self.index.attribute_groups, q))
                {
                    Some(decl) => {
                        for child in xsd_children(decl.node) {
                            self.attributes(child, decl.info, out);
                        }
                    }
                    None => self
                        .problem("attribute group not declared in the uploaded files: not mapped"),
                }
            }
            _ => {}
        }
        self.chain -= 1;
    }

    fn attribute(&mut self, node: Node<'a, 'i>, info: &'x SchemaInfo) -> Option<Attribute> {
        let required = match node.attribute("use") {
            Some("prohibited") => return None,
            Some("required") => true,
            _ => false,
        };
        let (decl_node, decl_info, name) = match node.attribute("ref") {
            Some(r) => {
                let q = QName::resolve(node, r)?;
                let Some(decl) = self.index.decl(&self.index.attributes, &q) else {
                    self.problem(format!(
                        "attribute {q} is not declared in the uploaded files: not mapped"
                    ));
                    return None;
                };
                (decl.node, decl.info, q)
            }
            None => {
                let local = node.attribute("name")?;
                let qualified = match node.attribute("form") {
                    Some(f) => f == "qualified",
                    None => info.qualified_attributes,
                };
                (
                    node,
                    info,
                    QName::new(if qualified { info.tns.as_deref() } else { None }, local),
                )
            }
        };
        let ty = match decl_node
            .attribute("type")
            .and_then(|t| QName::resolve(decl_node, t))
        {
            Some(q) => match self.type_named(&q) {
                Ty::Simple(s) => s,
                _ => SimpleType::default(),
            },
            None => xsd_children(decl_node)
                .find(|c| c.tag_name().name() == "simpleType")
                .map_or_else(SimpleType::default, |c| self.simple_type(c, decl_info)),
        };
        Some(Attribute {
            key: name.local.clone(),
            name,
            ty,
            required,
        })
    }

    fn occurs(&mut self, node: Node<'a, 'i>) -> Occurs {
        let min = match node.attribute("minOccurs").map(|v| v.trim().parse::<u32>()) {
            None => 1,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                self.problem("minOccurs is not a number: taken as 1");
                1
            }
        };
        let max = match node.attribute("maxOccurs").map(str::trim) {
            None => Some(1),
            Some("unbounded") => None,
            Some(v) => match v.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    self.problem("maxOccurs is not a number: taken as unbounded");
                    None
                }
            },
        };
        Occurs { min, max }
    }

    /// Computes every type's flattened fields and attribute keys; returns the model and
    /// the problems met.
    pub fn finish(mut self) -> (TypeModel, Vec<ImportFinding>) {
        let n = self.model.complex.len();
        for id in 0..n {
            let mut fields = Vec::new();
            collect_fields(&self.model, id, 0, &mut fields);
            let mut merged: Vec<Field> = Vec::with_capacity(fields.len());
            for f in fields {
                match merged.iter_mut().find(|m| m.key == f.key) {
                    Some(m) => {
                        if !m.array {
                            let ct = &self.model.complex[id];
                            let subject =
                                ct.name.as_ref().or(ct.element_name.as_ref()).map_or_else(
                                    || "an anonymous type".to_owned(),
                                    |q| format!("type {}", q.local),
                                );
                            self.problems.push(ImportFinding {
                                operation: None,
                                subject,
                                why: format!(
                                    "elements named {:?} appear more than once: one JSON array holds them all, their order relative to other elements is not kept",
                                    f.key
                                ),
                            });
                        }
                        m.array = true;
                    }
                    None => merged.push(f),
                }
            }
            let ct = &mut self.model.complex[id];
            for a in &mut ct.attributes {
                if a.key == TEXT_KEY || merged.iter().any(|f| f.key == a.key) {
                    a.key = format!("@{}", a.name.local);
                }
            }
            ct.fields = merged;
        }
        (self.model, self.problems)
    }
}

fn collect_fields(model: &TypeModel, id: ComplexId, depth: usize, out: &mut Vec<Field>) {
    let ct = &model.complex[id];
    if let Some(base) = ct.base {
        if depth < MAX_CHAIN {
            collect_fields(model, base, depth + 1, out);
        }
    }
    if let Some(g) = &ct.content {
        walk(g, false, true, out);
    }
}

fn walk(group: &Group, array: bool, required: bool, out: &mut Vec<Field>) {
    let array = array || group.occurs.repeats();
    let required = required && group.occurs.min >= 1 && group.kind != GroupKind::Choice;
    for item in &group.items {
        match item {
            Particle::Element(e) => out.push(Field {
                key: e.name.local.clone(),
                element: (**e).clone(),
                array: array || e.occurs.repeats(),
                required: required && e.occurs.min >= 1,
            }),
            Particle::Group(g) => walk(g, array, required, out),
            Particle::Any => {}
        }
    }
}

/// Reads the facets of a `restriction` into `t`.
fn facets(node: Node<'_, '_>, t: &mut SimpleType) {
    for f in xsd_children(node) {
        let v = f.attribute("value").unwrap_or_default();
        match f.tag_name().name() {
            "enumeration" => t.enumeration.push(v.to_owned()),
            "length" => {
                t.min_length = v.parse().ok();
                t.max_length = t.min_length;
            }
            "minLength" => t.min_length = v.parse().ok(),
            "maxLength" => t.max_length = v.parse().ok(),
            "pattern" => {
                t.pattern_re = Pattern::compile(v);
                t.pattern = t.pattern_re.is_some().then(|| v.to_owned());
            }
            "minInclusive" => t.min_inclusive = Some(v.to_owned()),
            "maxInclusive" => t.max_inclusive = Some(v.to_owned()),
            _ => {}
        }
    }
}
