//! OpenTelemetry traces for the gateway. [`Tracer`] is an observer
//! (`GatewayBuilder::observer`, with `GatewayBuilder::trace(true)` so requests carry a
//! W3C trace context): for every sampled request its `on_complete` pushes one fixed-size
//! [`SpanRecord`] into a lock-free ring allocated once (full: the oldest is dropped and
//! counted; a push never waits). A background task wakes every flush interval, turns
//! records into the gateway's two spans per request (the server span, and the client
//! span of the upstream call whose id the upstream received in `traceparent`) and POSTs
//! them to an OTLP/HTTP collector (`{endpoint}/v1/traces`, protobuf, the official
//! `opentelemetry-proto` messages) over an async hyper client. A slow or dead collector
//! delays only that task.
//!
//! Why not the OpenTelemetry SDK's tracer: its spans are built and ended on the request
//! path (attributes allocated per request, a span processor call per span); here the
//! request path copies ~150 bytes and everything else happens off it.

mod encode;
mod export;

pub use encode::{export_request, SpanRecord};
pub use export::{Tracer, TracerSettings};
