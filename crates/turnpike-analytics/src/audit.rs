//! The audit trail of MCP tool calls: a request whose context carries a
//! [`ToolCallAudit`] (an audited MCP server's `tools/call`, docs/mcp.md) becomes an
//! [`AuditRecord`] beside its analytics. On the request path it is a [`Pending`] entry
//! (reference counts and copies) pushed into its own bounded drop-oldest ring, created
//! on the first audited call (a gateway without one allocates nothing); the background
//! task formats the records and hands them to the sink: shipped to the control plane
//! with the rollups (`{"audits": [...]}`), or one `{"mcp_audit": {...}}` line of a file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crossbeam_queue::ArrayQueue;
use http::HeaderValue;
use serde::{Deserialize, Serialize};
use turnpike_policy::mcp::{ToolCallAudit, ToolOutcome};
use turnpike_policy::{ApiLabel, Completion, ErrorKind, Identity, RequestCtx};

use crate::event::{Latency, WallClock};

/// One tool call, as shipped, stored and served (`GET /api/am/admin/v1/mcp-audit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the request head arrived, Unix milliseconds.
    pub time_ms: i64,
    pub request_id: String,
    pub gateway: String,
    pub api_name: String,
    pub api_context: String,
    pub api_version: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_name: Option<String>,
    /// Who called: the token's `sub` when kept, else the application's owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The arguments as JSON text, redacted, cut at the section's cap.
    pub arguments: String,
    #[serde(default)]
    pub truncated: bool,
    /// `ok`, `tool_error` or `refused`.
    pub outcome: String,
    /// Why, for a tool error or a refusal: the error table's code or the JSON-RPC
    /// error's number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The HTTP status the agent got.
    pub status: u16,
    pub latency_us: u64,
}

/// The outcomes a record may name.
pub const OUTCOMES: [&str; 3] = ["ok", "tool_error", "refused"];

/// An audited call as the request path hands it over.
pub(crate) struct Pending {
    start: Instant,
    request_id: HeaderValue,
    api: Option<Arc<ApiLabel>>,
    identity: Option<Arc<Identity>>,
    audit: ToolCallAudit,
    error: Option<ErrorKind>,
    aborted: bool,
    status: u16,
    latency_us: u64,
}

impl Pending {
    fn of(ctx: &RequestCtx, done: &Completion, audit: &ToolCallAudit) -> Pending {
        Pending {
            start: done.started,
            request_id: ctx.request_id.clone(),
            api: done.api.cloned(),
            identity: ctx.identity().cloned(),
            audit: audit.clone(),
            error: done.error,
            aborted: done.aborted,
            status: done.status.as_u16(),
            latency_us: Latency::of(&done.timings).total_us,
        }
    }

    /// The record, formatted off the request path.
    pub(crate) fn into_record(self, gateway: &str, clock: &WallClock) -> AuditRecord {
        let (outcome, code) = self.outcome();
        let text = |s: &str| s.to_string();
        let principal = self.identity.as_deref().map(|i| &*i.principal);
        let subject = principal.and_then(|p| {
            p.claims
                .get("sub")
                .map(text)
                .or_else(|| p.subscriber.clone())
        });
        AuditRecord {
            time_ms: clock.unix_ms(self.start),
            request_id: String::from_utf8_lossy(self.request_id.as_bytes()).into_owned(),
            gateway: gateway.to_string(),
            api_name: self
                .api
                .as_ref()
                .map_or_else(String::new, |a| text(&a.name)),
            api_context: self
                .api
                .as_ref()
                .map_or_else(String::new, |a| text(&a.context)),
            api_version: self
                .api
                .as_ref()
                .map_or_else(String::new, |a| text(&a.version)),
            tool: text(&self.audit.tool),
            application_id: principal.and_then(|p| p.application_id.clone()),
            application_name: principal.and_then(|p| p.application_name.clone()),
            subject,
            session_id: self.audit.session.as_deref().map(text),
            arguments: text(&self.audit.arguments),
            truncated: self.audit.truncated,
            outcome: outcome.to_string(),
            code,
            status: self.status,
            latency_us: self.latency_us,
        }
    }

    /// What the policy settled, else what the completion tells: the gateway's error
    /// (a refusal before the tool ran), a client gone, or a result.
    fn outcome(&self) -> (&'static str, Option<String>) {
        let error_code = self.error.map(|k| k.spec().code.to_string());
        match &self.audit.outcome {
            ToolOutcome::Ok => ("ok", None),
            ToolOutcome::ToolError { code } => (
                "tool_error",
                code.as_deref().map(str::to_string).or(error_code),
            ),
            ToolOutcome::Refused { code } => ("refused", Some(code.to_string())),
            ToolOutcome::Pending if self.aborted => ("tool_error", Some("client_aborted".into())),
            ToolOutcome::Pending if error_code.is_some() => ("refused", error_code),
            ToolOutcome::Pending if self.status >= 400 => {
                ("refused", Some(self.status.to_string()))
            }
            ToolOutcome::Pending => ("ok", None),
        }
    }
}

/// The audit ring and its counters (one per pipeline).
pub(crate) struct AuditQueue {
    capacity: usize,
    ring: OnceLock<ArrayQueue<Pending>>,
    pub(crate) dropped: AtomicU64,
    pub(crate) written: AtomicU64,
    pub(crate) failed: AtomicU64,
}

impl AuditQueue {
    pub(crate) fn new(capacity: usize) -> AuditQueue {
        AuditQueue {
            capacity: capacity.max(1),
            ring: OnceLock::new(),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Queues the request's audit record, if it carries one: never waits (the oldest is
    /// dropped and counted when the ring is full).
    #[inline]
    pub(crate) fn observe(&self, ctx: &RequestCtx, done: &Completion) {
        if let Some(a) = ctx.ext.get::<ToolCallAudit>() {
            self.push(Pending::of(ctx, done, a));
        }
    }

    #[cold]
    fn push(&self, p: Pending) {
        let ring = self.ring.get_or_init(|| ArrayQueue::new(self.capacity));
        if ring.force_push(p).is_some() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Up to `max` queued records, formatted.
    pub(crate) fn take(&self, max: usize, gateway: &str, clock: &WallClock) -> Vec<AuditRecord> {
        let Some(ring) = self.ring.get() else {
            return Vec::new();
        };
        std::iter::from_fn(|| ring.pop())
            .take(max)
            .map(|p| p.into_record(gateway, clock))
            .collect()
    }

    /// The counters in Prometheus text format.
    pub(crate) fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP turnpike_mcp_audit_records_total MCP tool-call audit records by what became of them (dropped: pushed out of the full queue, oldest first)\n# TYPE turnpike_mcp_audit_records_total counter"
        );
        for (result, n) in [
            ("written", &self.written),
            ("dropped", &self.dropped),
            ("failed", &self.failed),
        ] {
            let n = n.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "turnpike_mcp_audit_records_total{{result=\"{result}\"}} {n}"
            );
        }
    }
}
