//! Analytics: one [`Event`] per request, built from what the gateway tells its
//! observers (`turnpike_policy::RequestCtx` and `Completion`), and the way it leaves
//! the gateway without ever slowing a request down.
//!
//! * [`event`]: the event, its outcome (served, throttled by which policy, auth failed
//!   why, ...), and the latency split that adds up; [`wso2`] the same event under WSO2's
//!   field names.
//! * [`pipeline`]: the gateway observer ([`Analytics`]): a fixed-size lock-free ring
//!   (drop-oldest, counted), a background task draining it into a [`Sink`]: events in
//!   batches, or per-minute rollups summed in the gateway by [`aggregate`].
//! * [`sink`]: JSON lines to a file (DB-less; [`json_line`] writes each event; or one
//!   rollup row a line), [`ship`]: rollups POSTed to the control plane's ingest endpoint
//!   with the gateway token; [`spool`] keeps what it could not ship, bounded, until the
//!   control plane answers again.
//! * [`hist`] and [`rollup`]: per-minute rollups keyed by API, resource, application,
//!   status class, outcome, gateway and (AI calls) provider and model, with mergeable
//!   latency histograms and token sums, which the store keeps and the control plane's
//!   analytics API reads; [`prices`] what AI calls' tokens cost.
//!
//! Nothing here runs unless a gateway is started with analytics on: without an observer
//! the gateway does not even build the completion.

pub mod aggregate;
pub mod audit;
pub mod event;
pub mod hist;
pub mod json_line;
pub mod pipeline;
pub mod prices;
pub mod rollup;
pub mod ship;
pub mod sink;
pub mod spool;
pub mod time;
pub mod wso2;

pub use audit::AuditRecord;
pub use event::{AiUsage, Event, Latency, Outcome};
pub use hist::Hist;
pub use pipeline::{Analytics, PipelineSettings, Stats};
pub use rollup::{Rollup, RollupKey};
pub use sink::{EventFormat, FileFormat, JsonLinesSink, Sink, SinkError, Takes};
pub use spool::{SpoolSettings, SpoolStats};
