//! `turnpike echo --soap`: the ColdFusion paper's document/literal SOAP service. With
//! `--soap`, requests whose Content-Type is `text/xml` (SOAP 1.1) or
//! `application/soap+xml` (SOAP 1.2) are parsed as envelopes (DTDs refused) and answered
//! in the same version with `echoResponse` carrying the text of `echo/p`, so the response
//! size follows the request; `GET ...?wsdl` serves the service's WSDL
//! (`bench/soap/echo.wsdl`) with this server's address. `?fault=1` answers with a Fault.
//! Everything else is the plain echo. Also builds the envelopes the load generator sends.

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use quick_xml::events::Event;
use quick_xml::name::{Namespace, ResolveResult};
use quick_xml::NsReader;

/// The service's WSDL as shipped.
pub const WSDL: &str = include_str!("../../../bench/soap/echo.wsdl");
/// Namespace of the service's elements.
pub const NS: &str = "urn:tp:echo";
/// The `soapAction` of the one operation.
pub const ACTION: &str = "urn:tp:echo#echo";
/// Largest envelope read.
const MAX_ENVELOPE: usize = 64 << 20;

const SOAP11_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12_NS: &str = "http://www.w3.org/2003/05/soap-envelope";

/// Which SOAP version a request speaks, by its Content-Type.
pub fn version_of(content_type: Option<&HeaderValue>) -> Option<u8> {
    let ct = content_type?.to_str().ok()?;
    let media = ct.split(';').next()?.trim();
    if media.eq_ignore_ascii_case("text/xml") {
        Some(11)
    } else if media.eq_ignore_ascii_case("application/soap+xml") {
        Some(12)
    } else {
        None
    }
}

/// Whether the request asks for the WSDL (`?wsdl`, any case).
pub fn wants_wsdl<B>(req: &Request<B>) -> bool {
    req.uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.eq_ignore_ascii_case("wsdl")))
}

/// The WSDL with `soap:address` pointing at the host the client used.
pub fn wsdl_response<B>(req: &Request<B>) -> Response<Bytes> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let host: String = host
        .chars()
        .filter(|c| !matches!(c, '"' | '<' | '>' | '&'))
        .collect();
    let body = WSDL.replace("http://localhost:9000/soap", &format!("http://{host}/soap"));
    let mut resp = Response::new(Bytes::from(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/xml; charset=utf-8"),
    );
    resp
}

/// Answers one SOAP request of `version` (11 or 12).
pub async fn respond(req: Request<hyper::body::Incoming>, version: u8) -> Response<Bytes> {
    let fault = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "fault=1"));
    let body = match http_body_util::Limited::new(req.into_body(), MAX_ENVELOPE)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => return fault_response(version, true, &format!("reading the request: {e}")),
    };
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return fault_response(version, true, "the envelope is not UTF-8"),
    };
    let payload = match echo_text(text, version) {
        Ok(p) => p,
        Err(why) => return fault_response(version, true, &why),
    };
    if fault {
        return fault_response(version, false, payload);
    }
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str("<s:Envelope xmlns:s=\"");
    out.push_str(if version == 11 { SOAP11_NS } else { SOAP12_NS });
    out.push_str("\"><s:Body><e:echoResponse xmlns:e=\"urn:tp:echo\"><e:p>");
    out.push_str(payload);
    out.push_str("</e:p></e:echoResponse></s:Body></s:Envelope>");
    soap_response(version, StatusCode::OK, out)
}

/// The content of `Envelope/Body/echo/p` as it was written (already escaped: it goes
/// back out as it came), read with quick-xml's streaming reader (DTDs refused): a DOM
/// parse here made the echo, not the gateway, the bottleneck of `bench/soap.sh` at 5 KB.
fn echo_text(text: &str, version: u8) -> Result<&str, String> {
    let env_ns = if version == 11 { SOAP11_NS } else { SOAP12_NS };
    let path = [
        (env_ns, "Envelope"),
        (env_ns, "Body"),
        (NS, "echo"),
        (NS, "p"),
    ];
    let not_envelope = || format!("not a SOAP {}.{} Envelope", version / 10, version % 10);
    let mut r = NsReader::from_str(text);
    // Open elements, and how many of them are the start of `path`.
    let mut depth = 0usize;
    let mut matched = 0usize;
    let mut p_start = 0usize;
    loop {
        let (ns, ev) = r
            .read_resolved_event()
            .map_err(|e| format!("not well-formed: {e}"))?;
        let bound = match ns {
            ResolveResult::Bound(Namespace(n)) => Some(n),
            _ => None,
        };
        match ev {
            Event::DocType(_) => return Err("a DTD: refused".into()),
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                let next = path.get(matched).filter(|_| depth == matched);
                let is_next = next.is_some_and(|(want_ns, want)| {
                    bound == Some(*want_ns) && e.local_name().as_ref() == *want
                });
                if depth == 0 && !is_next {
                    return Err(not_envelope());
                }
                if depth == 2 && matched == 2 && !is_next {
                    return Err("the Body has no echo element".into());
                }
                if is_next {
                    matched += 1;
                    if matched == path.len() {
                        if empty {
                            return Ok("");
                        }
                        p_start = r.buffer_position() as usize;
                    }
                }
                if !empty {
                    depth += 1;
                }
            }
            Event::End(_) => {
                if matched == path.len() && depth == path.len() {
                    let end = r.buffer_position() as usize;
                    let close = text[..end].rfind("</").unwrap_or(end);
                    return Ok(&text[p_start..close.max(p_start)]);
                }
                if matched == 3 && depth == 3 {
                    return Err("echo has no p element".into());
                }
                depth = depth.saturating_sub(1);
                matched = matched.min(depth);
            }
            Event::Eof => {
                return Err(if matched == 0 {
                    not_envelope()
                } else {
                    "the Body has no echo element".into()
                })
            }
            _ => {}
        }
    }
}

