//! A SOAP API compiled from its `soap:` section once per snapshot: the imported WSDL,
//! the chosen port, the operations by action, by body element and by REST path, and
//! the SOAP versions a pass-through accepts.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use turnpike_model::soap::{SoapApiType, SoapSpec};

use crate::docs::Documents;
use crate::error::{ImportError, ImportFinding};
use crate::wsdl::{import, Operation, Port, SoapVersion, Wsdl};
use crate::xsd::model::TypeModel;

/// The name the root WSDL has among the API's documents.
pub const ROOT: &str = "service.wsdl";

/// A compiled SOAP API (shared by the snapshot's policies).
#[derive(Debug)]
pub struct SoapApi {
    pub api_type: SoapApiType,
    /// The root WSDL as given (what `?wsdl` serves, addresses rewritten).
    pub wsdl_text: Arc<str>,
    /// The root WSDL (as [`ROOT`]) and the files it imports: what `?wsdl` and
    /// `?xsd=PATH` serve ([`crate::served`]).
    pub documents: Documents,
    wsdl: Wsdl,
    port: usize,
    /// Pass-through: the versions of the chosen port and of the service's other SOAP
    /// ports bound to the same operations.
    pub versions: Vec<SoapVersion>,
    /// SOAP-to-REST: `/{operation}` -> operation index.
    by_path: HashMap<String, usize>,
    /// Operations called with GET.
    get_ops: Vec<bool>,
}

impl SoapApi {
    /// Imports the WSDL of `spec` and picks its port. The problems are what could not be
    /// mapped (for the publisher; the API still works for the rest).
    pub fn compile(spec: &SoapSpec) -> Result<(SoapApi, Vec<ImportFinding>), ImportError> {
        let mut docs = Documents::default();
        for (name, text) in &spec.files {
            docs.insert(name, text.as_str());
        }
        docs.insert(ROOT, spec.wsdl.as_str());
        let wsdl = import(&docs, ROOT)?;
        let chosen = wsdl.port(spec.service.as_deref(), spec.port.as_deref())?;
        let port = wsdl
            .ports
            .iter()
            .position(|p| std::ptr::eq(p, chosen))
            .unwrap_or_default();
        let mut versions = vec![chosen.version];
        for other in wsdl.ports.iter().filter(|p| p.service == chosen.service) {
            let same_ops = other.operations.len() == chosen.operations.len()
                && other
                    .operations
                    .iter()
                    .zip(&chosen.operations)
                    .all(|(a, b)| a.name == b.name);
            if same_ops && !versions.contains(&other.version) {
                versions.push(other.version);
            }
        }
        let by_path = chosen
            .operations
            .iter()
            .enumerate()
            .map(|(i, op)| (format!("/{}", op.name), i))
            .collect();
        let mut problems = wsdl.problems.clone();
        for name in &spec.get_operations {
            if !chosen.operations.iter().any(|o| &o.name == name) {
                problems.push(ImportFinding {
                    operation: Some(name.clone()),
                    subject: "get_operations".into(),
                    why: "no such operation in the chosen port: ignored".into(),
                });
            }
        }
        let get_ops = chosen
            .operations
            .iter()
            .map(|o| spec.get_operations.contains(&o.name))
            .collect();
        Ok((
            SoapApi {
                api_type: spec.api_type,
                wsdl_text: spec.wsdl.as_str().into(),
                documents: docs,
                wsdl,
                port,
                versions,
                by_path,
                get_ops,
            },
            problems,
        ))
    }

    pub fn port(&self) -> &Port {
        &self.wsdl.ports[self.port]
    }

    pub fn types(&self) -> &TypeModel {
        &self.wsdl.types
    }

    pub fn wsdl(&self) -> &Wsdl {
        &self.wsdl
    }

    /// The binding's SOAP version (what SOAP-to-REST sends, and pass-through faults use
    /// when the request's version is unknown).
    pub fn version(&self) -> SoapVersion {
        self.port().version
    }

    /// The operation a SOAP-to-REST path names (`/{operation}`), and whether it is
    /// called with GET.
    pub fn rest_operation(&self, path: &str) -> Option<(&Operation, bool)> {
        let path = path
            .strip_suffix('/')
            .filter(|p| !p.is_empty())
            .unwrap_or(path);
        let i = *self.by_path.get(path)?;
        Some((&self.port().operations[i], self.get_ops[i]))
    }

    /// The OpenAPI 3 document of this API published as REST ([`crate::schema::openapi`]),
    /// with the operations called by GET taking their input from the query string: one
    /// parameter per property of the input message's schema.
    pub fn openapi(&self, title: &str, version: &str) -> Value {
        let mut doc = crate::schema::openapi(self.types(), self.port(), title, version);
        let components = doc["components"]["schemas"].clone();
        for (op, _) in self
            .port()
            .operations
            .iter()
            .zip(&self.get_ops)
            .filter(|(_, g)| **g)
        {
            let Some(item) = doc["paths"]
                .get_mut(format!("/{}", op.name))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let Some(mut call) = item.remove("post") else {
                continue;
            };
            let input = call
                .pointer("/requestBody/content/application~1json/schema")
                .cloned()
                .unwrap_or_default();
            let input = match input.get("$ref").and_then(Value::as_str) {
                Some(r) => components[r.trim_start_matches("#/components/schemas/")].clone(),
                None => input,
            };
            let required = input["required"].as_array().cloned().unwrap_or_default();
            let params: Vec<Value> = input["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, schema)| {
                    json!({"name": name, "in": "query", "schema": schema,
                           "required": required.contains(&Value::String(name.clone()))})
                })
                .collect();
            if let Some(o) = call.as_object_mut() {
                o.remove("requestBody");
                o.insert("parameters".into(), Value::Array(params));
            }
            item.insert("get".into(), call);
        }
        doc
    }

    /// The REST resources of a SOAP-to-REST API: `(path, method)` per operation.
    pub fn rest_resources(&self) -> Vec<(String, &'static str)> {
        self.port()
            .operations
            .iter()
            .zip(&self.get_ops)
            .map(|(op, get)| (format!("/{}", op.name), if *get { "GET" } else { "POST" }))
            .collect()
    }
}
