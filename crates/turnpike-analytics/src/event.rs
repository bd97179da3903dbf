//! The analytics event: what one request did, as the JSON-lines sink writes it and the
//! control plane ingests it. [`Record`] is what the request path builds (reference
//! counts and copies only, no string formatting); the background task turns it into an
//! [`Event`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{HeaderValue, Method};
use serde::{Deserialize, Serialize};
use turnpike_policy::ai::TokenUsage;
use turnpike_policy::{ApiLabel, Blame, Completion, ErrorKind, RequestCtx};
use turnpike_policy::{Identity, KeyType};

/// How a request ended, from the caller's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The upstream (or a policy's own answer) was sent; whatever its status.
    Served,
    /// Answered from the response cache (a hit, or a stale answer; turnpike-cache).
    CacheHit,
    /// A throttling policy refused it (429); `reason` names the policy.
    Throttled,
    /// No, a bad or an insufficient credential or subscription (401/403); `reason` is
    /// the error table's code.
    AuthFailed,
    /// The API, the subscription or the origin is blocked (403).
    Blocked,
    /// No API or resource matched (404, 405).
    NotFound,
    /// Any other refusal of the client's request (400, 413, 408...).
    Rejected,
    /// The back end failed, timed out or answered garbage (502, 503, 504).
    BackendError,
    /// The gateway failed (500) or was shutting down (503).
    GatewayError,
    /// The client went away before the response ended (499).
    ClientAborted,
}

impl Outcome {
    pub const ALL: [Outcome; 10] = [
        Outcome::Served,
        Outcome::CacheHit,
        Outcome::Throttled,
        Outcome::AuthFailed,
        Outcome::Blocked,
        Outcome::NotFound,
        Outcome::Rejected,
        Outcome::BackendError,
        Outcome::GatewayError,
        Outcome::ClientAborted,
    ];

    /// The name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Served => "served",
            Outcome::CacheHit => "cache_hit",
            Outcome::Throttled => "throttled",
            Outcome::AuthFailed => "auth_failed",
            Outcome::Blocked => "blocked",
            Outcome::NotFound => "not_found",
            Outcome::Rejected => "rejected",
            Outcome::BackendError => "backend_error",
            Outcome::GatewayError => "gateway_error",
            Outcome::ClientAborted => "client_aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The outcome of a request that ended with `error` (or none), `aborted` or not,
    /// answered by the response cache (`cache_hit`: the policy put
    /// [`turnpike_policy::FromCache`] in its context) or not.
    pub fn of(error: Option<ErrorKind>, aborted: bool, cache_hit: bool) -> Outcome {
        if cache_hit && !aborted {
            return Outcome::CacheHit;
        }
        Outcome::classify(error, aborted)
    }

    /// The outcome of a request that ended with `error` (or none), `aborted` or not.
    pub fn classify(error: Option<ErrorKind>, aborted: bool) -> Outcome {
        use ErrorKind::*;
        if aborted {
            return Outcome::ClientAborted;
        }
        let Some(kind) = error else {
            return Outcome::Served;
        };
        match kind {
            Throttled => Outcome::Throttled,
            MissingCredentials | MalformedCredentials | InvalidToken | ExpiredToken
            | RevokedToken | InvalidApiKey | InvalidCredentials | NotSubscribed
            | InsufficientScope => Outcome::AuthFailed,
            ApiBlocked | ApiNotPublished | SubscriptionBlocked | SubscriptionOnHold
            | CorsRejected => Outcome::Blocked,
            NotFound | MethodNotAllowed => Outcome::NotFound,
            other => match other.spec().blame {
                Blame::Client => Outcome::Rejected,
                Blame::Upstream => Outcome::BackendError,
                Blame::Internal => Outcome::GatewayError,
            },
        }
    }
}

/// The latency split in microseconds: `before + upstream + after == total`, always.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// Request head to the upstream request being sent (routing, policies, auth, a
    /// buffered body); the whole request when no upstream was called.
    pub before_us: u64,
    /// Sending to the upstream's response head (the back end's latency); 0 when none.
    pub upstream_us: u64,
    /// The upstream's response head to the last byte sent (response policies,
    /// streaming).
    pub after_us: u64,
    pub total_us: u64,
}

impl Latency {
    /// The split of `t` in microseconds.
    pub(crate) fn of(t: &turnpike_policy::Timings) -> Latency {
        let before_us = micros(t.gateway_before);
        let upstream_us = t.upstream.map_or(0, micros);
        let after_us = micros(t.gateway_after);
        Latency {
            before_us,
            upstream_us,
            after_us,
            total_us: before_us + upstream_us + after_us,
        }
    }

