//! SOAP pass-through support: the checks the gateway makes before forwarding an envelope
//! (well-formed, a SOAP version the binding speaks, a Body), operation lookup by
//! `SOAPAction` (1.1 header), the `action` parameter (1.2 Content-Type) or the first body
//! element, and Fault envelopes for gateway errors in the binding's version.

use std::borrow::Cow;

use crate::error::MapError;
use crate::scan;
use crate::wsdl::{Operation, Port, SoapVersion};
use crate::xml::{escape_into, Limits};

/// What the checks learned about a request envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeInfo {
    pub version: SoapVersion,
    /// Namespace and local name of the first element in the Body, if any.
    pub first_body_element: Option<(Option<String>, String)>,
}

/// Checks that `text` is a well-formed SOAP envelope of one of `versions`, with a Body.
pub fn check(text: &str, versions: &[SoapVersion]) -> Result<EnvelopeInfo, MapError> {
    // One pass, no tree: this runs on every pass-through request.
    let facts = scan::scan(text, Limits::MESSAGES, |ns| {
        SoapVersion::from_envelope_ns(ns).map(SoapVersion::envelope_ns)
    })?;
    let version = facts
        .root
        .as_ref()
        .filter(|(_, local)| *local == "Envelope")
        .and_then(|(ns, _)| ns.as_deref().and_then(SoapVersion::from_envelope_ns))
        .ok_or_else(|| {
            MapError::NotEnvelope("the root is not a SOAP 1.1 or 1.2 Envelope".into())
        })?;
    if !facts.body_found {
        return Err(MapError::NotEnvelope("no Body".into()));
    }
    if !versions.contains(&version) {
        return Err(MapError::NotEnvelope(format!(
            "SOAP {} envelope, but this API's binding speaks SOAP {}",
            version_name(version),
            versions
                .iter()
                .map(|v| version_name(*v))
                .collect::<Vec<_>>()
                .join(" and ")
        )));
    }
    let first_body_element = facts
        .first_body_element
        .map(|(ns, local)| (ns.map(Cow::into_owned), local.to_owned()));
    Ok(EnvelopeInfo {
        version,
        first_body_element,
    })
}

fn version_name(v: SoapVersion) -> &'static str {
    match v {
        SoapVersion::V11 => "1.1",
        SoapVersion::V12 => "1.2",
    }
}

/// The SOAP action a request names: the `SOAPAction` header (quotes removed) or the
/// `action` parameter of a SOAP 1.2 `Content-Type`.
pub fn request_action<'h>(
    soap_action_header: Option<&'h str>,
    content_type: Option<&'h str>,
) -> Option<&'h str> {
    if let Some(a) = soap_action_header {
        return Some(a.trim().trim_matches('"'));
    }
    let ct = content_type?;
    ct.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("action")
            .then(|| v.trim().trim_matches('"'))
    })
}

/// The operation of `port` a request is for: by a non-empty action first, then by the
/// first body element (the input's element, or the operation name in rpc style).
pub fn find_operation<'p>(
    port: &'p Port,
    action: Option<&str>,
    info: &EnvelopeInfo,
) -> Option<&'p Operation> {
    if let Some(a) = action.filter(|a| !a.is_empty()) {
        if let Some(op) = port.operations.iter().find(|o| o.soap_action == a) {
            return Some(op);
        }
    }
    let (ns, local) = info.first_body_element.as_ref()?;
    port.operations.iter().find(|o| match o.style {
        crate::wsdl::Style::Rpc => &o.name == local,
        crate::wsdl::Style::Document => o.input.parts.first().is_some_and(|p| {
            &p.element.name.local == local && (p.element.name.ns == *ns || ns.is_none())
        }),
    })
}

/// Who a fault blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// `Client` (1.1) / `Sender` (1.2).
    Client,
    /// `Server` (1.1) / `Receiver` (1.2).
    Server,
}

/// A Fault envelope of `version` carrying a gateway error: `reason` as the fault string,
/// and the gateway's `code`, HTTP `status` and `request_id` in the detail.
pub fn fault_envelope(
    version: SoapVersion,
    blame: Blame,
    reason: &str,
    code: &str,
    status: u16,
    request_id: &str,
) -> String {
    let mut out = String::with_capacity(512);
    out.push_str("<soapenv:Envelope xmlns:soapenv=\"");
    out.push_str(version.envelope_ns());
    out.push_str("\"><soapenv:Body><soapenv:Fault>");
    let detail = |out: &mut String| {
        out.push_str("<turnpike:error xmlns:turnpike=\"urn:turnpike:gateway\"><turnpike:code>");
        escape_into(out, code);
        out.push_str("</turnpike:code><turnpike:status>");
        out.push_str(&status.to_string());
        out.push_str("</turnpike:status><turnpike:request_id>");
        escape_into(out, request_id);
        out.push_str("</turnpike:request_id></turnpike:error>");
    };
    match version {
        SoapVersion::V11 => {
            out.push_str("<faultcode>soapenv:");
            out.push_str(if blame == Blame::Client {
                "Client"
            } else {
                "Server"
            });
            out.push_str("</faultcode><faultstring>");
            escape_into(&mut out, reason);
            out.push_str("</faultstring><detail>");
            detail(&mut out);
            out.push_str("</detail>");
        }
        SoapVersion::V12 => {
            out.push_str("<soapenv:Code><soapenv:Value>soapenv:");
            out.push_str(if blame == Blame::Client {
                "Sender"
            } else {
                "Receiver"
            });
            out.push_str(
                "</soapenv:Value></soapenv:Code><soapenv:Reason><soapenv:Text xml:lang=\"en\">",
            );
            escape_into(&mut out, reason);
            out.push_str("</soapenv:Text></soapenv:Reason><soapenv:Detail>");
            detail(&mut out);
            out.push_str("</soapenv:Detail>");
        }
    }
    out.push_str("</soapenv:Fault></soapenv:Body></soapenv:Envelope>");
    out
}

/// The WSDL text with every SOAP port address replaced by `address` (what `?wsdl` on a
/// gateway API serves). Only `location` attributes of `soap:address` / `soap12:address`
/// elements change; the rest of the text is kept byte for byte.
pub fn rewrite_addresses(wsdl_text: &str, address: &str) -> Result<String, MapError> {
    crate::served::rewrite(wsdl_text, None, address)
}
