//! In-scope namespace declarations: a stack of bindings with a hash index from prefix to
//! its newest binding (so resolving a prefix costs the same with 3 or 3,000 declarations
//! in scope), and URIs interned to ids (so two expanded names compare in constant time,
//! whatever the URIs' length).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::names::bad;
use crate::XmlError;

pub(crate) const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// The id of the empty URI (an undeclared default namespace) and of the `xml` prefix's.
pub(crate) const NO_NS: u32 = 0;
pub(crate) const XML_ID: u32 = 1;

struct Binding<'a> {
    prefix: &'a str,
    uri: u32,
    /// The binding of the same prefix this one hides, restored when it goes.
    shadows: Option<u32>,
}

pub(crate) struct Namespaces<'a> {
    bindings: Vec<Binding<'a>>,
    newest: HashMap<&'a str, u32>,
    uris: Vec<Cow<'a, str>>,
    ids: HashMap<Cow<'a, str>, u32>,
}

impl<'a> Namespaces<'a> {
    pub(crate) fn new() -> Self {
        Namespaces {
            bindings: Vec::new(),
            newest: HashMap::new(),
            uris: vec![Cow::Borrowed(""), Cow::Borrowed(XML_NS)],
            ids: HashMap::new(),
        }
    }

    /// How many bindings are in scope: the mark [`Self::truncate`] returns to.
    pub(crate) fn len(&self) -> usize {
        self.bindings.len()
    }

    /// The URI of an id.
    pub(crate) fn uri(&self, id: u32) -> Option<Cow<'a, str>> {
        match id {
            NO_NS => None,
            id => self.uris.get(id as usize).cloned(),
        }
    }

    /// Binds `prefix` ("" for the default namespace) to `uri`; returns whether the
    /// binding it hides had the same URI (a redundant declaration).
    pub(crate) fn declare(&mut self, prefix: &'a str, uri: Cow<'a, str>) -> Result<bool, XmlError> {
        let reserved = uri == XML_NS || uri == XMLNS_NS;
        let ok = match prefix {
            "xml" => uri == XML_NS,
            _ => !reserved,
        };
        if !ok {
            return Err(bad("a reserved or empty namespace declaration"));
        }
        let id = self.intern(uri);
        let shadows = self.newest.get(prefix).copied();
        let before = shadows.map_or(if prefix == "xml" { XML_ID } else { NO_NS }, |b| {
            self.bindings[b as usize].uri
        });
        let at = self.bindings.len() as u32;
        self.bindings.push(Binding {
            prefix,
            uri: id,
            shadows,
        });
        self.newest.insert(prefix, at);
        Ok(before == id)
    }

    fn intern(&mut self, uri: Cow<'a, str>) -> u32 {
        match uri.as_ref() {
            "" => return NO_NS,
            XML_NS => return XML_ID,
            _ => {}
        }
        if let Some(id) = self.ids.get(uri.as_ref()) {
            return *id;
        }
        let id = self.uris.len() as u32;
        self.uris.push(uri.clone());
        self.ids.insert(uri, id);
        id
    }

    /// Drops the bindings made after `mark` (the declarations of elements that ended).
    pub(crate) fn truncate(&mut self, mark: usize) {
        while self.bindings.len() > mark {
            let Some(b) = self.bindings.pop() else { break };
            match b.shadows {
                Some(prev) => self.newest.insert(b.prefix, prev),
                None => self.newest.remove(b.prefix),
            };
        }
    }

    /// The namespace id of a prefix; an element's unprefixed name takes the default
    /// namespace, an attribute's none.
    pub(crate) fn resolve(&self, prefix: Option<&str>, element: bool) -> Result<u32, XmlError> {
        let wanted = match prefix {
            None if !element => return Ok(NO_NS),
            None => "",
            Some("xml") => return Ok(XML_ID),
            Some("xmlns") => return Err(bad("the xmlns prefix on an element")),
            Some(p) => p,
        };
        match self.newest.get(wanted) {
            Some(&b) => Ok(self.bindings[b as usize].uri),
            None if wanted.is_empty() => Ok(NO_NS),
            None => Err(bad("an unbound namespace prefix")),
        }
    }
}