    /// The gateway's own share: before + after.
    pub fn gateway_us(&self) -> u64 {
        self.before_us + self.after_us
    }
}

/// An address as text; IPv4 without `fmt` (its `Display` cost ~1,300 instructions per
/// event).
fn ip_text(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let mut s = String::with_capacity(15);
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    s.push('.');
                }
                if octet >= 100 {
                    s.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    s.push(char::from(b'0' + octet / 10 % 10));
                }
                s.push(char::from(b'0' + octet % 10));
            }
            s
        }
        IpAddr::V6(_) => ip.to_string(),
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One request, as written and shipped. Field names are Turnpike's; [`crate::wso2`]
/// maps them to WSO2's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When the request head arrived, Unix milliseconds.
    pub time_ms: i64,
    /// The same instant, RFC 3339 UTC (for log shippers).
    pub time: String,
    pub request_id: String,
    /// The gateway's id (`--gateway-id`).
    pub gateway: String,
    pub outcome: Outcome,
    /// Why, for the outcomes that have one: the error table's code, or for `throttled`
    /// the throttling policy's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The error table's code when the gateway answered with an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The matched resource's path template (`/pets/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_name: Option<String>,
    /// The application's owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscriber: Option<String>,
    /// `PRODUCTION` or `SANDBOX`, for authenticated calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
    /// The status sent to the client (499 when it went away).
    pub status: u16,
    /// The status the back end answered with, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub latency: Latency,
    pub snapshot_version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<String>,
    /// The W3C trace id, when tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// What an AI (LLM) API's call used; absent for every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiUsage>,
}

/// What an AI (LLM) API's call used, from the [`TokenUsage`] its policy left in the
/// request's context, and how fast the answer came.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AiUsage {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens the provider served from its cache (part of `prompt_tokens`).
    pub cached_tokens: u64,
    pub total_tokens: u64,
    /// Counted by the gateway's tokenizer because the provider reported none.
    #[serde(default)]
    pub estimated: bool,
    /// Request head to the first response body byte: the time to first token, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_us: Option<u64>,
    /// Completion tokens per second from the first response byte to the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_second: Option<f64>,
}

impl AiUsage {
    fn of(r: &AiRecord, total_us: u64) -> AiUsage {
        let u = &r.usage;
        let text = |v: &Option<Arc<str>>| v.as_deref().unwrap_or_default().to_string();
        let streaming_us = r.ttft_us.map(|t| total_us.saturating_sub(t));
        AiUsage {
            provider: text(&u.provider),
            model: text(&u.model),
            prompt_tokens: u.prompt,
            completion_tokens: u.completion,
            cached_tokens: u.cached,
            total_tokens: u.total,
            estimated: u.estimated,
            ttft_us: r.ttft_us,
            tokens_per_second: streaming_us
                .filter(|&us| us > 0 && u.completion > 0)
                .map(|us| u.completion as f64 * 1e6 / us as f64),
        }
    }
}

/// An AI call's usage as the request path hands it over: reference counts only.
pub(crate) struct AiRecord {
    pub(crate) usage: TokenUsage,
    pub(crate) ttft_us: Option<u64>,
}

impl AiRecord {
    /// The call's usage, if the request was an AI API's call.
    pub(crate) fn of(ctx: &RequestCtx, done: &Completion) -> Option<AiRecord> {
        let usage = ctx.ext.get::<TokenUsage>()?;
        Some(AiRecord {
            usage: usage.clone(),
            ttft_us: done.timings.first_byte.map(micros),
        })
    }
}

impl Event {
    /// `2xx` .. `5xx` as 2 .. 5 (1 for 1xx, 4 for 499).
    pub fn status_class(&self) -> u8 {
        status_class(self.status)
    }
}

/// `2xx` .. `5xx` as 2 .. 5 (1 for 1xx, 4 for 499).
pub fn status_class(status: u16) -> u8 {
    (status / 100).clamp(1, 5) as u8
}

/// Why, for the outcomes that have one: the throttling policy's name (else the error
/// code) for `throttled`; nothing for served, cache hits and aborts; the error table's
/// code for the rest.
pub(crate) fn reason(
    outcome: Outcome,
    error: Option<ErrorKind>,
    throttled_by: Option<&str>,
) -> Option<String> {
    let code = || error.map(|k| k.spec().code.to_string());
    match outcome {
        Outcome::Throttled => throttled_by.map(str::to_string).or_else(code),
        Outcome::Served | Outcome::CacheHit | Outcome::ClientAborted => None,
        _ => code(),
    }
}

