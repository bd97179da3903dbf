//! What the request path records ([`SpanRecord`]) and how a batch of records becomes an
//! OTLP `ExportTraceServiceRequest`: per request a SERVER span (the whole request, child
//! of the caller's span when it sent `traceparent`) and, when the upstream was called, a
//! CLIENT span (from sending to the upstream's response head) under it. Attribute names
//! follow the OpenTelemetry HTTP semantic conventions.

use std::sync::Arc;

use http::Method;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span, Status,
};
use turnpike_policy::{ApiLabel, Completion, RequestCtx, TraceContext};

/// One traced request, as `on_complete` saw it: no allocation beyond reference counts.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub trace: TraceContext,
    pub method: Method,
    pub status: u16,
    pub upstream_status: Option<u16>,
    pub api: Option<Arc<ApiLabel>>,
    pub route: Option<Arc<str>>,
    pub request_id: http::HeaderValue,
    /// The error table's code when the gateway answered with an error.
    pub error: Option<&'static str>,
    pub aborted: bool,
    /// Nanoseconds from the request's arrival: upstream call sent, response head, end.
    pub sent_ns: u64,
    pub upstream_ns: Option<u64>,
    pub total_ns: u64,
}

impl SpanRecord {
    /// The record of a traced request; None when it is not traced or not sampled.
    pub fn new(ctx: &RequestCtx, done: &Completion) -> Option<SpanRecord> {
        let trace = ctx.trace.as_deref().filter(|t| t.sampled)?;
        let t = &done.timings;
        let nanos = |d: std::time::Duration| d.as_nanos() as u64;
        Some(SpanRecord {
            trace: trace.clone(),
            method: done.method.clone(),
            status: done.status.as_u16(),
            upstream_status: done.upstream_status.map(|s| s.as_u16()),
            api: done.api.cloned(),
            route: ctx.resource.clone(),
            request_id: ctx.request_id.clone(),
            error: done.error.map(|k| k.spec().code),
            aborted: done.aborted,
            sent_ns: nanos(t.gateway_before),
            upstream_ns: t.upstream.map(nanos),
            total_ns: nanos(t.total()),
        })
    }
}

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(v) }),
        ..Default::default()
    }
}

fn text(key: &str, v: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.to_owned()))
}

fn int(key: &str, v: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(v))
}

fn spans_of(r: &SpanRecord, out: &mut Vec<Span>) {
    let start = r.trace.start_unix_nanos;
    let mut attrs = vec![
        text("http.request.method", r.method.as_str()),
        int("http.response.status_code", i64::from(r.status)),
        text(
            "turnpike.request_id",
            &String::from_utf8_lossy(r.request_id.as_bytes()),
        ),
    ];
    if let Some(route) = &r.route {
        attrs.push(text("http.route", route));
    }
    if let Some(api) = &r.api {
        attrs.push(text("turnpike.api.name", &api.name));
        attrs.push(text("turnpike.api.context", &api.context));
        attrs.push(text("turnpike.api.version", &api.version));
    }
    if let Some(code) = r.error {
        attrs.push(text("error.type", code));
    }
    if r.aborted {
        attrs.push(kv(
            "turnpike.client_aborted",
            any_value::Value::BoolValue(true),
        ));
    }
    let failed = r.status >= 500;
    let name = match &r.route {
        Some(route) => format!("{} {route}", r.method),
        None => r.method.to_string(),
    };
    out.push(Span {
        trace_id: r.trace.trace_id.to_vec(),
        span_id: r.trace.span_id.to_vec(),
        parent_span_id: r
            .trace
            .parent_span_id
            .map(|p| p.to_vec())
            .unwrap_or_default(),
        flags: u32::from(r.trace.sampled),
        name,
        kind: span::SpanKind::Server as i32,
        start_time_unix_nano: start,
        end_time_unix_nano: start + r.total_ns,
        attributes: attrs,
        status: Some(status_of(failed)),
        ..Default::default()
    });
    if let Some(up) = r.upstream_ns {
        let mut attrs = vec![text("http.request.method", r.method.as_str())];
        if let Some(s) = r.upstream_status {
            attrs.push(int("http.response.status_code", i64::from(s)));
        }
        out.push(Span {
            trace_id: r.trace.trace_id.to_vec(),
            span_id: r.trace.upstream_span_id.to_vec(),
            parent_span_id: r.trace.span_id.to_vec(),
            flags: u32::from(r.trace.sampled),
            name: "upstream".to_owned(),
            kind: span::SpanKind::Client as i32,
            start_time_unix_nano: start + r.sent_ns,
            end_time_unix_nano: start + r.sent_ns + up,
            attributes: attrs,
            status: Some(status_of(r.upstream_status.is_some_and(|s| s >= 500))),
            ..Default::default()
        });
    }
}

fn status_of(failed: bool) -> Status {
    Status {
        code: if failed {
            status::StatusCode::Error
        } else {
            status::StatusCode::Unset
        } as i32,
        ..Default::default()
    }
}

/// The export request of a batch, under a resource naming the service and gateway.
pub fn export_request(
    records: &[SpanRecord],
    service_name: &str,
    gateway_id: &str,
) -> ExportTraceServiceRequest {
    let mut spans = Vec::with_capacity(records.len() * 2);
    for r in records {
        spans_of(r, &mut spans);
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", service_name),
                    text("service.instance.id", gateway_id),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "turnpike-gateway".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..Default::default()
                }),
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}