/// Appends `text` escaped for element content.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
}

fn fault_response(version: u8, client: bool, reason: &str) -> Response<Bytes> {
    let mut out = String::new();
    if version == 11 {
        out.push_str("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><s:Fault><faultcode>s:");
        out.push_str(if client { "Client" } else { "Server" });
        out.push_str("</faultcode><faultstring>");
        escape_into(&mut out, reason);
        out.push_str("</faultstring></s:Fault></s:Body></s:Envelope>");
    } else {
        out.push_str("<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body><s:Fault><s:Code><s:Value>s:");
        out.push_str(if client { "Sender" } else { "Receiver" });
        out.push_str("</s:Value></s:Code><s:Reason><s:Text xml:lang=\"en\">");
        escape_into(&mut out, reason);
        out.push_str("</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>");
    }
    // SOAP 1.1 answers every fault with 500; SOAP 1.2 blames the sender with 400.
    let status = if version == 12 && client {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    soap_response(version, status, out)
}

fn soap_response(version: u8, status: StatusCode, body: String) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::from(body));
    *resp.status_mut() = status;
    let ct = if version == 11 {
        "text/xml; charset=utf-8"
    } else {
        "application/soap+xml; charset=utf-8"
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    resp
}

/// A request envelope of SOAP `version` (11 or 12) of about `n` bytes (never below the
/// smallest envelope, 1xx bytes): what `bench run --soap` sends.
pub fn envelope_payload(version: u8, n: usize) -> Bytes {
    let head = format!(
        "<s:Envelope xmlns:s=\"{}\"><s:Body><echo xmlns=\"urn:tp:echo\"><p>",
        if version == 11 { SOAP11_NS } else { SOAP12_NS }
    );
    let tail = "</p></echo></s:Body></s:Envelope>";
    let fill = n.saturating_sub(head.len() + tail.len());
    let mut v = Vec::with_capacity(head.len() + fill + tail.len());
    v.extend_from_slice(head.as_bytes());
    v.extend((0..fill).map(|i| b'a' + (i % 26) as u8));
    v.extend_from_slice(tail.as_bytes());
    Bytes::from(v)
}

/// The Content-Type (with the action) a SOAP request of `version` carries.
pub fn content_type(version: u8) -> &'static str {
    if version == 11 {
        "text/xml; charset=utf-8"
    } else {
        "application/soap+xml; charset=utf-8; action=\"urn:tp:echo#echo\""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_echo_in_their_own_version() {
        for v in [11u8, 12] {
            let env = envelope_payload(v, 400);
            assert_eq!(env.len(), 400);
            let text = std::str::from_utf8(&env).expect("utf8");
            let start = text.find("<p>").expect("p") + 3;
            let end = text.find("</p>").expect("/p");
            assert_eq!(echo_text(text, v).expect("echo"), &text[start..end]);
            assert!(echo_text(text, if v == 11 { 12 } else { 11 }).is_err());
        }
        assert!(envelope_payload(12, 10).len() > 100);
        let dtd = "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>";
        assert!(echo_text(dtd, 11).is_err());
        let env = |body: &str| {
            format!("<?xml version=\"1.0\"?><S:Envelope xmlns:S=\"{SOAP12_NS}\"><S:Header/><S:Body>{body}</S:Body></S:Envelope>")
        };
        let prefixed = env(
            "<t:echo xmlns:t=\"urn:tp:echo\"><!-- c --><t:p>a &amp; <![CDATA[<b>]]></t:p></t:echo>",
        );
        assert_eq!(echo_text(&prefixed, 12), Ok("a &amp; <![CDATA[<b>]]>"));
        assert_eq!(
            echo_text(&env("<echo xmlns=\"urn:tp:echo\"><p/></echo>"), 12),
            Ok("")
        );
        assert!(echo_text(&env("<other xmlns=\"urn:tp:echo\"><p>x</p></other>"), 12).is_err());
        assert!(echo_text(&env("<echo xmlns=\"urn:tp:echo\"><q>x</q></echo>"), 12).is_err());
        assert!(echo_text(&env("<echo xmlns=\"urn:x\"><p>x</p></echo>"), 12).is_err());
        assert!(echo_text(&env("<echo xmlns=\"urn:tp:echo\"><p>x</q></echo>"), 12).is_err());
    }

    #[test]
    fn versions_come_from_the_media_type() {
        assert_eq!(
            version_of(Some(&HeaderValue::from_static("text/xml; charset=utf-8"))),
            Some(11)
        );
        assert_eq!(
            version_of(Some(&HeaderValue::from_static(
                "application/soap+xml;action=x"
            ))),
            Some(12)
        );
        assert_eq!(
            version_of(Some(&HeaderValue::from_static("application/json"))),
            None
        );
        assert_eq!(version_of(None), None);
    }
}