/// Maps the monotonic instants records carry to Unix time: one wall-clock read per
/// drain (re-anchored each time, so clock adjustments are followed), none per request.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    at: Instant,
    unix_ms: i64,
    /// The current minute: its start in Unix seconds and as instants `[from, to)`, so
    /// most records find their minute by two comparisons.
    minute: i64,
    minute_from: Instant,
    minute_to: Instant,
}

impl WallClock {
    pub fn now() -> WallClock {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let at = Instant::now();
        let minute = crate::time::align(unix_ms.div_euclid(1000), 60);
        let into = Duration::from_millis((unix_ms - minute * 1000).max(0) as u64);
        let minute_from = at.checked_sub(into).unwrap_or(at);
        WallClock {
            at,
            unix_ms,
            minute,
            minute_from,
            minute_to: minute_from + Duration::from_secs(60),
        }
    }

    /// The start of the minute `t` falls in, Unix seconds.
    pub fn minute_of(&self, t: Instant) -> i64 {
        if t >= self.minute_from && t < self.minute_to {
            return self.minute;
        }
        crate::time::align(self.unix_ms(t).div_euclid(1000), 60)
    }

    /// `t` in Unix milliseconds.
    pub fn unix_ms(&self, t: Instant) -> i64 {
        match t.checked_duration_since(self.at) {
            Some(after) => self.unix_ms + after.as_millis() as i64,
            None => self.unix_ms - self.at.duration_since(t).as_millis() as i64,
        }
    }
}

/// What the request path hands the queue: copies and reference counts only.
pub struct Record {
    /// When the request head arrived (the gateway's clock read; no wall-clock read on
    /// the request path: [`WallClock`] maps it).
    pub(crate) start: Instant,
    pub(crate) request_id: HeaderValue,
    pub(crate) client: IpAddr,
    pub(crate) api: Option<Arc<ApiLabel>>,
    pub(crate) resource: Option<Arc<str>>,
    pub(crate) method: Method,
    pub(crate) identity: Option<Arc<Identity>>,
    pub(crate) throttled_by: Option<Arc<str>>,
    pub(crate) status: u16,
    pub(crate) upstream_status: Option<u16>,
    pub(crate) error: Option<ErrorKind>,
    pub(crate) aborted: bool,
    /// Answered by the response cache.
    pub(crate) cache_hit: bool,
    pub(crate) latency: Latency,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) snapshot_version: u64,
    /// The W3C trace id when the request is traced (no allocation: 16 bytes).
    pub(crate) trace_id: Option<[u8; 16]>,
    /// An AI API call's usage (boxed: most requests have none).
    pub(crate) ai: Option<Box<AiRecord>>,
}

impl Record {
    /// Built in `on_complete`: no allocation (but for an AI API call's usage).
    pub fn new(ctx: &RequestCtx, done: &Completion) -> Record {
        Record {
            start: done.started,
            request_id: ctx.request_id.clone(),
            client: ctx.client.ip(),
            api: done.api.cloned(),
            resource: ctx.resource.clone(),
            method: done.method.clone(),
            identity: ctx.identity().cloned(),
            throttled_by: ctx.throttled_by.clone(),
            status: done.status.as_u16(),
            upstream_status: done.upstream_status.map(|s| s.as_u16()),
            error: done.error,
            aborted: done.aborted,
            cache_hit: ctx.ext.get::<turnpike_policy::FromCache>().is_some(),
            latency: Latency::of(&done.timings),
            bytes_in: done.bytes_in,
            bytes_out: done.bytes_out,
            snapshot_version: ctx.snapshot_version,
            trace_id: ctx.trace.as_ref().map(|t| t.trace_id),
            ai: AiRecord::of(ctx, done).map(Box::new),
        }
    }

    /// When the request started (its head arrived), Unix milliseconds.
    pub(crate) fn start_ms(&self, clock: &WallClock) -> i64 {
        clock.unix_ms(self.start)
    }

