//! The `soap:` section of APIs: imports each WSDL once per compile (a WSDL that does not
//! import or names a port it lacks is a problem at `apis[i].soap`), fills in the
//! resources a SOAP API leaves out (`POST /*` and `GET /*` for pass-through, one per
//! operation for SOAP-to-REST) and builds the API's SOAP policy. What the WSDL has that
//! cannot be mapped is logged (the import API reports it to the publisher).

use std::sync::Arc;

use turnpike_model::soap::SoapApiType;
use turnpike_model::{GatewayFile, ResourceSpec};
use turnpike_policy::{Policy, Runtime};
use turnpike_soap::api::SoapApi;
use turnpike_soap::policy::{SoapProxyPolicy, SoapRestPolicy};

use crate::error::Problem;

/// Where an API's SOAP policy runs.
pub(crate) enum SoapStage {
    /// Pass-through: at the edge, so auth's and throttling's refusals become Faults.
    Edge(Arc<dyn Policy>),
    /// SOAP-to-REST: after auth and throttling, on admitted requests only.
    Late(Arc<dyn Policy>),
}

/// Compiles every API's `soap:` section (indexed like `file.apis`) and fills in the
/// resources a SOAP API leaves out.
pub(crate) fn expand(
    file: &mut GatewayFile,
    runtime: &Runtime,
    problems: &mut Vec<Problem>,
) -> Vec<Option<SoapStage>> {
    file.apis
        .iter_mut()
        .enumerate()
        .map(|(i, api)| {
            let spec = api.soap.as_ref()?;
            let (compiled, unmapped) = match SoapApi::compile(spec) {
                Ok(c) => c,
                Err(e) => {
                    problems.push(Problem::new(format!("apis[{i}].soap"), e.to_string()));
                    return None;
                }
            };
            for p in &unmapped {
                tracing::debug!(api = %api.name, operation = ?p.operation, subject = %p.subject, why = %p.why, "WSDL construct not mapped");
            }
            if api.resources.is_empty() {
                api.resources = match spec.api_type {
                    SoapApiType::Soap => vec![resource("/*", &["POST", "GET"])],
                    SoapApiType::SoapToRest => compiled
                        .rest_resources()
                        .into_iter()
                        .map(|(path, method)| resource(&path, &[method]))
                        .collect(),
                };
            }
            let compiled = Arc::new(compiled);
            Some(match spec.api_type {
                SoapApiType::Soap => SoapStage::Edge(Arc::new(SoapProxyPolicy {
                    api: compiled,
                    offload: runtime.offload().clone(),
                })),
                SoapApiType::SoapToRest => SoapStage::Late(Arc::new(SoapRestPolicy { api: compiled })),
            })
        })
        .collect()
}

fn resource(path: &str, methods: &[&str]) -> ResourceSpec {
    ResourceSpec {
        path: path.to_owned(),
        methods: methods.iter().map(|m| (*m).to_owned()).collect(),
        ..ResourceSpec::default()
    }
}
