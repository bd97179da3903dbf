//! The global declarations of every schema in an import (elements, types, groups,
//! attributes, attribute groups), keyed by qualified name, with the schema settings each
//! was declared under.

use std::collections::HashMap;

use roxmltree::Node;

use crate::docs::{schemas, Parsed};
use crate::xml::{self, QName, XSD_NS};

/// Settings of the `xs:schema` a declaration sits in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaInfo {
    pub tns: Option<String>,
    pub qualified_elements: bool,
    pub qualified_attributes: bool,
}

/// A global declaration and its schema.
#[derive(Clone, Copy)]
pub(crate) struct Decl<'x, 'a, 'i> {
    pub node: Node<'a, 'i>,
    pub info: &'x SchemaInfo,
}

#[derive(Default)]
pub(crate) struct Index<'a, 'i> {
    infos: Vec<SchemaInfo>,
    pub elements: HashMap<QName, (Node<'a, 'i>, usize)>,
    pub types: HashMap<QName, (Node<'a, 'i>, usize)>,
    pub groups: HashMap<QName, (Node<'a, 'i>, usize)>,
    pub attributes: HashMap<QName, (Node<'a, 'i>, usize)>,
    pub attribute_groups: HashMap<QName, (Node<'a, 'i>, usize)>,
}

impl<'a, 'i> Index<'a, 'i> {
    pub fn build(files: &'a [Parsed<'i>]) -> Index<'a, 'i> {
        let mut index = Index::default();
        for file in files {
            for schema in schemas(file.doc.root_element()) {
                index.add_schema(schema, file.chameleon.as_deref());
            }
        }
        index
    }

    fn add_schema(&mut self, schema: Node<'a, 'i>, chameleon: Option<&str>) {
        let tns = schema
            .attribute("targetNamespace")
            .or(chameleon)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        let info = SchemaInfo {
            tns: tns.clone(),
            qualified_elements: schema.attribute("elementFormDefault") == Some("qualified"),
            qualified_attributes: schema.attribute("attributeFormDefault") == Some("qualified"),
        };
        let at = self.infos.len();
        self.infos.push(info);
        for child in xml::elements(schema).filter(|c| c.tag_name().namespace() == Some(XSD_NS)) {
            let Some(name) = child.attribute("name") else {
                continue;
            };
            let q = QName::new(tns.as_deref(), name);
            let map = match child.tag_name().name() {
                "element" => &mut self.elements,
                "complexType" | "simpleType" => &mut self.types,
                "group" => &mut self.groups,
                "attribute" => &mut self.attributes,
                "attributeGroup" => &mut self.attribute_groups,
                _ => continue,
            };
            // The first declaration wins, as a schema processor reading in order would.
            map.entry(q).or_insert((child, at));
        }
    }

    pub fn info(&self, at: usize) -> &SchemaInfo {
        &self.infos[at]
    }

    pub fn decl<'x>(
        &'x self,
        map: &HashMap<QName, (Node<'a, 'i>, usize)>,
        q: &QName,
    ) -> Option<Decl<'x, 'a, 'i>> {
        // Strictly, an unprefixed reference in a schema without a default namespace
        // names no namespace; schemas written for lenient tools (WSO2's own fixtures)
        // mean their target namespace, so a miss falls back to the local name.
        let found = map.get(q).or_else(|| {
            q.ns.is_none()
                .then(|| map.iter().find(|(k, _)| k.local == q.local).map(|(_, v)| v))
                .flatten()
        });
        found.map(|&(node, at)| Decl {
            node,
            info: self.info(at),
        })
    }
}