    /// What it adds to the rollups.
    pub(crate) fn facts(&self) -> crate::aggregate::Facts<'_> {
        crate::aggregate::Facts {
            start: self.start,
            api: self.api.as_ref(),
            resource: self.resource.as_ref(),
            throttled_by: self.throttled_by.as_ref(),
            principal: self.identity.as_deref().map(|i| &*i.principal),
            method: &self.method,
            status: self.status,
            error: self.error,
            aborted: self.aborted,
            latency: self.latency,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            upstream_answered: self.upstream_status.is_some(),
            cache_hit: self.cache_hit,
            ai: self.ai.as_deref().map(|a| (&a.usage, a.ttft_us)),
        }
    }

    pub(crate) fn outcome(&self) -> Outcome {
        Outcome::of(self.error, self.aborted, self.cache_hit)
    }

    /// The event's `reason` (see [`Event::reason`]).
    pub(crate) fn reason(&self, outcome: Outcome) -> Option<String> {
        reason(outcome, self.error, self.throttled_by.as_deref())
    }

    /// The event, formatted off the request path.
    pub fn into_event(self, gateway: &str, clock: &WallClock) -> Event {
        let time_ms = self.start_ms(clock);
        let outcome = self.outcome();
        let error_code = self.error.map(|k| k.spec().code.to_string());
        let reason = self.reason(outcome);
        let principal = self.identity.as_deref().map(|i| &*i.principal);
        Event {
            time_ms,
            time: crate::time::rfc3339_ms(time_ms),
            request_id: String::from_utf8_lossy(self.request_id.as_bytes()).into_owned(),
            gateway: gateway.to_string(),
            outcome,
            reason,
            error_code,
            api_name: self.api.as_ref().map(|a| a.name.to_string()),
            api_context: self.api.as_ref().map(|a| a.context.to_string()),
            api_version: self.api.as_ref().map(|a| a.version.to_string()),
            resource: self.resource.as_deref().map(str::to_string),
            method: self.method.as_str().to_string(),
            application_id: principal.and_then(|p| p.application_id.clone()),
            application_name: principal.and_then(|p| p.application_name.clone()),
            subscriber: principal.and_then(|p| p.subscriber.clone()),
            key_type: principal.map(|p| {
                match p.key_type {
                    KeyType::Production => "PRODUCTION",
                    KeyType::Sandbox => "SANDBOX",
                }
                .to_string()
            }),
            status: self.status,
            upstream_status: self.upstream_status,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            latency: self.latency,
            snapshot_version: self.snapshot_version,
            client_ip: Some(ip_text(self.client)),
            trace_id: self.trace_id.map(|id| {
                id.iter().fold(String::with_capacity(32), |mut s, b| {
                    use std::fmt::Write as _;
                    let _ = write!(s, "{b:02x}");
                    s
                })
            }),
            ai: self
                .ai
                .as_deref()
                .map(|a| AiUsage::of(a, self.latency.total_us)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.255.9",
            "192.168.100.99",
            "::1",
            "fe80::1",
        ] {
            let ip: IpAddr = ip.parse().expect("an address");
            assert_eq!(ip_text(ip), ip.to_string());
        }
    }

    #[test]
    fn the_wall_clock_maps_instants_and_minutes() {
        let c = WallClock::now();
        for offset_ms in [0i64, 1, 999, 59_999, 60_000, 61_234, 3_600_000] {
            for t in [
                c.at.checked_sub(Duration::from_millis(offset_ms as u64)),
                c.at.checked_add(Duration::from_millis(offset_ms as u64)),
            ]
            .into_iter()
            .flatten()
            {
                let ms = c.unix_ms(t);
                assert!((ms - c.unix_ms).abs() == offset_ms, "{offset_ms}");
                assert_eq!(
                    c.minute_of(t),
                    crate::time::align(ms.div_euclid(1000), 60),
                    "{offset_ms}"
                );
            }
        }
    }

    #[test]
    fn outcomes_follow_the_error_table() {
        use ErrorKind::*;
        let cases = [
            (None, false, Outcome::Served),
            (Some(Throttled), false, Outcome::Throttled),
            (Some(MissingCredentials), false, Outcome::AuthFailed),
            (Some(InsufficientScope), false, Outcome::AuthFailed),
            (Some(ApiBlocked), false, Outcome::Blocked),
            (Some(NotFound), false, Outcome::NotFound),
            (Some(BodyTooLarge), false, Outcome::Rejected),
            (Some(UpstreamConnectFailed), false, Outcome::BackendError),
            (Some(UpstreamResponseTimeout), false, Outcome::BackendError),
            (Some(Internal), false, Outcome::GatewayError),
            (Some(UpstreamReset), true, Outcome::ClientAborted),
        ];
        for (error, aborted, want) in cases {
            assert_eq!(Outcome::classify(error, aborted), want, "{error:?}");
        }
        for o in Outcome::ALL {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
    }
}
