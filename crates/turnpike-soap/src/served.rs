//! What `?wsdl` serves: the root WSDL and, for a WSDL imported with the files it imports,
//! each of those files under the API (`?xsd=PATH`, PATH as the import named it relative
//! to the root). In every served document the SOAP port addresses point at the API, and
//! each `location` (`wsdl:import`) and `schemaLocation` (`xs:import`, `xs:include`,
//! `xs:redefine`) that names an imported file points at that file's URL under the API:
//! a SOAP client that loads `?wsdl` finds every file through the gateway. Only those
//! attribute values change; the rest of each text is kept byte for byte.

use std::ops::Range;

use crate::docs::{Documents, WSDL_NS};
use crate::error::MapError;
use crate::xml::{self, escape_into, Limits, XSD_NS};

/// The query parameter naming an imported file (`?xsd=xsd/types.xsd`; `?wsdl=PATH` too).
pub const FILE_PARAM: &str = "xsd";

/// `name`'s text as served under `address` (the API's URL as the client reached it):
/// `None` when the API has no such document.
pub fn served(
    docs: &Documents,
    root: &str,
    name: &str,
    address: &str,
) -> Option<Result<String, MapError>> {
    let text = docs.get(name)?;
    Some(rewrite(text, Some((docs, root, name)), address))
}

/// The URL of an imported file under the API.
fn file_url(address: &str, root: &str, target: &str) -> String {
    if target == root {
        return format!("{address}?wsdl");
    }
    let mut out = format!("{address}?{FILE_PARAM}=");
    for b in target.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` with its SOAP addresses set to `address` and, given the document set, the root's
/// name and the text's own name, its references to files of the set set to their URLs.
pub(crate) fn rewrite(
    text: &str,
    set: Option<(&Documents, &str, &str)>,
    address: &str,
) -> Result<String, MapError> {
    let doc = xml::parse(text, Limits::DEFINITIONS)?;
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for n in doc.descendants().filter(|n| n.is_element()) {
        let attr = match (n.tag_name().namespace(), n.tag_name().name()) {
            (Some(crate::wsdl::WSDL_SOAP11_NS | crate::wsdl::WSDL_SOAP12_NS), "address") => {
                if let Some(a) = n.attribute_node("location") {
                    edits.push((a.range_value(), address.to_string()));
                }
                continue;
            }
            (Some(WSDL_NS), "import") => "location",
            (Some(XSD_NS), "import" | "include" | "redefine") => "schemaLocation",
            _ => continue,
        };
        let (Some((docs, root, name)), Some(a)) = (set, n.attribute_node(attr)) else {
            continue;
        };
        if let Some(target) = docs.resolve(name, a.value()) {
            edits.push((a.range_value(), file_url(address, root, &target)));
        }
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len() + 64 * edits.len());
    let mut at = 0;
    for (r, value) in edits {
        out.push_str(&text[at..r.start]);
        escape_into(&mut out, &value);
        at = r.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "service.wsdl";

    fn set() -> Documents {
        let mut d = Documents::default();
        d.insert(ROOT, r#"<definitions xmlns="http://schemas.xmlsoap.org/wsdl/" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"><import namespace="urn:m" location="parts/messages.wsdl"/><types><xs:schema><xs:import namespace="urn:t" schemaLocation="xsd/types.xsd"/></xs:schema></types><service name="S"><port name="P" binding="b"><soap:address location="http://backend:9/x"/></port></service></definitions>"#);
        d.insert("xsd/types.xsd", r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"><xs:include schemaLocation="common v2.xsd"/><xs:import schemaLocation="http://elsewhere/unknown.xsd"/></xs:schema>"#);
        d.insert(
            "xsd/common v2.xsd",
            r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"/>"#,
        );
        d.insert(
            "parts/messages.wsdl",
            r#"<definitions xmlns="http://schemas.xmlsoap.org/wsdl/"/>"#,
        );
        d
    }

    #[test]
    fn every_reference_to_an_imported_file_points_under_the_api() {
        let d = set();
        let root = served(&d, ROOT, ROOT, "http://gw/s/v1")
            .expect("root")
            .expect("parses");
        assert!(
            root.contains(r#"location="http://gw/s/v1?xsd=parts/messages.wsdl""#),
            "{root}"
        );
        assert!(
            root.contains(r#"schemaLocation="http://gw/s/v1?xsd=xsd/types.xsd""#),
            "{root}"
        );
        assert!(
            root.contains(r#"<soap:address location="http://gw/s/v1"/>"#),
            "{root}"
        );
        let types = served(&d, ROOT, "xsd/types.xsd", "http://gw/s/v1")
            .expect("file")
            .expect("parses");
        assert!(
            types.contains(r#"schemaLocation="http://gw/s/v1?xsd=xsd/common%20v2.xsd""#),
            "{types}"
        );
        // A reference to no uploaded file is kept as written.
        assert!(types.contains("http://elsewhere/unknown.xsd"), "{types}");
        assert!(served(&d, ROOT, "nope.xsd", "http://gw").is_none());
    }
}
