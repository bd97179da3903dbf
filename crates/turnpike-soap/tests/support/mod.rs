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
