//! Loads the WSDL test data (tests/data/wsdl/<folder>/, copied verbatim from public
//! repositories; see SOURCES.md there) as document sets.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use turnpike_soap::Documents;

/// (folder, root WSDL) of every test WSDL.
pub const ROOTS: [(&str, &str); 10] = [
    ("wso2-calculator", "calculator.wsdl"),
    ("spring-countries", "countries.wsdl"),
    ("wso2-phoneverify", "phoneverify.wsdl"),
    ("cxf-hello-world-soap12", "hello_world_soap12.wsdl"),
    ("wso2-soap-to-rest-complex", "arrays.wsdl"),
    ("wso2-soap-to-rest-complex", "choice.wsdl"),
    ("wso2-soap-to-rest-complex", "groups.wsdl"),
    ("wso2-soap-to-rest-complex", "nested.wsdl"),
    ("cxf-choice-group", "hello_world.wsdl"),
    ("../rpc", "quotes.wsdl"),
];

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/wsdl")
}

/// Every .wsdl and .xsd file of `folder`, named by file name.
pub fn folder(folder: &str) -> Documents {
    let mut docs = Documents::default();
    let dir = data_dir().join(folder);
    for entry in std::fs::read_dir(&dir).expect("test data folder") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name.ends_with(".wsdl") || name.ends_with(".xsd") {
            docs.insert(&name, std::fs::read_to_string(&path).expect("readable"));
        }
    }
    docs
}

pub fn import(folder_name: &str, root: &str) -> turnpike_soap::Wsdl {
    turnpike_soap::import(&folder(folder_name), root)
        .unwrap_or_else(|e| panic!("{folder_name}/{root}: {e}"))
}

/// Every root WSDL under tests/data (a `.wsdl` file that declares a `service`), as
/// (folder relative to tests/data/wsdl, file name): a WSDL added to the test data is
/// covered by the tests that walk this list without naming it anywhere.
pub fn discover() -> Vec<(String, String)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out = Vec::new();
    let mut dirs = vec![data.clone()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let is_wsdl = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("wsdl"));
            let text = if is_wsdl {
                std::fs::read_to_string(&path).unwrap_or_default()
            } else {
                continue;
            };
            if !(text.contains("<service") || text.contains(":service")) {
                continue;
            }
            let parent = path.parent().unwrap_or(&data);
            let rel = parent
                .strip_prefix(&data)
                .unwrap_or(parent)
                .to_string_lossy()
                .into_owned();
            // Folders are named relative to tests/data/wsdl, like ROOTS.
            let folder = match rel.strip_prefix("wsdl/") {
                Some(f) => f.to_owned(),
                None => format!("../{rel}"),
            };
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((folder, name));
        }
    }
    out.sort();
    out
}
