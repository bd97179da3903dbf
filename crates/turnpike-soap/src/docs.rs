//! The uploaded files of one import (a WSDL and the WSDLs and XSDs it imports, given as
//! a set of named documents, e.g. unpacked from a zip) and the walk that parses every
//! file the root reaches through `wsdl:import`, `xs:import`, `xs:include` and
//! `xs:redefine`, each once.

use std::collections::{BTreeMap, HashMap};

use roxmltree::{Document, Node};

use crate::error::{ImportError, ImportFinding};
use crate::xml::{self, Limits, XSD_NS};

/// Namespace of WSDL 1.1.
pub const WSDL_NS: &str = "http://schemas.xmlsoap.org/wsdl/";

/// Most files one import may reach.
pub const MAX_FILES: usize = 256;

/// Named documents; names are relative paths with `/` separators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Documents {
    files: BTreeMap<String, String>,
}

impl Documents {
    /// One WSDL with everything inline.
    pub fn single(name: &str, text: impl Into<String>) -> Documents {
        let mut d = Documents::default();
        d.insert(name, text);
        d
    }

    pub fn insert(&mut self, name: &str, text: impl Into<String>) {
        self.files.insert(normalize(name), text.into());
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.files.get(&normalize(name)).map(String::as_str)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The file a `location` written in `from` points to: a path relative to `from`'s
    /// folder, or for an absolute URL the uploaded file of the same path or, failing
    /// that, the same file name.
    pub fn resolve(&self, from: &str, location: &str) -> Option<String> {
        if let Some((_, rest)) = location.split_once("://") {
            let path = rest.split_once('/').map_or("", |(_, p)| p);
            let path = path.split(['?', '#']).next().unwrap_or_default();
            if self.files.contains_key(&normalize(path)) {
                return Some(normalize(path));
            }
            let file = path.rsplit('/').next().unwrap_or_default();
            return self
                .files
                .keys()
                .find(|k| k.rsplit('/').next() == Some(file))
                .cloned();
        }
        let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
        let joined = if dir.is_empty() {
            location.to_owned()
        } else {
            format!("{dir}/{location}")
        };
        let name = normalize(&joined);
        self.files.contains_key(&name).then_some(name)
    }
}

/// `a/./b/../c` -> `a/c`; leading `/` and `./` dropped.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// One parsed file of the set.
pub(crate) struct Parsed<'i> {
    pub name: String,
    pub doc: Document<'i>,
    /// The target namespace a chameleon include takes from its includer.
    pub chameleon: Option<String>,
}

/// Parses the root and everything it reaches.
pub(crate) fn load<'i>(
    set: &'i Documents,
    root: &str,
    problems: &mut Vec<ImportFinding>,
) -> Result<Vec<Parsed<'i>>, ImportError> {
    let mut out: Vec<Parsed<'i>> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut queue = vec![(normalize(root), None::<String>)];
    while let Some((name, chameleon)) = queue.pop() {
        if seen.contains_key(&name) {
            continue;
        }
        if out.len() >= MAX_FILES {
            return Err(ImportError::TooManyFiles(MAX_FILES));
        }
        let text = set
            .get(&name)
            .ok_or_else(|| ImportError::MissingFile(name.clone()))?;
        let doc = xml::parse(text, Limits::DEFINITIONS).map_err(|source| ImportError::Xml {
            file: name.clone(),
            source,
        })?;
        let mut next = Vec::new();
        for (location, include_tns) in references(&doc) {
            match set.resolve(&name, &location) {
                Some(target) => next.push((target, include_tns)),
                None => problems.push(ImportFinding {
                    operation: None,
                    subject: location.clone(),
                    why: format!(
                        "imported by {name} but not in the uploaded files: the types it declares are unmapped (upload a zip with it)"
                    ),
                }),
            }
        }
        seen.insert(name.clone(), out.len());
        out.push(Parsed {
            name,
            doc,
            chameleon,
        });
        queue.extend(next);
    }
    Ok(out)
}

/// Every `(location, tns for a chameleon include)` a document refers to.
fn references(doc: &Document<'_>) -> Vec<(String, Option<String>)> {
    let root = doc.root_element();
    let mut out = Vec::new();
    if root.tag_name().namespace() == Some(WSDL_NS) {
        for imp in xml::children_named(root, WSDL_NS, "import") {
            if let Some(loc) = imp.attribute("location") {
                out.push((loc.to_owned(), None));
            }
        }
    }
    for schema in schemas(root) {
        let tns = schema.attribute("targetNamespace").map(str::to_owned);
        for child in xml::elements(schema).filter(|c| c.tag_name().namespace() == Some(XSD_NS)) {
            let Some(loc) = child.attribute("schemaLocation") else {
                continue;
            };
            match child.tag_name().name() {
                "import" => out.push((loc.to_owned(), None)),
                "include" | "redefine" => out.push((loc.to_owned(), tns.clone())),
                _ => {}
            }
        }
    }
    out
}

/// The `xs:schema` elements of a document: the root itself, or those under
/// `wsdl:types`.
pub(crate) fn schemas<'a, 'i>(root: Node<'a, 'i>) -> Vec<Node<'a, 'i>> {
    if root.tag_name().namespace() == Some(XSD_NS) && root.tag_name().name() == "schema" {
        return vec![root];
    }
    xml::children_named(root, WSDL_NS, "types")
        .flat_map(|types| xml::children_named(types, XSD_NS, "schema").collect::<Vec<_>>())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_relative_and_by_url() {
        let mut d = Documents::default();
        d.insert("wsdl/a.wsdl", "<x/>");
        d.insert("xsd/b.xsd", "<x/>");
        d.insert("c.xsd", "<x/>");
        assert_eq!(
            d.resolve("wsdl/a.wsdl", "../xsd/b.xsd").as_deref(),
            Some("xsd/b.xsd")
        );
        assert_eq!(
            d.resolve("wsdl/a.wsdl", "./../c.xsd").as_deref(),
            Some("c.xsd")
        );
        assert_eq!(
            d.resolve("wsdl/a.wsdl", "http://h/svc/schemas/b.xsd?xsd=1")
                .as_deref(),
            Some("xsd/b.xsd")
        );
        assert_eq!(d.resolve("wsdl/a.wsdl", "missing.xsd"), None);
    }
}
