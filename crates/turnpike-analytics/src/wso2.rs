//! The event under WSO2 API Manager's analytics field names (its 4.x publisher's
//! response and fault events), for dashboards built on them: `--analytics-format wso2`.
//! The name table is in docs/analytics.md.

use serde_json::{json, Value};

use crate::event::{Event, Outcome};

/// WSO2's `errorType` for an outcome (its fault event's categories).
fn error_type(o: Outcome) -> Option<&'static str> {
    match o {
        Outcome::Served | Outcome::CacheHit => None,
        Outcome::Throttled => Some("THROTTLED"),
        Outcome::AuthFailed | Outcome::Blocked => Some("AUTH"),
        Outcome::BackendError => Some("TARGET_CONNECTIVITY"),
        Outcome::NotFound | Outcome::Rejected | Outcome::GatewayError | Outcome::ClientAborted => {
            Some("OTHER")
        }
    }
}

/// The event as a WSO2 response event (or, with `errorType`, a fault event).
pub fn event(e: &Event) -> Value {
    let ms = |us: u64| us / 1000;
    let mut v = json!({
        "requestTimestamp": e.time_ms,
        "correlationId": e.request_id,
        "keyType": e.key_type,
        "apiId": e.api_context.as_ref().zip(e.api_version.as_ref()).map(|(c, v)| format!("{c}/{v}")),
        "apiName": e.api_name,
        "apiVersion": e.api_version,
        "apiContext": e.api_context,
        "apiMethod": e.method,
        "apiResourceTemplate": e.resource,
        "applicationId": e.application_id,
        "applicationName": e.application_name,
        "applicationOwner": e.subscriber,
        "gatewayType": "TURNPIKE",
        "regionId": e.gateway,
        "deploymentId": e.snapshot_version.to_string(),
        "userIp": e.client_ip,
        "proxyResponseCode": e.status,
        "targetResponseCode": e.upstream_status,
        "responseCacheHit": e.outcome == Outcome::CacheHit,
        "responseLatency": ms(e.latency.total_us),
        "backendLatency": ms(e.latency.upstream_us),
        "requestMediationLatency": ms(e.latency.before_us),
        "responseMediationLatency": ms(e.latency.after_us),
        "requestSize": e.bytes_in,
        "responseSize": e.bytes_out,
        "eventType": if error_type(e.outcome).is_some() { "fault" } else { "response" },
        "traceId": e.trace_id,
    });
    if let (Some(kind), Value::Object(m)) = (error_type(e.outcome), &mut v) {
        m.insert("errorType".into(), kind.into());
        m.insert("errorCode".into(), e.status.into());
        m.insert(
            "errorMessage".into(),
            e.reason.clone().or_else(|| e.error_code.clone()).into(),
        );
    }
    v
}
