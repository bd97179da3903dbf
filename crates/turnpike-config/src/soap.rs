//! The `soap:` section of APIs: imports each WSDL once per compile (a WSDL that does not
//! import or names a port it lacks is a problem at `apis[i].soap`), fills in the
//! resources a SOAP API leaves out (`POST /*` and `GET /*` for pass-through, one per
//! operation for SOAP-to-REST) and builds the API's SOAP policy. What the WSDL has that
//! cannot be mapped is logged (the import API reports it to the publisher).

use std::sync::Arc;

use turnpike_model::soap::{SoapApiType, SoapSpec};
use turnpike_model::{GatewayFile, ResourceSpec};
use turnpike_policy::{BuildCx, Policy, PolicyKind, Stage};
use turnpike_soap::api::SoapApi;
use turnpike_soap::policy::{SoapProxyPolicy, SoapRestPolicy};

use crate::error::Problem;

/// Every API's compiled `soap:` section (indexed like `file.apis`), prepared once per
/// file before the chains are built.
pub(crate) struct SoapApis(pub(crate) Vec<Option<Arc<SoapApi>>>);

/// The SOAP kind: a pass-through's envelope and Faults first in the chain (so auth's
/// and throttling's refusals become Faults), a SOAP-to-REST mapper after mediation's
/// request side (on admitted requests only; mediation sees the REST JSON). Its WSDL is
/// compiled, and its problems reported, by [`expand`].
pub(crate) struct Soap;

impl PolicyKind for Soap {
    const NAME: &'static str = "soap";
    type Spec = SoapSpec;

    fn stage(spec: &SoapSpec) -> Stage {
        match spec.api_type {
            SoapApiType::Soap => Stage::Envelope,
            SoapApiType::SoapToRest => Stage::Mapper,
        }
    }

    fn build(spec: &SoapSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let api = cx.scratch.get::<SoapApis>()?.0.get(cx.api)?.clone()?;
        Some(match spec.api_type {
            SoapApiType::Soap => Arc::new(SoapProxyPolicy {
                api,
                offload: cx.runtime.offload().clone(),
            }),
            SoapApiType::SoapToRest => Arc::new(SoapRestPolicy { api }),
        })
    }
}

/// Compiles every API's `soap:` section (indexed like `file.apis`) and fills in the
/// resources a SOAP API leaves out: the first step of a compile, since routing needs
/// the resources.
pub(crate) fn expand(file: &mut GatewayFile, problems: &mut Vec<Problem>) -> SoapApis {
    let apis = file
        .apis
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
            Some(Arc::new(compiled))
        })
        .collect();
    SoapApis(apis)
}

fn resource(path: &str, methods: &[&str]) -> ResourceSpec {
    ResourceSpec {
        path: path.to_owned(),
        methods: methods.iter().map(|m| (*m).to_owned()).collect(),
        ..ResourceSpec::default()
    }
}
